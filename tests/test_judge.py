"""The command judge (issue #29): tree-sitter-bash finds every command of a line, destructive.yaml
judges each. Under --yes a destructive line asks (and with no terminal is declined); any other runs."""

import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import amas, git, git_init
from fake_llm import text, tools as calls

from amas_code import tools

CASES = yaml.safe_load(Path(__file__).with_name("judge_cases.yaml").read_text())
DECLINED = "The user declined to run this command."

# The issue's own examples, both ways.
ISSUE_ASK = [
    "{ git reset --hard; }",
    "if true; then rm -rf src; fi",
    "f() { rm -rf src; }; f",
    "bash <<EOF\nrm -rf src\nEOF",
    "xargs -I{} rm -rf {}",
    "parallel rm -rf ::: a b",
    "busybox rm -rf src",
    "git --git-dir=.git --work-tree=. reset --hard",
    "git worktree remove --force w",
    "find . -exec rm -rf {} +",
    "eval 'rm -rf src'",
    "python3 -c \"import shutil; shutil.rmtree('src')\"",
    "cat x > /dev/sda",
]
ISSUE_RUN = [
    "cat <<EOF\nrm -rf /home/user\nEOF",
    "grep -n rm <<EOF\nrm -rf src\nEOF",
    "tee notes.txt <<EOF\ngit reset --hard\nEOF",
    "rm --help",
    "git restore --help",
    "command -v rm",
    "git clean -n",
    "git clean --dry-run",
    "git restore --staged file",
    "git checkout -bfeature",
    "find . -exec cat {} +",
]


@pytest.mark.parametrize("line", CASES["ask"] + ISSUE_ASK)
def test_a_destructive_line_asks(line):
    assert tools.destructive(line), line


@pytest.mark.parametrize("line", CASES["run"] + ISSUE_RUN)
def test_an_ordinary_line_runs_unasked(line):
    assert not tools.destructive(line), line


# Harmless, but not for the table: they reach the network or never end.
@pytest.mark.parametrize(
    "line",
    [
        "ssh host uptime",
        "ssh -i ~/.ssh/key.pem host 'cd /srv/app && git status'",
        "ssh -N -L 8080:localhost:80 host",
        "ssh -T git@github.com",
        "npx tsc --noEmit",
        "uv run pytest -q",
        "until (echo > /dev/tcp/localhost/5432) 2>/dev/null; do sleep 1; done",
    ],
)
def test_an_ordinary_line_that_is_only_judged_runs_unasked(line):
    assert not tools.destructive(line), line


@pytest.fixture
def src(isolated):
    """A repository whose src/ holds committed work and an uncommitted edit."""
    git_init(isolated)
    Path("src").mkdir()
    Path("src/app.py").write_text("print('committed')\n")
    git(isolated, "add", ".")
    git(isolated, "commit", "-qm", "user: initial")
    Path("src/app.py").write_text("print('uncommitted work')\n")
    return isolated


def results_under_yes(llm, lines: list[str]) -> dict[str, str]:
    """Each line run by the real `amas --yes` one-shot (no terminal): {line: the tool's result}."""
    llm.queue(
        calls(*[("shell_command", {"command": line}, f"c{i}") for i, line in enumerate(lines)])
    )
    llm.queue(text("done"))
    base = ["--model", "openai/x", "--api-base", llm.url, "--yes", "go"]
    done = amas(*base, env={"OPENAI_API_KEY": "sk-x"})
    assert done.returncode == 0, done.stderr
    answered = {
        m["tool_call_id"]: m["content"]
        for m in llm.requests[-1]["body"]["messages"]
        if m["role"] == "tool"
    }
    return {line: answered[f"c{i}"] for i, line in enumerate(lines)}


def test_under_yes_every_destructive_example_of_the_issue_is_declined_and_changes_nothing(src, llm):
    results = results_under_yes(llm, ISSUE_ASK)
    assert {line: r for line, r in results.items() if r != DECLINED} == {}
    assert Path("src/app.py").read_text() == "print('uncommitted work')\n"
    assert git(src, "status", "--short", "src") == " M src/app.py\n"


def test_under_yes_every_ordinary_example_of_the_issue_runs(src, llm):
    results = results_under_yes(llm, ISSUE_RUN)
    assert {line: r for line, r in results.items() if "[exit code" not in r} == {}
    assert "rm -rf /home/user" in results[ISSUE_RUN[0]]  # the here-document was only printed
    assert Path("notes.txt").read_text() == "git reset --hard\n"
    assert "feature" in git(src, "branch")
    assert Path("src/app.py").read_text() == "print('uncommitted work')\n"


def test_under_yes_codex_style_and_nested_quotes_are_judged_by_what_runs(src, llm):
    lines = [
        'bash -lc \'rg -n "rm -rf" src || grep -rn "rm -rf" src\'',
        "bash -lc 'cd src && rm -rf .'",
        "sh -c \"bash -c 'git checkout -- .'\"",
        "bash -c \"git stash list; echo 'git stash drop' > note.txt\"",
    ]
    results = results_under_yes(llm, lines)
    assert "[exit code" in results[lines[0]] and "[exit code" in results[lines[3]]
    assert results[lines[1]] == DECLINED and results[lines[2]] == DECLINED
    assert Path("note.txt").read_text() == "git stash drop\n"
    assert Path("src/app.py").read_text() == "print('uncommitted work')\n"


def test_git_checkout_asks_only_when_an_argument_is_an_existing_path(src):
    assert tools.destructive("git checkout src/app.py")
    assert tools.destructive("git -C . checkout HEAD -- src")
    assert not tools.destructive("git checkout main")  # no file named main
    assert not tools.destructive("git checkout -b src")  # a new branch named like a directory
    assert not tools.destructive("git checkout -B src origin/src")
    assert not tools.destructive("git checkout " + "a/" * 3000)  # too long a path is no file
    Path("main").write_text("a file named like the branch\n")
    assert tools.destructive("git checkout main")


@pytest.mark.parametrize(
    "line", ["echo 'unbalanced", "if true; then rm x", "ls )", "$(" * 3000 + "ls"]
)
def test_a_line_that_does_not_parse_or_nests_too_deep_asks(line):
    assert tools.destructive(line)


def test_a_line_nested_beyond_what_can_be_judged_asks_and_never_crashes():
    assert tools.destructive("$(" * 2000 + "ls" + ")" * 2000)

    def nested(line: str) -> str:
        for shell in ("eval", "bash -c", "sh -lc", "eval", "zsh -c", "bash -xc") * 2:
            line = f"{shell} {shlex.quote(line)}"
        return line

    assert not tools.destructive(nested("ls src"))  # twelve scripts deep, still judged
    assert tools.destructive(nested("rm -rf src"))


@pytest.mark.parametrize(
    "nested",
    [
        "eval ",
        "watch ",
        "trap ",
        "sh -c ",
        "bash <<< ",
        "find . -exec ",
        "fd -x ",
        "ssh h ",
        "::: ",
    ],
)
def test_a_wrapper_nested_in_itself_thousands_deep_is_judged_in_one_step(nested):
    assert not tools.destructive(nested * 3000 + "ls")
    assert tools.destructive(nested * 3000 + "rm -rf src")


def test_the_grammar_loads_on_the_first_shell_command_not_at_import():
    code = (
        "import sys; from amas_code import agent, tools\n"
        "assert 'tree_sitter' not in sys.modules and 'tree_sitter_bash' not in sys.modules\n"
        "assert tools.destructive('rm -rf x') and 'tree_sitter_bash' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_long_and_hostile_lines_are_judged_without_hanging():
    lines = [
        "echo " + "a" * 1_000_000,
        "cat > big.txt <<'EOF'\n" + "rm -rf src; git reset --hard\n" * 35_000 + "EOF",
        "git commit -m '" + "word " * 200_000 + "'",
        "ls; " * 100_000,
    ]
    assert [tools.destructive(line) for line in lines] == [False, False, False, False]
    assert tools.destructive("ls; " * 100_000 + "rm -rf src")


@pytest.mark.parametrize(
    "line",
    [
        "x" + " | x" * 1000,  # took 4.6 s: unanchored pipeline patterns
        "python3 -c 'x' " + "-c " * 10_000,  # took 3.1 s: .* after .* in the interpreter rule
        'python3 -c "' + "open(x, " * 10_000 + '"',  # took 4.0 s
    ],
)
def test_long_lines_are_judged_well_under_a_second(line):
    started = time.process_time()
    assert not tools.destructive(line)
    assert time.process_time() - started < 0.5
