"""`amas init`: the tree-sitter project map, and the map as the model receives it."""

import ast
import random
import sysconfig
from pathlib import Path

from conftest import amas, git_init
from fake_llm import text
from test_skills import system_of, write_tree

from amas_code import skills
from amas_code.agent import Agent

SOURCES = {
    "app.py": "import os\n@dataclass\nclass Shop:\n    def buy(self): pass\n    @property\n"
    "    def total(self): pass\nasync def main(): pass\nif True:\n    def hidden(): pass\n",
    "web/ui.js": "export const render = () => 1;\nfunction mount() {}\nclass View { draw() {} }\n",
    "web/api.ts": "interface User { id: number }\ntype Id = string;\nexport class Client { get(): void {} }\n",
    "web/App.tsx": "const App = () => <div/>;\nfunction Header() { return <h1/>; }\n",
    "srv/main.go": "package main\ntype Server struct{}\nfunc (s Server) Serve() {}\nfunc main() {}\n",
    "core/lib.rs": "struct Cache;\nimpl Cache { fn get(&self) {} }\ntrait Store { fn put(&self); }\n",
    "java/Store.java": "class Store { Store() {} void save() {} }\n",
    "c/buf.c": "struct buf { int n; };\nstatic char *buf_new(int n) { return 0; }\n",
    "cpp/shape.cpp": "namespace geo { class Shape { public: double area(); }; }\n",
    "broken.py": "def ok(): pass\ndef broken(:\n",
    "README.md": "# hello\n",
    "config.toml": "x = 1\n",
}
EXPECTED = [
    "app.py: Shop(buy, total), main",
    "web/ui.js: render, mount, View(draw)",
    "web/api.ts: User, Id, Client(get)",
    "web/App.tsx: App, Header",
    "srv/main.go: Server, Serve, main",
    "core/lib.rs: Cache(get), Store(put)",
    "java/Store.java: Store(Store, save)",
    "c/buf.c: buf, buf_new",
    "cpp/shape.cpp: geo(Shape(area))",
]


def test_init_maps_every_language(isolated):
    write_tree(isolated, SOURCES)
    done = amas("init")
    assert done.returncode == 0, done.stderr
    assert "Mapped 10 files into .amas/map.md." in done.stderr and done.stdout == ""
    lines = (isolated / ".amas/map.md").read_text().splitlines()
    for expected in EXPECTED:
        assert expected in lines
    assert "broken.py: ok, broken" in lines  # what parsed is still mapped
    assert not any(line.startswith(("Broken:", "No grammar:")) for line in lines)  # counted only
    assert not any("hidden" in line for line in lines)  # inside an `if`: not top level


def test_init_respects_gitignore_and_an_unreadable_file_is_left_out(isolated, capsys):
    git_init(isolated)
    write_tree(isolated, {".gitignore": "gen/\n", "gen/big.py": "def generated(): pass\n"})
    write_tree(isolated, {"ok.py": "def fine(): pass\n"})
    (isolated / "gone.py").symlink_to(isolated / "missing.py")
    assert Agent({"model": "openai/x", "checkpoint_on_edit": False}).command("/init") == 0
    text_ = (isolated / ".amas/map.md").read_text()
    assert "ok.py: fine" in text_ and "generated" not in text_
    assert "gone.py" not in text_ and "Mapped 1 files" in capsys.readouterr().err


def test_python_top_level_definitions_match_ast_on_the_standard_library():
    library = sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py"))
    checked = 0
    for path in random.Random(7).sample(library, 300):
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        expected = list(dict.fromkeys(n.name for n in tree.body if isinstance(n, kinds)))
        found = skills.definitions(path, "python")
        assert list(found) == expected, path
        checked += 1
    assert checked > 250


def test_the_map_reaches_the_model_cut_to_keep_the_prompt_under_2000_tokens(llm, config, isolated):
    import litellm

    write_tree(
        isolated, {f"pkg/module_{i:03}.py": f"def handler_{i}(): pass\n" for i in range(400)}
    )
    write_tree(isolated, {"AGENTS.md": "Run `make check` before you finish.\n"})
    assert amas("init").returncode == 0
    llm.queue(text("ok"))
    Agent(config).turn("what does handler_0 do?")
    system = system_of(llm.requests[0])
    assert "pkg/module_000.py: handler_0" in system
    assert "pkg/module_399.py" not in system and "all of it: .amas/map.md" in system
    assert "Run `make check` before you finish." in system  # rules are never cut for the map
    assert litellm.token_counter(model="gpt-4o", text=system) < 2000


def test_without_a_map_the_prompt_has_no_map(llm, config):
    llm.queue(text("ok"))
    Agent(config).turn("hi")
    assert "Project map" not in system_of(llm.requests[0])
