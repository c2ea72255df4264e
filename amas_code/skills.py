"""What the model knows of the project: the map `amas init` makes, rule files, matching skills."""

import functools
import importlib
import re
import time
from collections import Counter
from pathlib import Path

import yaml

from amas_code import providers, tools

PROMPTS = yaml.safe_load(Path(__file__).with_name("prompts.yaml").read_text())
MAP_FILE, SKILLS = Path(".amas/map.md"), Path(".amas/skills")
NO_MAP, MAP_HEADER = "(no project map: `amas init` makes one)", "# Project map (file: symbol:line)"
TAGS = {"typescript": ["javascript", "typescript"], "tsx": ["javascript", "typescript"]}


@functools.cache
def grammar(language: str) -> tuple:
    """A parser and the grammar's own tags query, loaded the first time the language is met."""
    from tree_sitter import Language, Parser, Query

    modules = [importlib.import_module(f"tree_sitter_{m}") for m in TAGS.get(language, [language])]
    name = {"typescript": "language_typescript", "tsx": "language_tsx"}.get(language, "language")
    queries = [Path(m.__file__).parent / "queries" / "tags.scm" for m in modules]
    loaded = Language(getattr(modules[-1], name)())
    return Parser(loaded), Query(loaded, "\n".join(q.read_text() for q in queries))


def symbols(path: Path, language: str) -> tuple[list[str], bool]:
    """["name:line"] of what the grammar's tags call definitions, and whether the file parsed cleanly."""
    from tree_sitter import QueryCursor

    try:
        parser, query = grammar(language)
        tree, found = parser.parse(path.read_bytes()), {}
    except (OSError, ImportError, ValueError):
        return [], False
    for _, match in QueryCursor(query).matches(tree.root_node):
        if "name" in match and {k for k in match if k.startswith("definition.")} - {
            "definition.constant"
        }:
            node = match["name"][0]
            found[f"{node.text.decode(errors='replace')}:{node.start_point[0] + 1}"] = (
                node.start_byte
            )
    return sorted(found, key=found.get), not tree.root_node.has_error


def init(root: str = ".") -> str:
    """Map the project's files and their symbols into .amas/map.md; returns a one-line summary."""
    start, lines, languages, broken, total = time.perf_counter(), [], Counter(), [], 0
    for name in tools.project_files(root):
        language = tools.STATE["config"]["languages"].get(name.rpartition(".")[2].lower())
        found, clean = symbols(Path(root, name), language) if language else ([], True)
        languages.update([language] if language else [])
        broken, total = broken + ([] if clean else [name]), total + len(found)
        lines.append(f"{name}: {', '.join(found)}".rstrip(": "))
    Path(root, MAP_FILE).parent.mkdir(exist_ok=True)
    Path(root, MAP_FILE).write_text("\n".join([MAP_HEADER, *lines]) + "\n")
    counts = ", ".join(f"{n} {lang}" for lang, n in languages.most_common()) or "no source files"
    errors = f"; parse errors (symbols may be partial) in {', '.join(broken)}" if broken else ""
    took = time.perf_counter() - start
    return f"Mapped {len(lines)} files, {total} symbols ({counts}) in {took:.2f}s{errors}."


def skills() -> list[dict]:
    """.amas/skills/*.md and <name>/SKILL.md; YAML front matter may give description and triggers."""
    found = []
    for path in sorted([*SKILLS.glob("*.md"), *SKILLS.glob("*/SKILL.md")]):
        text = path.read_text(errors="replace")
        head, _, body = (
            text[4:].partition("\n---\n") if text.startswith("---\n") else ("", "", text)
        )
        try:
            meta = yaml.safe_load(head) if body else {}
        except yaml.YAMLError:
            meta, body = {}, text
        meta = meta if isinstance(meta, dict) else {}
        name = path.parent.name if path.name == "SKILL.md" else path.stem
        triggers = meta.get("triggers") or re.split(r"[-_ ]+", name)
        triggers = triggers.split(",") if isinstance(triggers, str) else triggers
        found.append({**meta, "name": name, "triggers": list(map(str, triggers)), "body": body})
    return found


def words(text: str) -> str:
    return " " + " ".join(re.findall(r"\w+", text.lower())) + " "


def active(messages: list) -> list[dict]:
    """The skills with a trigger among the words of the last few messages."""
    recent = words(" ".join(str(m.get("content") or "") for m in messages[-6:]))
    return [
        s for s in skills() if any(words(t) in recent for t in s["triggers"] if words(t).strip())
    ]


def system_prompt(messages: list, config: dict, tools_text: str = "") -> str:
    """The spec's template with the map, rule files and matching skills, under max_prompt_tokens."""
    rules = [Path(name) for name in config["rule_files"] if Path(name).is_file()]
    extra = [f"## {path}\n{path.read_text(errors='replace')}" for path in rules]
    extra += [f"## Skill: {s['name']}\n{s['body']}" for s in active(messages)]
    full = MAP_FILE.read_text(errors="replace").splitlines() if MAP_FILE.is_file() else [NO_MAP]
    shown, litellm = len(full), providers.load_litellm()
    while True:
        cut = [f"[… {len(full) - shown} more files]"] if shown < len(full) else []
        context = "\n\n".join(["\n".join(full[:shown] + cut), *extra])
        prompt = PROMPTS["system"].replace("{context}", context) + tools_text
        tokens = litellm.token_counter(model=config["model"], text=prompt)
        if tokens <= config["max_prompt_tokens"] or shown <= 1:
            return prompt
        shown = max(1, int(shown * min(0.9, config["max_prompt_tokens"] / tokens)))
