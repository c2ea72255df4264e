"""Nothing the agent runs can lose your work (issue #37): a snapshot of the work tree before every
shell command, kept in git, and /undo and /redo of what the command changed. Real repositories, real
shell commands, the real CLI with a scripted model."""

import os
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import amas, git, git_init, own_git, own_subjects
from fake_llm import text, tool

from amas_code import tools
from amas_code.checkpoint import Checkpoint

EDITS = "print('an hour of uncommitted work')\n"


@pytest.fixture
def repo(isolated):
    git_init(isolated)
    Path("src").mkdir()
    Path("src/m.py").write_text("print('committed')\n")
    Path(".gitignore").write_text("*.log\n")
    git(isolated, "add", ".")
    git(isolated, "commit", "-qm", "user: initial")
    Path("src/m.py").write_text(EDITS)  # the user's work, never committed
    return isolated


def run_yes(llm, *commands: str, task: str = "do it") -> subprocess.CompletedProcess:
    """`amas --yes TASK` whose scripted model runs each command with shell_command."""
    for command in commands:
        llm.queue(tool("shell_command", {"command": command}))
    llm.queue(text("done"))
    base = ["--model", "openai/fake", "--api-base", llm.url, "--yes", task]
    return amas(*base, env={"OPENAI_API_KEY": "sk-x"})


def held_objects(repo: Path) -> set[str]:
    """Every object Amas's snapshots hold, after the user's `git gc --prune=now` dropped what
    no ref of theirs reaches."""
    git(repo, "gc", "-q", "--prune=now")
    return set(own_git(repo, "rev-list", "--objects", "refs/amas/keep").split())


def blob_of(data: str) -> str:
    return subprocess.run(
        ["git", "hash-object", "--stdin"], input=data, capture_output=True, text=True
    ).stdout.strip()


OVERWRITES = [
    "cat > src/m.py <<'EOF'\nprint('the model wrote this')\nEOF",
    "printf 'print(1)\\n' > other.py && cp other.py src/m.py",
    "printf 'print(2)\\n' > moved.py && mv -f moved.py src/m.py",
    "git checkout -- src/m.py",
]


@pytest.mark.parametrize("command", OVERWRITES)
def test_a_command_over_uncommitted_edits_is_undone_exactly_after_gc(repo, llm, command):
    head, staged = git(repo, "rev-parse", "HEAD"), git(repo, "ls-files", "-s")
    done = run_yes(llm, command)
    assert done.returncode == 0, done.stdout + done.stderr
    assert Path("src/m.py").read_text() != EDITS  # the command ran, unasked, under --yes
    assert blob_of(EDITS) in held_objects(repo)  # the edits are kept, whatever happens next
    undone = amas("undo")  # a second session
    assert undone.returncode == 0 and "Undid 1 turn: 'do it': " in undone.stderr
    assert Path("src/m.py").read_text() == EDITS
    assert not Path("other.py").exists() and not Path("moved.py").exists()  # new files go
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "ls-files", "-s") == staged
    after = Path("src/m.py").read_bytes()
    redone = amas("redo")
    assert redone.returncode == 0 and Path("src/m.py").read_bytes() != after
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "ls-files", "-s") == staged


def test_what_a_command_creates_deletes_and_changes_comes_back(repo, llm):
    Path("notes.txt").write_text("the user's untracked notes\n")
    Path("debug.log").write_text("ignored by git\n")
    command = "mkdir -p gen/deep && echo x > gen/deep/out.txt && echo gone > notes.txt"
    llm.queue(tool("shell_command", {"command": command + " && rm src/m.py"}), text("done"))
    base = ["--model", "openai/fake", "--api-base", llm.url, "--yolo", "go"]  # rm asks under --yes
    assert amas(*base, env={"OPENAI_API_KEY": "sk-x"}).returncode == 0
    assert not Path("src/m.py").exists() and Path("gen/deep/out.txt").exists()
    assert "Undid" in amas("undo").stderr
    assert Path("src/m.py").read_text() == EDITS
    assert Path("notes.txt").read_text() == "the user's untracked notes\n"
    assert [p.as_posix() for p in Path("gen").rglob("*")] == ["gen/deep"]  # files go, folders stay
    assert Path("debug.log").read_text() == "ignored by git\n"  # never touched
    assert git(repo, "status", "--porcelain") == " M src/m.py\n?? notes.txt\n"


def test_a_file_the_user_changed_after_the_command_is_kept_and_named_and_the_rest_undone(repo, llm):
    run_yes(llm, "echo agent > src/m.py && echo new > made.txt")
    Path("src/m.py").write_text("the user's fix after the command\n")
    undone = amas("undo")
    assert undone.returncode == 0
    assert "Kept as they are, changed since: src/m.py." in undone.stderr
    assert Path("src/m.py").read_text() == "the user's fix after the command\n"
    assert not Path("made.txt").exists()  # what the user did not touch is taken back


def test_a_command_that_changes_nothing_leaves_no_record(repo, llm):
    run_yes(llm, "ls -la && git status")
    listed = amas("checkpoint").stderr  # the headings alone: no turn to list
    assert listed.split() == ["time", "request", "files"]
    assert "Nothing to undo" in amas("undo").stderr


def test_checkpoint_lists_turns_and_undo_takes_back_an_edit_and_a_command_together(repo, llm):
    llm.queue(tool("write_file", {"path": "a.py", "content": "a = 1\n"}))
    run_yes(llm, "echo c > c.txt", task="write a, run c")
    run_yes(llm, "echo b > b.txt", task="run b")
    listed = amas("checkpoint").stderr
    assert "write a, run c" in listed and "a.py, c.txt" in listed and "run b" in listed
    assert listed.index("run b") < listed.index("write a, run c")  # newest first
    assert "'run b': b.txt" in amas("undo").stderr and not Path("b.txt").exists()
    assert Path("a.py").exists() and Path("c.txt").exists()
    undone = amas("undo").stderr  # the edit and the command of one request, in one step
    assert "'write a, run c': a.py, c.txt" in undone
    assert not Path("a.py").exists() and not Path("c.txt").exists()
    assert Path("src/m.py").read_text() == EDITS
    assert amas("redo", "2").returncode == 0
    assert Path("a.py").read_text() == "a = 1\n" and Path("b.txt").read_text() == "b\n"
    assert Path("c.txt").read_text() == "c\n"


def test_a_big_untracked_file_is_not_copied_into_git(repo, llm):
    with open("dump.bin", "wb") as dump:
        dump.truncate(60_000_000)  # 60 MB of zeros: git would store them compressed, count the blob
    done = run_yes(llm, "echo small > small.txt")
    assert done.stderr.count("Not in /undo's snapshots: dump.bin") == 1  # once a session
    for where in (git, own_git):
        objects = where(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectsize)")
        assert max(int(size) for size in objects.split()) < 1_000_000
    listed = amas("checkpoint").stderr
    assert "small.txt" in listed and "dump.bin" not in listed


def test_when_no_snapshot_can_be_taken_the_command_asks_even_under_yes(repo, llm):
    Checkpoint(".")  # makes .git/amas/repo
    Path(".git/amas/repo/index.lock").write_text("")  # another git process is taking one
    done = run_yes(llm, "echo x > src/m.py")
    assert "No snapshot, so no /undo, for this change" in done.stderr
    assert "Run it with no /undo? → no (no terminal to ask" in done.stderr
    assert Path("src/m.py").read_text() == EDITS


def test_the_snapshot_leaves_the_users_index_and_files_untouched(repo):
    Path("staged.py").write_text("staged\n")
    git(repo, "add", "staged.py")
    Path("staged.py").write_text("staged, then edited\n")
    index = Path(".git/index").read_bytes()
    status = git(repo, "status", "--porcelain")
    snapshot = Checkpoint(".").snapshot()
    assert Path(".git/index").read_bytes() == index and git(repo, "status", "--porcelain") == status
    assert own_git(repo, "show", f"{snapshot}:staged.py") == "staged, then edited\n"
    assert own_git(repo, "show", f"{snapshot}:src/m.py") == EDITS
    assert git(repo, "for-each-ref") == git(repo, "for-each-ref", "refs/heads")  # no ref of ours


def test_outside_git_commands_run_as_before(isolated, llm):
    done = run_yes(llm, "echo x > out.txt")
    assert done.returncode == 0 and Path("out.txt").read_text() == "x\n"
    assert "No snapshot" not in done.stderr


def test_every_turn_is_kept_and_undo_n_reaches_the_oldest(repo):
    """#41 dropped the old cap on the undo stack (PLAN.md): every turn stays undoable."""
    checkpoint = Checkpoint(".")
    tools.STATE.update(checkpoint=checkpoint, root=repo)
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    Path("n.txt").write_text("the user's\n")
    for n in range(5):
        checkpoint.begin(f"turn {n}")
        tools.run("shell_command", {"command": f"echo {n} > n.txt"})
    listed = [request for _, request, _ in Checkpoint(".").history()]
    assert listed == ["turn 4", "turn 3", "turn 2", "turn 1", "turn 0"]
    assert Checkpoint(".").undo(5).startswith("Undid 5 turns")
    assert Path("n.txt").read_text() == "the user's\n"


# The rest of #37: nothing leaked, nothing turned off by a typo ---------------------------------


@pytest.mark.parametrize("setting", ['auto_accept: "no"', 'yolo: "false"', "checkpoint_on_edit: 0"])
def test_a_boolean_given_as_a_string_stops_amas_at_the_start(isolated, setting):
    (Path(os.environ["AMAS_HOME"]) / "config.yaml").write_text(setting + "\n")
    done = amas("checkpoint")
    assert done.returncode == 1
    key = setting.split(":")[0]
    assert (
        f"Setting {key}: expected bool, got" in done.stderr and len(done.stderr.splitlines()) == 1
    )


def test_the_input_history_is_created_readable_by_its_owner_only(isolated):
    from amas_code import ui

    history = Path(os.environ["HOME"]) / ".amas_history"
    ui._comforts({"/help": "List the commands."}, history)
    assert stat.S_IMODE(history.stat().st_mode) == 0o600


def test_a_command_cut_short_by_ctrl_c_is_still_recorded_and_undone(repo, llm, config):
    from conftest import interrupt_when

    from amas_code.agent import Agent

    command = "echo agent > src/m.py; touch started; sleep 20"
    llm.queue(tool("shell_command", {"command": command}), text("next"))
    agent = Agent({**config, "auto_accept": True})
    interrupt_when("started")
    assert agent.turn("run it") == 130
    assert Path("src/m.py").read_text() == "agent\n"
    assert agent.command("/undo") == 0
    assert Path("src/m.py").read_text() == EDITS and not Path("started").exists()


@pytest.mark.parametrize(
    "where",
    [
        "lib",
        "vendor/lib",
    ],
)
def test_a_nested_repository_with_no_commit_does_not_stop_the_snapshots(repo, llm, where):
    done = run_yes(llm, f"git init -q {where} && echo x > {where}/a.txt", "echo y > b.txt")
    assert "No snapshot" not in done.stderr and "No /undo" not in done.stderr
    assert f"Not in /undo's snapshots: {where.split('/')[0]}/" in done.stderr  # its new top folder
    assert Path("b.txt").read_text() == "y\n"
    undone = amas("undo")
    assert "b.txt" in undone.stderr and not Path("b.txt").exists()
    assert Path(where, "a.txt").read_text() == "x\n"  # left out, so never taken back


def test_a_multi_line_command_is_named_by_its_first_line(repo, llm):
    done = run_yes(llm, "cat > src/m.py <<'EOF'\nprint('x')\nEOF")
    assert "ran cat > src/m.py <<'EOF'" in done.stderr  # the turn's summary
    assert own_subjects(repo) == ["[amas] ran cat > src/m.py <<'EOF'"]
    listed = amas("checkpoint").stderr
    assert "src/m.py" in listed and "print('x')" not in listed
