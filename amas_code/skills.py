"""What the model is told of the project: its map, its rule files and the skills the conversation
needs. `amas init` writes the map with tree-sitter, one grammar wheel per language, loaded on use."""

import re
from contextlib import suppress
from pathlib import Path

from amas_code.config import packaged
from amas_code.tools import LANGUAGES, ToolError, create_own, grammar, head, inside, project_files

PROMPTS = packaged("prompts.yaml")
SKILLS, MAP = Path(".amas/skills"), Path(".amas/map.md")


def definitions(path: Path, language: str) -> dict:
    """The names a file defines, as {name: {member: {}}}; a file with parse errors, what parsed."""
    parser, cursor = grammar(language)
    # 1 MB at most: a generated 30 MB file took minutes and gigabytes; a FIFO named x.py never blocks
    tree = parser.parse(head(path, 1_000_000)[0])
    # (end, members) of the definitions around the current one, the file's own at the bottom
    enclosing = [(float("inf"), {})]
    for node in sorted(cursor.captures(tree.root_node).get("name", []), key=lambda n: n.start_byte):
        while enclosing[-1][0] <= node.parent.start_byte:
            enclosing.pop()
        members = enclosing[-1][1].setdefault(node.text.decode(errors="replace"), {})
        enclosing.append((node.parent.end_byte, members))
    return enclosing[0][1]


def outline(names: dict) -> str:
    """{A: {m: {}}, f: {}} as 'A(m), f'."""
    return ", ".join(k + (f"({outline(v)})" if v else "") for k, v in names.items())


def init() -> str:
    """Map the project's definitions into .amas/map.md; returns a one-line summary."""
    by_extension = {e: lang for lang, spec in LANGUAGES.items() for e in spec["extensions"]}
    lines = []
    for name in project_files("."):
        # no grammar for it (KeyError), a wheel missing, a bad grammar: unmapped
        with suppress(KeyError, OSError, ImportError, ValueError, ToolError):
            found = definitions(Path(name), by_extension[Path(name).suffix])
            lines += [f"{name}: {outline(found)}"] if found else []
    create_own(MAP, "\n".join(["# Project map (amas init)", *lines, ""]))
    return f"Mapped {len(lines)} files into {MAP}."


def words(text: str) -> set[str]:
    """The words of a text, lowercase; - and _ separate words (css-style, css_style)."""
    return set(re.findall(r"[^\W_]+", text.lower()))


def system_prompt(messages: list, tools_text: str = "") -> str:
    """The spec's template, filled in every turn with the map, the rule files and the skills with a
    word of their name among the words of the last few messages, each under its path (one road for
    both: inside the project, a regular file, read as UTF-8); the map is cut so that the whole
    prompt stays under 2000 tokens."""
    recent = words(" ".join(str(m.get("content") or "") for m in messages[-6:]))
    # .amas/skills/NAME.md and NAME/SKILL.md; a skill's name holds its keywords
    found = sorted(p for g in ("*.md", "*/SKILL.md") for p in SKILLS.glob(g))
    chosen = [p for p in found if words(p.parent.name if p.name == "SKILL.md" else p.stem) & recent]
    files = [p for p in [*map(Path, PROMPTS["rule_files"]), *chosen] if p.is_file() and inside(p)]
    context = "\n\n".join(f"## {path}\n{path.read_text('utf-8', 'replace')}" for path in files)
    prompt = PROMPTS["system"].replace("{context}", context or PROMPTS["no_rules"]) + tools_text
    room = PROMPTS["tokens"] * PROMPTS["chars_per_token"] - len(prompt) - 100
    project_map = MAP.read_text(errors="replace") if MAP.is_file() and inside(MAP) else ""
    if len(project_map) > room:
        project_map = project_map[: max(room, 0)].rpartition("\n")[0] + PROMPTS["map_cut"]
    return prompt.replace("{map}", project_map.strip())
