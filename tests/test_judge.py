"""The command judge (issue #29): tree-sitter-bash finds every command of a line, destructive.yaml
judges each. Under --yes a destructive line asks (and with no terminal is declined); any other runs."""

import copy
import os
import re
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


# Issue 48: what undo cannot give back asks under --yes: writes outside the project, state no snapshot holds.
ISSUE48_ASK = [
    "printf 'x' | tee ~/.npmrc",
    "sed -i 's/Host a/Host b/' ~/.ssh/config",
    "cd ~ && echo 'set editing-mode vi' > .inputrc",
    "cd .. && echo x > other/x",
    "cd ../other && git status",
    "cp .env ../backend/.env",
    "install -m 755 build/tool ~/.local/bin/tool",
    "ln -sf $PWD/bin/x ~/.local/bin/x",
    "rsync -a build/ ../deploy/",
    "tar xzf release.tgz -C ~/apps",
    "unzip -o assets.zip -d ../shared",
    "perl -pi -e 's/a/b/' ~/.gitconfig",
    "mv ~/Desktop/invoice.pdf docs/",
    "docker-compose down --volumes",
    "docker volume prune",
    "docker system prune --volumes",
    "dropdb app_dev",
    "psql -c 'DROP DATABASE app'",
    "psql -c 'drop table users'",
    "mysql -e 'TRUNCATE orders'",
    "sqlite3 app.db 'DROP TABLE logs'",
    "psql app <<'SQL'\nDROP TABLE users;\nSQL",
    "npx prisma migrate reset",
    "rails db:drop",
    "bin/rails db:reset",
    "python manage.py flush",
    "redis-cli flushall",
    "kubectl delete pod api-0",
    "helm uninstall api",
    "terraform destroy",
    "aws s3 rm s3://bucket/key",
    "aws s3 rb s3://bucket --force",
    "npm publish",
    "twine upload dist/*",
    "gh repo delete me/app",
]
ISSUE48_RUN = [
    "tee -a build.log",
    "npm test 2>&1 | tee build.log",
    "docker compose down",
    "psql -c 'SELECT 1'",
    "cp .env.example .env",
    "mv notes.txt docs/",
    "echo x > /tmp/scratch.txt",
    "cd /tmp && ls",
    "cd /home/me/app && python -m pytest -q",  # the project's own absolute path, as models write it
    "ssh -i ~/.ssh/key.pem host 'cd /srv/app && git status'",
    "cd src && ls",
    "tar czf /tmp/release.tgz src",
    "unzip -l assets.zip",
    "rails db:migrate",
    "kubectl get pods",
    "npm pack",
]
# Issue 49, section 4: a program's own version or help, a device only printed or read, a harmless -exec.
ISSUE49_RUN = [
    "mkfs.ext4 -V /dev/sda1",
    "mkfs.ext4 --help",
    "stat --format '%n' /dev/sda",
    "echo /dev/sda1",
    "lsblk /dev/nvme0n1",
    "find . -name '*.py' -exec echo {} \\;",
]


@pytest.mark.parametrize("line", CASES["ask"] + ISSUE_ASK + ISSUE48_ASK)
def test_a_destructive_line_asks(line):
    assert tools.destructive(line), line


@pytest.mark.parametrize("line", CASES["run"] + ISSUE_RUN + ISSUE48_RUN + ISSUE49_RUN)
def test_an_ordinary_line_runs_unasked(line):
    assert not tools.destructive(line), line


# Harmless, but not for the table: they reach the network or never end.
@pytest.mark.parametrize(
    "line",
    [
        "ssh host uptime",
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


def test_git_checkout_of_named_files_runs_the_whole_tree_or_another_repository_asks(src):
    """#37: the snapshot before every command lets /undo take back `git checkout [--] FILE`; `.`,
    a path the judge cannot see, or another repository (-C DIR) asks."""
    assert not tools.destructive("git checkout src/app.py")
    assert not tools.destructive("git checkout -- src/app.py")
    assert not tools.destructive("git checkout HEAD -- src")
    assert tools.destructive("git -C . checkout HEAD -- src")
    assert tools.destructive("git checkout -- .") and tools.destructive(
        "git checkout HEAD src/*.py"
    )
    assert not tools.destructive("git checkout -b src")  # a new branch named like a directory
    assert not tools.destructive("git -C sub checkout -B src origin/src")


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


# Issue 36: the forms a shell or a model writes, through the real CLI with --yes and a scripted model.
ISSUE36_ASK = [
    "r\\\nm -rf src",  # a line continuation inside a word joins it
    "git reset --har",  # a unique start of --hard
    'env "A=b c" git clean -fdx',  # a quoted blank does not shift the words
    "python3 -c\"import shutil; shutil.rmtree('src')\"",  # code attached to its flag
    "echo 'rm -rf src' | env bash",
]
ISSUE36_RUN = [
    "git stash pop",  # a conflict keeps the stash
    "awk '{ print $1 }' src/app.py",
    "sed -n '1,5p' src/app.py",
    "env FOO=1 git status --short",
    'git -C "my project" status',
]


def test_under_yes_the_forms_of_issue_36_ask_or_run_as_they_should(src, llm):
    Path("my project").mkdir()
    git(Path("my project"), "init", "-q")
    results = results_under_yes(llm, ISSUE36_ASK + ISSUE36_RUN)
    assert {line: results[line] for line in ISSUE36_ASK if results[line] != DECLINED} == {}
    assert {line: results[line] for line in ISSUE36_RUN if "[exit code" not in results[line]} == {}
    assert "print('uncommitted" in results["sed -n '1,5p' src/app.py"]
    assert Path("src/app.py").read_text() == "print('uncommitted work')\n"
    assert git(src, "status", "--short", "src") == " M src/app.py\n"


def test_commands_run_with_bash_which_the_judge_reads(llm):
    # dash, Debian's /bin/sh, prints $'…' as it stands; bash reads it as the judge does.
    llm.queue(calls(("shell_command", {"command": "echo $'x\\x41' > out.txt"}, "c0")), text("ok"))
    base = ["--model", "openai/x", "--api-base", llm.url, "--yes", "go"]
    assert amas(*base, env={"OPENAI_API_KEY": "sk-x"}).returncode == 0
    assert Path("out.txt").read_text() == "xA\n"


DATA = Path(tools.__file__).parent


@pytest.mark.parametrize("path", sorted(DATA.glob("*.yaml")), ids=lambda path: path.name)
def test_no_line_of_any_data_file_is_over_160_characters(path):
    long = [line for line in path.read_text().splitlines() if len(line) > 160]
    assert long == []


def entries(rules: dict, query: str):
    """(what was left out, rules, query) for each entry of the judge's data left out in turn: an item of
    destructive.yaml's tables, a line of a verbose rule that starts an alternative with `|`, and a
    pattern of the bash query or an alternative inside its [ ]."""
    for key in ("words", "rewrite", "scripts", "ask"):
        table = rules[key]
        for i, rule in enumerate(table):
            if isinstance(table, dict):
                less = {k: v for k, v in table.items() if k != rule}
                yield f"{key}[{i}]", {**rules, key: less}, query
            else:
                yield f"{key}[{i}]", {**rules, key: table[:i] + table[i + 1 :]}, query
            lines = rule.split("\n")
            for j, line in enumerate(lines):
                if line.lstrip().startswith("|"):
                    cut = "\n".join(lines[:j] + lines[j + 1 :])
                    kept = {(cut if k == rule else k): v for k, v in table.items()}
                    yield f"{key}[{i}]: {line.strip()[:60]}", {**rules, key: kept}, query
    for start, end in spans(query):
        yield f"query: {query[start:end][:60]!r}", rules, query[:start] + query[end:]


def examples(verdict: str) -> list[str]:
    """The examples kept beside each row of destructive.yaml's tables that must ask (or run)."""
    tables = (tools.RULES[key] for key in ("rewrite", "scripts", "ask"))
    return [line for table in tables for row in table.values() for line in row[verdict]]


@pytest.mark.parametrize("key", ["rewrite", "scripts", "ask"])
def test_every_row_of_the_judge_keeps_an_example_that_asks_and_a_neighbour_that_runs(key):
    """#49: a row added without its examples, or whose examples no longer hold, fails here."""
    for row, kept in tools.RULES[key].items():
        assert kept.get("ask") and kept.get("run"), f"{key} row without both examples: {row[:80]}"
        assert [line for line in kept["ask"] if not tools.destructive(line)] == [], row[:80]
        assert [line for line in kept["run"] if tools.destructive(line)] == [], row[:80]


def spans(query: str) -> list[tuple[int, int]]:
    """Where each top-level pattern of a query, and each element of a [ ] alternation, starts and ends."""
    found, stack, quoted = [], [], False
    query = re.sub(";.*", lambda m: " " * len(m[0]), query)  # comments, kept in length
    for i, char in enumerate(query):
        if char == '"' and query[i - 1] != "\\":
            quoted = not quoted
        elif quoted or char not in "()[]":
            continue
        elif char in "([":
            stack.append((char, i))
        else:
            opened, begin = stack.pop()
            inside = stack and stack[-1][0] == "["
            if opened == "(" and (not stack or inside) and query[begin + 1] != "#":
                found.append((begin, i + 1))
    return found


@pytest.fixture
def data(monkeypatch):
    """Sets the judge's data for the rest of a test; the packaged data is back afterwards."""

    def use(rules: dict, query: str) -> None:
        monkeypatch.setattr(tools, "RULES", rules)
        for key, name in (("scripts", "SCRIPTS"), ("ask", "ASK"), ("words", "WORD")):
            monkeypatch.setattr(tools, name, re.compile("|".join(rules[key]), re.S))
        monkeypatch.setitem(tools.LANGUAGES["bash"], "query", query)
        tools.grammar.cache_clear()

    yield use
    monkeypatch.undo()
    tools.grammar.cache_clear()


def test_every_entry_of_the_judge_s_data_is_guarded_by_a_case(data):
    """Leaving out any one rule, alternative or query pattern changes the verdict on some case."""
    asks, runs = CASES["ask"] + examples("ask"), CASES["run"] + examples("run")
    lines = [(line, True) for line in asks] + [(line, False) for line in runs]
    rules, query = copy.deepcopy(tools.RULES), tools.LANGUAGES["bash"]["query"]
    unguarded = []
    for name, mutant, mutant_query in entries(rules, query):
        try:
            data(mutant, mutant_query)
            same = all(bool(tools.destructive(line)) == asks for line, asks in lines)
        except (re.error, ValueError, NameError, SyntaxError):
            same = False  # the data no longer loads: that fails every test
        unguarded += [name] if same else []
    assert unguarded == [], "\n".join(unguarded)


def test_no_80_character_stretch_of_the_knowledge_tables_is_kept_in_two_places():
    """#36: nothing kept twice in what the judge and the reader know (blanks squeezed): every data
    file but languages.yaml, of which the judge's `bash` query. The map's queries for `amas init`
    repeat their node shapes (tree-sitter queries cannot share a pattern) and are left out."""
    tables = {p.name: p.read_text() for p in DATA.glob("*.yaml") if p.name != "languages.yaml"}
    tables["formats.yaml"] = tables["formats.yaml"].partition("\nexamples:\n")[0]  # they repeat calls
    tables["languages.yaml:bash"] = yaml.safe_load((DATA / "languages.yaml").read_text())["bash"][
        "query"
    ]
    first, repeats = {}, []
    for name, text in sorted(tables.items()):
        text = " ".join(text.split())
        for start in range(max(len(text) - 79, 0)):
            where = first.setdefault(text[start : start + 80], (name, start))
            if where[0] != name or start - where[1] >= 80:
                repeats.append(f"{name}:{start} repeats {where}: {text[start : start + 80]!r}")
    assert repeats == []


# Issue 42: under --yes the judge asks for what a snapshot cannot give back, and only for that.
ISSUE42_ASK = [
    "cd ../other && git checkout -- f.py",
    "env -C ../other git checkout -- f.py",
    "git --work-tree=../other checkout -- f.py",
    "GIT_DIR=../other/.git git checkout -- f.py",
    "git submodule foreach git checkout -- f.py",
    "git submodule update --force",
    "git clean -fdx -e -n",
    "git prune",
    "git -c gc.pruneExpire=now gc",
    "git reflog expire --expire=now --all",
    "git -c alias.x='clean -fdx' x",
    "git config alias.x 'clean -fdx' && git x",
    "`echo rm` -rf build",
    "echo 'export PATH=.' > ~/.profile",
    "printf 'src/app.py\\n' | xargs --delimiter '\\n' rm -f",
    "find src -exec echo {} \\; -exec rm {} +",
    "env - git clean -fdx",
]
ISSUE42_RUN = ["git restore src/app.py", "git restore --worktree -- src/app.py"]


def test_under_yes_the_judge_asks_for_what_a_snapshot_cannot_give_back_and_only_that(src, llm):
    other = Path("../other")
    other.mkdir()
    git_init(other)
    (other / "f.py").write_text("committed\n")
    git(other, "add", ".")
    git(other, "commit", "-qm", "other")
    (other / "f.py").write_text("their uncommitted work\n")
    Path("untracked.log").write_text("kept\n")
    results = results_under_yes(llm, ISSUE42_ASK + ISSUE42_RUN)
    assert {line: results[line] for line in ISSUE42_ASK if results[line] != DECLINED} == {}
    assert (other / "f.py").read_text() == "their uncommitted work\n"
    assert not Path(Path.home(), ".profile").exists()
    assert Path("untracked.log").read_text() == "kept\n"
    # git restore FILE ran: the uncommitted edit went back to the committed text, and /undo has it
    assert {
        line: results[line] for line in ISSUE42_RUN if "[exit code 0]" not in results[line]
    } == {}
    assert Path("src/app.py").read_text() == "print('committed')\n"
    undo = amas("undo", env={"OPENAI_API_KEY": "sk-x"})
    assert undo.returncode == 0, undo.stderr
    assert Path("src/app.py").read_text() == "print('uncommitted work')\n"


def test_a_dry_run_force_push_runs_and_pushes_nothing(src, llm, tmp_path):
    remote = tmp_path / "remote.git"
    git(src, "init", "-q", "--bare", str(remote))
    git(src, "remote", "add", "origin", str(remote))
    git(src, "push", "-q", "origin", "main")
    git(src, "commit", "-qam", "rewritten", "--amend")
    results = results_under_yes(llm, ["git push --dry-run --force origin main"])
    assert "[exit code 0]" in results["git push --dry-run --force origin main"]
    assert "forced update" in results["git push --dry-run --force origin main"]
    assert git(remote, "log", "--format=%s", "main") == "user: initial\n"


def test_under_yes_writes_outside_the_project_are_declined_and_their_neighbours_run(src, llm):
    """#48 through the real CLI: what no snapshot holds is declined; the same inside the project runs."""
    home = Path(os.environ["HOME"])
    (home / "Desktop").mkdir()
    (home / "Desktop" / "invoice.pdf").write_text("the only copy")
    Path(".env").write_text("KEY=1\n")
    outside = [
        "printf 'registry=x' | tee ~/.npmrc",
        "cd .. && echo x > x.txt",
        "cp .env ../backend.env",
        "mv ~/Desktop/invoice.pdf docs.pdf",
    ]
    inside = ["echo built | tee -a build.log", "docker compose down", "psql -c 'SELECT 1'"]
    results = results_under_yes(llm, outside + inside)
    assert [line for line in outside if results[line] != DECLINED] == []
    assert [line for line in inside if "[exit code" not in results[line]] == []
    assert not (home / ".npmrc").exists() and not (src.parent / "x.txt").exists()
    assert not (src.parent / "backend.env").exists()
    assert (home / "Desktop" / "invoice.pdf").read_text() == "the only copy"
    assert Path("build.log").read_text() == "built\n"
