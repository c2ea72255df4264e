"""Checkpoints and undo in real git repositories: the user's work is never lost."""

import os
import tempfile
from pathlib import Path

import pytest
from conftest import git, git_init
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
    return tools.write_file(str(Path(root, path)), content)


def snapshot(root: Path) -> dict:
    files = [p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


def test_checkpoint_holds_only_the_agents_file(repo):
    Path("A").write_text("A user edit\n")
    Path("B").write_text("B staged\n")
    git(repo, "add", "B")
    Path("C").write_text("C untracked\n")
    before_status, before_files = git(repo, "status", "--porcelain"), snapshot(repo)
    before_index = git(repo, "ls-files", "-s", "A", "B")
    agent_write("D", "D by agent\n")
    assert git(repo, "show", "--name-only", "--format=%s", "HEAD").split() == [
        "[amas]",
        "wrote",
        "D",
        "D",
    ]
    assert git(repo, "status", "--porcelain") == before_status
    assert git(repo, "ls-files", "-s", "A", "B") == before_index
    assert {**before_files, "D": b"D by agent\n"} == snapshot(repo)


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


def test_undo_refuses_when_the_user_changed_the_file_since(repo):
    agent_write("A", "A by agent\n")
    Path("A").write_text("A edited by the user afterwards\n")
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(Refused, match="A was changed after"):
        Checkpoint().undo()
    assert Path("A").read_text() == "A edited by the user afterwards\n"
    assert git(repo, "rev-parse", "HEAD") == head


def test_undo_refuses_to_remove_a_user_commit_on_top(repo):
    agent_write("A", "A by agent\n")
    Path("E").write_text("user file\n")
    git(repo, "add", "E")
    git(repo, "commit", "-qm", "user: on top")
    with pytest.raises(Refused, match="HEAD moved since"):
        Checkpoint().undo()
    assert git(repo, "log", "-1", "--format=%s") == "user: on top\n"
    assert Path("A").read_text() == "A by agent\n"


def test_undo_then_redo_gives_the_same_tree_and_message(repo):
    agent_write("A", "A by agent\n")
    head_tree, message = (
        git(repo, "rev-parse", "HEAD^{tree}"),
        git(repo, "log", "-1", "--format=%B"),
    )
    files = snapshot(repo)
    cp = Checkpoint()
    cp.undo()
    assert Path("A").read_text() == "A committed\n"
    assert "Redid" in cp.redo()
    assert git(repo, "rev-parse", "HEAD^{tree}") == head_tree
    assert git(repo, "log", "-1", "--format=%B") == message and snapshot(repo) == files
    with pytest.raises(Refused, match="Nothing to redo"):
        cp.redo()


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
    cp.redo()
    assert cp.undo(2).startswith("Undid")
    assert Path("A").read_text() == "A1\n" and not Path("new.txt").exists()
    assert {k: v for k, v in snapshot(repo).items() if k.startswith("scratch/")} == untracked


def test_a_created_file_is_removed_by_undo_and_back_after_redo(repo):
    agent_write("pkg/new.py", "x = 1\n")
    cp = Checkpoint()
    cp.undo()
    assert not Path("pkg/new.py").exists()
    assert "pkg/new.py" not in git(repo, "ls-files")
    cp.redo()
    assert Path("pkg/new.py").read_text() == "x = 1\n"
    assert "pkg/new.py" in git(repo, "ls-files")


def test_no_repository_means_no_checkpoints_and_no_crash(isolated, llm, config, capsys):
    from fake_llm import text, tool

    llm.queue(tool("write_file", {"path": "f.txt", "content": "hi\n"}), text("done"))
    agent = Agent({**config, "auto_accept": True})
    assert agent.turn("write") == 0 and Path("f.txt").read_text() == "hi\n"
    assert agent.command("/undo") == 1
    shown = capsys.readouterr()  # the answer to /undo; otherwise silent, as the spec says
    assert shown.err.count("git init") == 1 and shown.out == "done\n"


def test_merge_commit_on_top_is_refused(repo):
    agent_write("A", "A by agent\n")
    git(repo, "checkout", "-qb", "side", "HEAD~1")
    Path("S").write_text("side\n")
    git(repo, "add", "S")
    git(repo, "commit", "-qm", "side")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-edit", "side")
    with pytest.raises(Refused, match="HEAD moved since"):
        Checkpoint().undo()


def test_undo_survives_a_restart_and_the_repl_commands(repo, llm, config, capsys):
    agent_write("A", "A by agent\n")
    agent = Agent(config)  # a new session: state comes from .git/amas
    agent.command("/checkpoint")
    assert "[amas] wrote A" in capsys.readouterr().err
    assert agent.command("/undo") == 0 and Path("A").read_text() == "A committed\n"
    assert agent.command("/redo") == 0 and Path("A").read_text() == "A by agent\n"
    agent_write("B", "B by agent\n")
    assert agent.command("/undo 2") == 0 and agent.command("/redo") == 0
    assert Path("A").read_text() == "A by agent\n" and Path("B").read_text() == "B by agent\n"
    assert agent.command("/undo x") == 1 and "Expected a number" in capsys.readouterr().err
    assert agent.command("/undo 0") == 1 and "not '0'" in capsys.readouterr().err


def test_first_commit_in_an_empty_repository(isolated):
    git_init(isolated)
    Path("mine.txt").write_text("untracked\n")
    agent_write("f.txt", "agent\n")
    assert git(isolated, "log", "--format=%s") == "[amas] wrote f.txt\n"
    Checkpoint().undo()
    assert not Path("f.txt").exists() and Path("mine.txt").read_text() == "untracked\n"
    assert "f.txt" not in git(isolated, "ls-files")


def test_gitignored_files_are_never_committed(repo):
    Path(".gitignore").write_text(".env\n")
    assert "declined" in agent_write(".env", "TOKEN=secret\n")  # --yes asks: no undo for it
    tools.STATE["config"]["yolo"] = True
    agent_write(".env", "TOKEN=secret\n")
    assert ".env" not in git(repo, "log", "--all", "--name-only", "--format=")
    assert Path(".env").read_text() == "TOKEN=secret\n"


def test_checkpoint_objects_survive_gc(repo):
    Path("A").write_text("precious uncommitted work\n")
    agent_write("A", "A by agent\n")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    Checkpoint().undo()
    assert Path("A").read_text() == "precious uncommitted work\n"


def test_a_change_git_cannot_checkpoint_is_not_made(repo):
    Path(".git/index.lock").write_text("")  # another git process holds the index
    with pytest.raises(Refused, match="not applied.*index.lock"):
        agent_write("A", "A by agent\n")
    result = tools.run("write_file", {"path": "A", "content": "A by agent\n"})
    assert result.startswith("Error: not applied") and "index.lock" in result
    assert Path("A").read_text() == "A committed\n" and sorted(os.listdir()) == [
        ".git",
        "A",
        "B",
        "D",
    ]
    assert git(repo, "log", "--format=%s") == "user: initial\n"


def test_disabled_by_config(repo):
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    tools.STATE["checkpoint"] = Checkpoint(".", enabled=False)
    tools.write_file("A", "changed\n")
    assert git(repo, "log", "--format=%s") == "user: initial\n"


# Property: interleave agent edits, user edits, user commits, undo and redo; no user byte is lost.

FILES = st.sampled_from(["a.txt", "b.txt", "sub/c.txt"])
OPS = st.one_of(
    st.tuples(st.just("agent"), FILES, st.binary(max_size=20)),
    st.tuples(st.just("user"), FILES, st.binary(max_size=20)),
    st.tuples(st.just("commit"), st.none(), st.none()),
    st.tuples(st.sampled_from(["undo", "redo"]), st.none(), st.none()),
)


def run_op(root: Path, op: tuple, history: list) -> None:
    kind, name, data = op
    before = snapshot(root)
    if kind == "user":
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_bytes(data)
    elif kind == "commit":
        git(root, "add", "-A")
        git(root, "commit", "-qm", "user", "--allow-empty")
    elif kind == "agent":
        text = data.decode("latin-1")
        agent_write(name, text, str(root))
        history.append((name, before.get(name), (root / name).read_bytes()))
    else:
        check_undo_redo(root, kind, before)


def check_undo_redo(root: Path, kind: str, before: dict) -> None:
    cp = Checkpoint(str(root))
    state = cp.load()
    record = (
        (state["undo"] if kind == "undo" else state["redo"] or [None])[-1] if state[kind] else None
    )
    try:
        getattr(cp, kind)(1)
    except Refused:
        assert snapshot(root) == before  # a refusal changes nothing
        return
    after = snapshot(root)
    path = record["path"]
    wanted = record["before"] if kind == "undo" else record["after"]
    expected = (
        None
        if wanted is None
        else cp.git(
            "cat-file", "blob", wanted, stdout_as_string=False, strip_newline_in_stdout=False
        )
    )
    assert after.get(path) == expected
    assert {k: v for k, v in after.items() if k != path} == {
        k: v for k, v in before.items() if k != path
    }


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(OPS, min_size=1, max_size=12))
def test_no_user_work_is_ever_lost(ops):
    with tempfile.TemporaryDirectory() as tmp:
        root = git_init(Path(tmp))
        history: list = []
        for op in ops:
            run_op(root, op, history)
        # Every version an agent write displaced is still stored, so an undo can bring it back.
        for name, displaced, _ in history:
            if displaced is not None:
                sha = git(root, "hash-object", "--stdin", input=displaced).strip()
                assert git(root, "cat-file", "-t", sha).strip() == "blob", name


def test_works_when_the_user_has_no_git_identity(isolated, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    git(isolated, "init", "-q")
    agent_write("f.txt", "x\n")
    assert (
        git(isolated, "log", "--format=%an <%ae> %s")
        == "Amas Code <amas@localhost> [amas] wrote f.txt\n"
    )
    Checkpoint().undo()
    assert not Path("f.txt").exists()
