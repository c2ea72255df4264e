"""Startup stays light: heavy packages load only when they are needed (timings live in bench/)."""

import subprocess
import sys

HEAVY = ("litellm", "openai", "playwright", "tree_sitter", "git", "rich", "prompt_toolkit")


def imported(*args: str) -> set[str]:
    """Top-level packages a run of `python -m amas_code ARGS` imported."""
    cmd = [sys.executable, "-X", "importtime", "-m", "amas_code", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
    names = (line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line)
    return {name.split(".")[0] for name in names}


def test_version_and_help_import_nothing_heavy():
    for args in (["--version"], ["--help"]):
        assert not set(HEAVY) & imported(*args), args


def test_amas_undo_and_checkpoint_load_no_markdown_renderer(tmp_path):
    """rich's Markdown and markdown_it (0.1 s) load where an answer is first rendered, not at start:
    `amas checkpoint`, `amas undo` and the REPL's prompt come sooner."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    cmd = [sys.executable, "-X", "importtime", "-m", "amas_code", "checkpoint"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0 and "git" in done.stderr, done.stderr[-500:]  # it ran, with git
    assert "markdown_it" not in done.stderr and "rich.markdown" not in done.stderr


def test_the_agent_does_not_import_litellm_until_the_first_request():
    code = "import sys, amas_code.agent; print(sorted(m for m in ('litellm', 'openai', 'playwright') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_every_function_signature_has_type_hints():
    """The spec asks for type hints on every signature: each parameter (but self) and each return."""
    import ast
    from pathlib import Path

    missing = []
    for path in sorted(Path(__file__).parent.parent.glob("amas_code/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                args = node.args.args + node.args.kwonlyargs + [node.args.vararg, node.args.kwarg]
                bare = [a.arg for a in args if a and a.arg != "self" and a.annotation is None]
                no_return = node.returns is None and node.name != "__init__"
                missing += [f"{path.name}:{node.name} {bare}"] if bare or no_return else []
    assert missing == []


def test_readme_states_the_lines_of_python_and_of_rules_as_they_are():
    """README's two counts (#43): the budget's count of Python code, and the YAML lines that hold rules
    (no blank lines, no comments), each true of the code it ships with."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / ".ci"))
    import counts  # the same counts .ci/counts.py writes into README

    f = counts.figures()
    readme = " ".join((root / "README.md").read_text().split())
    assert f"**{f['code']} lines of code ({f['physical']} with blank lines, comments and docstrings)**" in readme
    assert f"beside {f['rules']} lines of rules kept as data" in readme
    assert f"and {f['examples']} lines of examples beside them" in readme
    assert re.search(rf"\b{f['yaml']} lines of YAML\b", readme)
    assert f"{f['with_examples']} with the examples" in readme
