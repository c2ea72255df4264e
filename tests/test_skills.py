"""`amas init`, rules, AGENTS.md/CLAUDE.md, skills and compaction, checked on what the model receives."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import amas, git_init, terminal
from fake_llm import text, tool

from amas_code import skills
from amas_code.agent import PROMPTS, Agent

PYTHON = {
    "app/models.py": """
import dataclasses

@dataclasses.dataclass
class User:
    name: str

    def greet(self):
        def inner():
            return 1
        return inner()

    @property
    def upper(self):
        return self.name.upper()

async def fetch(url):
    class Local:
        pass
    return Local

LIMIT = 3
""",
    "app/cli.py": "def main(argv=None):\n    return 0\n\n\nclass Command:\n    def run(self): ...\n",
}
OTHERS = {
    "web/app.js": (
        "class Foo { bar() { return 1 } }\nfunction hello(x) { return x }\nconst arrow = () => 1;\n",
        ["Foo:1", "bar:1", "hello:2", "arrow:3"],
    ),
    "web/types.ts": (
        "interface Shape { area(): number }\nexport function make(): number { return 1 }\n"
        "abstract class Base { abstract run(): void }\n",
        ["Shape:1", "area:1", "make:2", "Base:3", "run:3"],
    ),
    "cmd/main.go": (
        "package main\ntype Point struct { X int }\nfunc (p Point) Area() int { return 0 }\n"
        "func main() {}\n",
        ["Point:2", "Area:3", "main:4"],
    ),
    "src/lib.rs": (
        "struct Point { x: i32 }\ntrait Shape { fn area(&self); }\nfn main() {}\n",
        ["Point:1", "Shape:2", "main:3"],
    ),
    "src/App.java": (
        "public class App {\n  void run() {}\n  interface Plugin {}\n}\n",
        ["App:1", "run:2", "Plugin:3"],
    ),
    "native/util.c": (
        "struct point { int x; };\nstatic int add(int a, int b) { return a + b; }\n"
        "int main(void) { return add(1, 2); }\n",
        ["point:1", "add:2", "main:3"],
    ),
    "native/widget.cpp": (
        "class Widget { public: void draw() {} };\nint main() { return 0; }\n",
        ["Widget:1", "draw:1", "main:2"],
    ),
}


def read_map(root: Path) -> dict[str, list[str]]:
    lines = (root / ".amas" / "map.md").read_text().splitlines()[1:]
    return {
        path: found.split(", ") if found else []
        for path, _, found in (line.partition(": ") for line in lines)
    }


def python_symbols(source: str) -> list[str]:
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    found = [n for n in ast.walk(ast.parse(source)) if isinstance(n, kinds)]
    return [f"{n.name}:{n.lineno}" for n in sorted(found, key=lambda n: (n.lineno, n.col_offset))]


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)


def test_init_maps_every_language_like_the_reference_parsers(isolated):
    git_init(isolated)
    write_tree(isolated, {**PYTHON, **{name: src for name, (src, _) in OTHERS.items()}})
    write_tree(isolated, {"README.md": "# demo\n", ".gitignore": "secret/\n"})
    write_tree(isolated, {"secret/hidden.py": "def hidden(): ...\n"})
    write_tree(isolated, {"node_modules/lib/index.js": "function vendored() {}\n"})
    done = amas("init", cwd=isolated)
    assert done.returncode == 0, done.stderr
    summary = done.stdout
    assert re.search(r"Mapped 11 files, \d+ symbols \(.*2 python.*\) in \d+\.\d\ds", summary), (
        summary
    )
    assert "parse errors" not in summary
    found = read_map(isolated)
    assert "README.md" in found and found["README.md"] == []
    assert not any(p.startswith(("secret/", "node_modules/")) for p in found)
    for name, source in PYTHON.items():
        assert found[name] == python_symbols(source), name
    for name, (_, expected) in OTHERS.items():
        assert found[name] == expected, name


def test_a_broken_file_is_listed_not_fatal(isolated):
    write_tree(
        isolated,
        {"good.py": "def fine():\n    pass\n", "bad.py": "def ok():\n    pass\n\ndef broken(:\n"},
    )
    (isolated / "blob.c").write_bytes(b"\x00\xff\xfe int main( {")
    summary = skills.init()
    assert summary.startswith("Mapped 3 files") and "parse errors" in summary
    assert "bad.py" in summary and "good.py" not in summary.split("parse errors")[1]
    found = read_map(isolated)
    assert found["good.py"] == ["fine:1"] and "ok:1" in found["bad.py"] and "blob.c" in found


def system_of(request: dict) -> str:
    return request["body"]["messages"][0]["content"]


def test_rules_agents_md_claude_md_and_the_map_reach_the_model(llm, config, isolated):
    write_tree(isolated, PYTHON)
    write_tree(
        isolated, {".amas/rules.md": "Always use tabs.\n", "AGENTS.md": "Run `make check`.\n"}
    )
    write_tree(isolated, {"CLAUDE.md": "Never touch vendor/.\n"})
    skills.init()
    llm.queue(text("ok"), text("still ok"))
    agent = Agent(config)
    agent.turn("hello")
    (isolated / ".amas/rules.md").write_text("Always use spaces.\n")  # rebuilt every turn
    agent.turn("again")
    first, second = system_of(llm.requests[0]), system_of(llm.requests[1])
    assert first.startswith("You are Amas Code") and "# Browser Control" in first
    for expected in (
        "Always use tabs.",
        "Run `make check`.",
        "Never touch vendor/.",
        "app/cli.py: main:1",
    ):
        assert expected in first
    assert "Always use spaces." in second and "Always use tabs." not in second


def test_skills_are_included_only_when_the_conversation_matches(llm, config, isolated, capsys):
    write_tree(isolated, {".amas/skills/docker.md": "DOCKER-SKILL: use multi-stage builds.\n"})
    write_tree(isolated, {".amas/skills/css-style.md": "CSS-SKILL: use rem units.\n"})
    release = "---\ndescription: How we ship\ntriggers: [deploy, ship it]\n---\nRELEASE-SKILL: tag first.\n"
    write_tree(isolated, {".amas/skills/release/SKILL.md": release})
    write_tree(
        isolated, {".amas/skills/broken.md": "---\ntriggers: [unclosed\n---\nBROKEN-SKILL\n"}
    )
    llm.queue(text("ok"), text("ok"))
    agent = Agent(config)
    agent.turn("Please deploy the Docker image")
    system = system_of(llm.requests[0])
    assert "DOCKER-SKILL" in system and "RELEASE-SKILL: tag first." in system
    assert "CSS-SKILL" not in system and "BROKEN-SKILL" not in system and "triggers:" not in system
    agent.command("/skills")
    listed = capsys.readouterr().out
    assert re.search(r"\*\s+docker", listed) and re.search(r"\*\s+release\s+How we ship", listed)
    assert re.search(r"^\s*css-style", listed, re.M) and "broken" in listed
    agent.turn("now the CSS style for the header")
    assert "CSS-SKILL" in system_of(llm.requests[1])


def test_a_large_map_is_cut_so_the_system_prompt_stays_under_2000_tokens(llm, config, isolated):
    from amas_code.providers import load_litellm

    for i in range(400):
        write_tree(
            isolated,
            {f"pkg/module_{i:03}.py": f"def handler_{i}():\n    pass\n\nclass Model{i}: ...\n"},
        )
    write_tree(isolated, {"AGENTS.md": "AGENTS-RULE kept verbatim.\n"})
    skills.init()
    llm.queue(text("ok"))
    Agent(config).turn("hi")
    system = system_of(llm.requests[0])
    assert load_litellm().token_counter(model="openai/fake", text=system) <= 2000
    assert (
        "pkg/module_000.py: handler_0:1, Model0:4" in system and "pkg/module_399.py" not in system
    )
    assert re.search(r"\[… \d+ more files\]", system) and "AGENTS-RULE kept verbatim." in system


def test_long_conversations_compact_by_themselves_and_keep_tool_pairs(llm, config, isolated):
    Path("notes.txt").write_text("lorem ipsum " * 200)
    llm.queue(tool("read_file", {"path": "notes.txt"}), text("read it"))
    llm.queue(text("SUMMARY: the user read notes.txt"), text("answer after compaction"))
    agent = Agent({**config, "max_context_tokens": 300})
    assert agent.turn("read notes.txt") == 0
    assert agent.turn("what next?") == 0
    summarize, after = llm.requests[2]["body"]["messages"], llm.requests[3]["body"]["messages"]
    assert summarize[-1]["content"] == PROMPTS["summarize"]
    assert [m["role"] for m in after] == ["system", "user", "assistant", "user"]
    assert (
        "SUMMARY: the user read notes.txt" in after[1]["content"]
        and after[3]["content"] == "what next?"
    )
    for request in llm.requests:
        messages = request["body"]["messages"]
        called = {c["id"] for m in messages for c in m.get("tool_calls") or []}
        assert {m["tool_call_id"] for m in messages if m["role"] == "tool"} == called
    assert agent.messages[-1]["content"] == "answer after compaction"


def test_init_from_the_repl_and_tree_sitter_stays_unloaded_otherwise(llm, config, isolated, capsys):
    write_tree(isolated, PYTHON)
    with terminal("/init", "/quit"):
        Agent(config).repl()
    assert "Mapped 2 files" in capsys.readouterr().out and (isolated / ".amas/map.md").exists()
    llm.queue(tool("read_file", {"path": "app/cli.py"}), text("done"))
    cmd = [sys.executable, "-X", "importtime", "-m", "amas_code", "-m", "openai/fake"]
    cmd += ["--api-base", llm.url, "read app/cli.py"]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=isolated, env=env, timeout=120)
    assert done.returncode == 0 and "done" in done.stdout, done.stderr[-2000:]
    assert "litellm" in done.stderr and "tree_sitter" not in done.stderr
