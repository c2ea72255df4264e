"""Checkpoints and undo in real git repositories: the user's work is never lost."""

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import branch_head, git, git_init, own_git, own_subjects
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amas_code import tools
from amas_code.agent import Agent
from amas_code.checkpoint import Checkpoint, Refused


@pytest.fixture
def repo(isolated):
    git_init(isolated)
    for name in ("A", "B", "D"):
        Path(name).write_text(f"{name} committed\n")
    git(isolated, "add", ".")
    git(isolated, "commit", "-qm", "user: initial")
    return isolated


def agent_write(path: str, content: str, root: str = ".") -> str:
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    tools.STATE.update(checkpoint=Checkpoint(root), root=Path(root))
    tools.STATE["checkpoint"].begin(f"write {path}")  # each write a turn of its own
    return tools.write_file(str(Path(root, path)), content)


def snapshot(root: Path) -> dict:
    files = [p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


def agent_turn(request: str, *writes: tuple[str, str]) -> Checkpoint:
    """One request of the user's in which the agent writes each (path, content): one turn."""
    checkpoint = Checkpoint()
    checkpoint.begin(request)
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    tools.STATE.update(checkpoint=checkpoint, root=Path("."))
    for path, content in writes:
        tools.write_file(path, content)
    return checkpoint


def test_an_edit_leaves_the_users_branch_index_and_other_files_as_they_are(repo):
    Path("A").write_text("A user edit\n")
    Path("B").write_text("B staged\n")
    git(repo, "add", "B")
    Path("C").write_text("C untracked\n")
    before_status, before_files = git(repo, "status", "--porcelain"), snapshot(repo)
    head, index = git(repo, "rev-parse", "HEAD"), git(repo, "ls-files", "-s")
    agent_write("D", "D by agent\n")
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "ls-files", "-s") == index
    assert git(repo, "log", "--format=%s") == "user: initial\n"  # no [amas] commit on the branch
    assert git(repo, "status", "--porcelain") == before_status.replace("?? C", " M D\n?? C")
    assert {**before_files, "D": b"D by agent\n"} == snapshot(repo)
    # the [amas] commit lives in Amas's own repository, and holds the agent's file only
    shown = own_git(repo, "show", "--name-only", "--format=%s", "refs/amas/keep")
    assert shown.split() == ["[amas]", "wrote", "D", "D"]


def test_undo_restores_the_users_uncommitted_edit_and_index(repo):
    Path("A").write_text("A user edit\n")
    Path("B").write_text("B staged\n")
    git(repo, "add", "B")
    status = git(repo, "status", "--porcelain")
    agent_write("A", "A by agent\n")
    agent_write("B", "B by agent\n")
    assert "Undid" in Checkpoint().undo(2)
    assert Path("A").read_text() == "A user edit\n" and Path("B").read_text() == "B staged\n"
    assert git(repo, "status", "--porcelain") == status
    assert git(repo, "log", "--format=%s") == "user: initial\n"


def test_undo_keeps_a_file_the_user_changed_since_names_it_and_takes_back_the_rest(repo):
    agent_turn("change A and B", ("A", "A by agent\n"), ("B", "B by agent\n"))
    Path("A").write_text("A edited by the user afterwards\n")
    head = git(repo, "rev-parse", "HEAD")
    done = Checkpoint().undo()
    assert done == "Undid 1 turn: 'change A and B': B. Kept as they are, changed since: A."
    assert Path("A").read_text() == "A edited by the user afterwards\n"
    assert Path("B").read_text() == "B committed\n"
    assert git(repo, "rev-parse", "HEAD") == head


def test_a_kept_file_is_named_once_however_often_the_turn_wrote_it(repo):
    cp = agent_turn("A twice", ("A", "A first\n"), ("A", "A second\n"))
    Path("A").write_text("the user's\n")
    assert cp.undo().endswith("Kept as they are, changed since: A.")
    assert Path("A").read_text() == "the user's\n"


def test_a_user_commit_on_top_does_not_block_undo_and_head_stays(repo):
    agent_write("A", "A by agent\n")
    Path("E").write_text("user file\n")
    git(repo, "add", "E")
    git(repo, "commit", "-qm", "user: on top")
    head, index = git(repo, "rev-parse", "HEAD"), git(repo, "ls-files", "-s")
    assert Checkpoint().undo().startswith("Undid 1 turn")
    assert Path("A").read_text() == "A committed\n" and Path("E").read_text() == "user file\n"
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "ls-files", "-s") == index
    assert git(repo, "log", "-1", "--format=%s") == "user: on top\n"


def test_undo_then_redo_gives_back_the_same_files_and_leaves_the_branch(repo):
    agent_write("A", "A by agent\n")
    head, status, files = (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "status", "--porcelain"),
        snapshot(repo),
    )
    cp = Checkpoint()
    cp.undo()
    assert Path("A").read_text() == "A committed\n" and git(repo, "status", "--porcelain") == ""
    assert "Redid" in cp.undo(redo=True)
    assert snapshot(repo) == files and git(repo, "status", "--porcelain") == status
    assert git(repo, "rev-parse", "HEAD") == head
    with pytest.raises(Refused, match="Nothing to redo"):
        cp.undo(redo=True)


def test_untracked_files_and_directories_survive_undo_and_redo(repo):
    Path("scratch/deep").mkdir(parents=True)
    Path("scratch/deep/notes.txt").write_text("mine\n")
    Path("scratch/big.bin").write_bytes(bytes(range(256)) * 40_000)  # 10 MB
    agent_write("A", "A1\n")
    agent_write("A", "A2\n")
    agent_write("new.txt", "new\n")
    untracked = {k: v for k, v in snapshot(repo).items() if k.startswith("scratch/")}
    cp = Checkpoint()
    cp.undo()
    cp.undo(redo=True)
    assert cp.undo(2).startswith("Undid")
    assert Path("A").read_text() == "A1\n" and not Path("new.txt").exists()
    assert {k: v for k, v in snapshot(repo).items() if k.startswith("scratch/")} == untracked


def test_a_created_file_is_removed_by_undo_and_back_after_redo(repo):
    agent_write("pkg/new.py", "x = 1\n")
    cp = Checkpoint()
    cp.undo()
    assert not Path("pkg/new.py").exists() and git(repo, "status", "--porcelain") == ""
    cp.undo(redo=True)
    assert Path("pkg/new.py").read_text() == "x = 1\n"
    assert git(repo, "status", "--porcelain") == "?? pkg/\n"  # the user's to add, or not


def test_outside_a_repository_undo_works_and_the_project_gets_no_git(isolated, llm, config, capsys):
    from fake_llm import text, tool

    llm.queue(tool("write_file", {"path": "f.txt", "content": "hi\n"}), text("done"))
    agent = Agent({**config, "auto_accept": True})
    assert agent.turn("write") == 0 and Path("f.txt").read_text() == "hi\n"
    assert agent.command("/undo") == 0 and not Path("f.txt").exists()
    shown = capsys.readouterr()
    assert "Undid 1 turn: 'write': f.txt." in shown.err and shown.out == "done\n"
    assert sorted(os.listdir()) == [".amas"]  # no .git: Amas's own repository is in ~/.cache
    assert agent.command("/redo") == 0 and Path("f.txt").read_text() == "hi\n"


def test_a_merge_commit_on_top_does_not_block_undo(repo):
    agent_write("A", "A by agent\n")
    git(repo, "commit", "-qam", "user: takes the agent's A")
    git(repo, "checkout", "-qb", "side", "HEAD~1")
    Path("S").write_text("side\n")
    git(repo, "add", "S")
    git(repo, "commit", "-qm", "side")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-edit", "side")
    merge = git(repo, "rev-parse", "HEAD")
    assert "Undid" in Checkpoint().undo()
    assert Path("A").read_text() == "A committed\n" and Path("S").read_text() == "side\n"
    assert (
        git(repo, "rev-parse", "HEAD") == merge and git(repo, "status", "--porcelain") == " M A\n"
    )


def test_undo_survives_a_restart_and_the_repl_commands(repo, llm, config, capsys):
    agent_turn("make A the agent's", ("A", "A by agent\n"))
    agent = Agent(config)  # a new session: the turns come from .git/amas/repo
    agent.command("/checkpoint")
    listed = capsys.readouterr().err
    assert "make A the agent's" in listed and " A " in listed
    assert agent.command("/undo") == 0 and Path("A").read_text() == "A committed\n"
    assert agent.command("/redo") == 0 and Path("A").read_text() == "A by agent\n"
    agent_write("B", "B by agent\n")
    assert agent.command("/undo 2") == 0 and agent.command("/redo") == 0
    assert Path("A").read_text() == "A by agent\n" and Path("B").read_text() == "B by agent\n"
    assert agent.command("/undo x") == 1 and "Expected a number" in capsys.readouterr().err
    assert agent.command("/undo 0") == 1 and "not '0'" in capsys.readouterr().err


def test_in_an_empty_repository_an_edit_is_undone_and_no_commit_is_made(isolated):
    git_init(isolated)
    Path("mine.txt").write_text("untracked\n")
    agent_write("f.txt", "agent\n")
    assert branch_head(isolated) == "" and own_subjects(isolated) == ["[amas] wrote f.txt"]
    Checkpoint().undo()
    assert not Path("f.txt").exists() and Path("mine.txt").read_text() == "untracked\n"
    assert (
        git(isolated, "ls-files") == ""
        and git(isolated, "status", "--porcelain") == "?? mine.txt\n"
    )


def test_an_ignored_file_the_agent_writes_is_undone_and_never_enters_the_users_repository(repo):
    Path(".gitignore").write_text(".env\n")
    Path(".env").write_text("TOKEN=mine\n")
    assert agent_write(".env", "TOKEN=secret\n") == "Wrote .env (1 lines)."  # --yes: unasked
    secret = git(repo, "hash-object", ".env").strip()
    assert ".env" not in git(repo, "log", "--all", "--name-only", "--format=")
    assert ".env" not in git(repo, "ls-files") + git(repo, "status", "--porcelain")
    assert subprocess.run(["git", "cat-file", "-e", secret], check=False).returncode
    tools.STATE["checkpoint"].undo()
    assert Path(".env").read_text() == "TOKEN=mine\n"


def test_an_ignored_file_the_agent_wrote_is_undone_by_a_new_session(repo):
    Path(".gitignore").write_text(".env\n")
    Path(".env").write_text("TOKEN=mine\n")
    agent_write(".env", "TOKEN=agent\n")
    done = Checkpoint().undo()  # as `amas undo`, or /undo after a restart
    assert "Kept" not in done and Path(".env").read_text() == "TOKEN=mine\n"


def test_checkpoint_objects_survive_gc(repo):
    Path("A").write_text("precious uncommitted work\n")
    agent_write("A", "A by agent\n")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    Checkpoint().undo()
    assert Path("A").read_text() == "precious uncommitted work\n"


def test_a_change_git_cannot_snapshot_asks_and_under_yes_is_not_made(repo, capsys):
    Checkpoint()  # makes .git/amas/repo
    Path(".git/amas/repo/index.lock").write_text("")  # another git process holds the snapshots
    result = agent_write("A", "A by agent\n")
    assert "declined" in result  # no /undo for it: --yes asks, and there is no terminal
    warned = capsys.readouterr().err
    assert "No snapshot, so no /undo, for this change" in warned and "index.lock" in warned
    assert Path("A").read_text() == "A committed\n" and sorted(os.listdir()) == [
        ".git",
        "A",
        "B",
        "D",
    ]
    assert git(repo, "log", "--format=%s") == "user: initial\n"


def test_turned_off_by_config_nothing_is_recorded_and_undo_says_so(repo):
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    tools.STATE["checkpoint"] = Checkpoint(".", enabled=False)
    assert tools.write_file("A", "changed\n") == "Wrote A (1 lines)."
    assert git(repo, "log", "--format=%s") == "user: initial\n"
    assert not Path(".git/amas").exists()
    with pytest.raises(Refused, match="^Checkpoints are off"):
        Checkpoint(".", enabled=False).undo()
    assert Path("A").read_text() == "changed\n"


# Property: interleave agent edits, user edits, user commits, undo and redo; no user byte is lost.

FILES = st.sampled_from(["a.txt", "b.txt", "sub/c.txt"])
OPS = st.one_of(
    st.tuples(st.just("agent"), FILES, st.binary(max_size=20)),
    st.tuples(st.just("user"), FILES, st.binary(max_size=20)),
    st.tuples(st.just("commit"), st.none(), st.none()),
    st.tuples(st.sampled_from(["undo", "redo"]), st.none(), st.none()),
)


def run_op(root: Path, op: tuple, stacks: dict, displaced: list) -> None:
    """Apply op; `stacks` models the turns: (path, bytes before, bytes after) of each agent write,
    each its own turn, and what /undo and /redo must then do to the files."""
    kind, name, data = op
    before = snapshot(root)
    if kind == "user":
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_bytes(data)
    elif kind == "commit":
        git(root, "add", "-A")
        git(root, "commit", "-qm", "user", "--allow-empty")
    elif kind == "agent":
        agent_write(name, data.decode("latin-1"), str(root))
        written = (root / name).read_bytes()
        if before.get(name) != written:  # a write that changes nothing is no turn
            stacks["undo"].append((name, before.get(name), written))
            displaced.append(before.get(name))
    else:
        check_undo_redo(root, kind, before, stacks)


def check_undo_redo(root: Path, kind: str, before: dict, stacks: dict) -> None:
    """Undo (or redo) one turn: its file goes back only where it still holds what the agent (or
    the undo) left, and is otherwise kept and named; no other file changes; the branch stays."""
    head = branch_head(root)
    if not stacks[kind]:
        with pytest.raises(Refused, match=f"Nothing to {kind}"):
            Checkpoint(str(root)).undo(1, redo=kind == "redo")
        assert snapshot(root) == before
        return
    name, old, new = stacks[kind].pop()
    stacks["redo" if kind == "undo" else "undo"].append((name, old, new))
    at, to = (new, old) if kind == "undo" else (old, new)
    done = Checkpoint(str(root)).undo(1, redo=kind == "redo")
    after = snapshot(root)
    if before.get(name) == at:
        assert after.get(name) == to and "Kept" not in done
    else:
        assert after.get(name) == before.get(name) and f"changed since: {name}." in done
    assert {k: v for k, v in after.items() if k != name} == {
        k: v for k, v in before.items() if k != name
    }
    assert branch_head(root) == head


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(OPS, min_size=1, max_size=12))
def test_no_user_work_is_ever_lost(ops):
    with tempfile.TemporaryDirectory() as tmp:
        root = git_init(Path(tmp))
        stacks: dict = {"undo": [], "redo": []}
        displaced: list = []
        for op in ops:
            run_op(root, op, stacks, displaced)
        # Every version an agent write replaced is still held by Amas's snapshots, so an undo
        # can bring it back, whatever the user's own `git gc` does.
        git(root, "gc", "-q", "--prune=now")
        displaced = [data for data in displaced if data is not None]
        held = own_git(root, "rev-list", "--objects", "refs/amas/keep") if displaced else ""
        for data in displaced:
            assert git(root, "hash-object", "--stdin", input=data).strip() in held.split()


def test_works_when_the_user_has_no_git_identity(isolated, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    git(isolated, "init", "-q")
    agent_write("f.txt", "x\n")
    assert own_git(isolated, "log", "-1", "--format=%an <%ae> %s", "refs/amas/keep") == (
        "Amas Code <amas@localhost> [amas] wrote f.txt\n"
    )
    Checkpoint().undo()
    assert not Path("f.txt").exists()
