"""What the model is told of the project: its rule files and the skills the conversation needs."""

import re
from pathlib import Path

import yaml

PROMPTS = yaml.safe_load(Path(__file__).with_name("prompts.yaml").read_text())
SKILLS, RULE_FILES = Path(".amas/skills"), (".amas/rules.md", "AGENTS.md", "CLAUDE.md")
NONE = "(no rules.md, AGENTS.md or CLAUDE.md in this project)"


def skills() -> list[dict]:
    """.amas/skills/*.md and <name>/SKILL.md; YAML front matter may give description and triggers."""
    found = []
    for path in sorted(p for g in ("*.md", "*/SKILL.md") for p in SKILLS.glob(g) if p.is_file()):
        text = path.read_text(errors="replace")
        head, _, body = text[4:].partition("\n---\n") if text[:4] == "---\n" else ("", "", "")
        try:
            meta = yaml.safe_load(head) if body else {}
        except yaml.YAMLError:
            meta = {}
        meta, body = (meta, body) if isinstance(meta, dict) and body else ({}, text)
        name = path.parent.name if path.name == "SKILL.md" else path.stem
        triggers = meta.get("triggers") or re.split(r"[-_ ]+", name)
        triggers = triggers if isinstance(triggers, list) else str(triggers).split(",")
        found.append({**meta, "name": name, "triggers": list(map(str, triggers)), "body": body})
    return found


def words(text: str) -> str:
    return " " + " ".join(re.findall(r"\w+", text.lower())) + " "


def active(messages: list) -> list[dict]:
    """The skills with a trigger among the words of the last few messages."""
    recent = words(" ".join(str(m.get("content") or "") for m in messages[-6:]))
    return [s for s in skills() if any(words(t) in recent for t in s["triggers"] if t.strip())]


def system_prompt(messages: list, tools_text: str = "") -> str:
    """The spec's template, filled in every turn with the rule files and the matching skills."""
    rules = [Path(name) for name in RULE_FILES if Path(name).is_file()]
    context = [f"## {path}\n{path.read_text(errors='replace')}" for path in rules]
    context += [f"## Skill: {s['name']}\n{s['body']}" for s in active(messages)]
    return PROMPTS["system"].replace("{context}", "\n\n".join(context) or NONE) + tools_text
