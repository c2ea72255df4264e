"""Tests that would catch a broken promise (issue #26): each guards something a user would notice,
found by mutation testing (bench/mutate.py) where a deliberately broken checkpoint.py, tools.py or
config.py still passed. Real git repositories with a bare remote, real files with modes, real
environment variables, the real CLI."""

import os
import pty
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import amas, branch_head, git, git_init, own_git, own_subjects, terminal

from amas_code import config as settings
from amas_code import tools
from amas_code.checkpoint import Checkpoint, Refused

# Fixtures and helpers ----------------------------------------------------------------------------


@pytest.fixture
def repo(isolated):
    """A project with three committed files, one of them an executable script."""
    git_init(isolated)
    Path("a.txt").write_text("a committed\n")
    Path("b.txt").write_text("b committed\n")
    Path("run.sh").write_text("#!/bin/sh\necho committed\n")
    Path("run.sh").chmod(0o755)
    git(isolated, "add", ".")
    git(isolated, "commit", "-qm", "user: initial")
    return isolated


@pytest.fixture
def remote(repo, tmp_path):
    """A bare remote that holds main, as after `git clone` or a first push."""
    git(tmp_path, "init", "-q", "--bare", "remote.git")
    git(repo, "remote", "add", "origin", str(tmp_path / "remote.git"))
    git(repo, "push", "-q", "-u", "origin", "main")
    return tmp_path / "remote.git"


def as_agent(root: Path | None = None) -> None:
    """The tools as `amas --yes` runs them: edits applied unasked, checkpoints on, no terminal."""
    root = root or Path.cwd()
    tools.STATE.update(checkpoint=Checkpoint(str(root)), root=root)
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True, "yolo": None}


def write(path: str, content: str) -> str:
    return tools.run("write_file", {"path": path, "content": content})


def turn(request: str, path: str, content: str) -> str:
    """A new request of the user's in which the agent writes one file: a turn of its own."""
    tools.STATE["checkpoint"].begin(request)
    return write(path, content)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def entry(repo: Path, path: str) -> str:
    """The index entry (mode, blob, stage) of a path, as `git ls-files -s` shows it."""
    return git(repo, "ls-files", "-s", "--", path).split("\t")[0]


def own_entry(repo: Path, path: str) -> str:
    """The path's entry in the newest snapshot, in Amas's own repository."""
    return own_git(repo, "ls-tree", "refs/amas/keep", "--", path).split("\t")[0]


def user_state(repo: Path) -> tuple:
    """What undo and redo never write: the branch, the index, and so what git status shows."""
    return head(repo), git(repo, "ls-files", "-s"), git(repo, "status", "--porcelain")


# Undo and redo never move the branch -------------------------------------------------------------


def test_undo_then_redo_with_an_up_to_date_remote(remote, repo):
    """The branch never moves, so it stays level with its remote through edit, undo and redo."""
    as_agent()
    assert write("a.txt", "a by agent\n") == "Wrote a.txt (1 lines)."
    pushed = git(repo, "rev-parse", "origin/main").strip()
    cp = Checkpoint()
    assert cp.undo().startswith("Undid")
    assert Path("a.txt").read_text() == "a committed\n" and head(repo) == pushed
    assert git(repo, "status", "--porcelain") == ""
    assert cp.undo(redo=True).startswith("Redid")
    assert Path("a.txt").read_text() == "a by agent\n" and head(repo) == pushed
    assert git(repo, "status", "--porcelain") == " M a.txt\n"  # uncommitted, the user's to commit


def test_undo_and_redo_through_the_cli_with_a_remote_behind(remote, repo):
    Path("c.txt").write_text("user's own, committed, not pushed\n")
    git(repo, "add", "c.txt")
    git(repo, "commit", "-qm", "user: unpushed")
    state = user_state(repo)
    as_agent()
    turn("change a", "a.txt", "a1\n")
    turn("change b", "b.txt", "b1\n")
    undone = amas("undo", "2")
    assert undone.returncode == 0 and "Undid 2 turns" in undone.stderr, undone.stderr
    assert (Path("a.txt").read_text(), Path("b.txt").read_text()) == (
        "a committed\n",
        "b committed\n",
    )
    assert user_state(repo) == state
    redone = amas("redo")
    assert redone.returncode == 0 and "Redid 2 turns" in redone.stderr, redone.stderr
    assert (Path("a.txt").read_text(), Path("b.txt").read_text()) == ("a1\n", "b1\n")
    assert own_subjects(repo) == ["[amas] wrote b.txt", "[amas] wrote a.txt"]
    assert git(repo, "log", "-1", "--format=%s") == "user: unpushed\n"
    assert git(repo, "status", "--porcelain") == " M a.txt\n M b.txt\n"


def test_undo_of_an_edit_the_user_committed_and_pushed_leaves_the_branch_and_the_remote(
    remote, repo
):
    """The work tree goes back; the commit stays on the branch and on the remote."""
    as_agent()
    write("a.txt", "a by agent\n")
    git(repo, "commit", "-qam", "user: takes the agent's edit")
    git(repo, "push", "-q", "origin", "main")
    pushed = head(repo)
    assert "Undid" in Checkpoint().undo()
    assert Path("a.txt").read_text() == "a committed\n" and head(repo) == pushed
    assert git(repo, "rev-parse", "origin/main").strip() == pushed
    assert git(repo, "status", "--porcelain") == " M a.txt\n"


def test_checkpoints_work_when_amas_starts_in_a_subfolder(repo, monkeypatch):
    Path("src/pkg").mkdir(parents=True)
    monkeypatch.chdir("src/pkg")
    tools.STATE.update(checkpoint=Checkpoint("."), root=repo)
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    assert write("mod.py", "x = 1\n") == "Wrote mod.py (1 lines)."
    assert own_subjects(repo) == ["[amas] wrote mod.py"]
    assert own_git(repo, "show", "--name-only", "--format=", "refs/amas/keep") == "src/pkg/mod.py\n"
    done = amas("undo")
    assert done.returncode == 0 and "src/pkg/mod.py" in done.stderr, done.stdout + done.stderr
    assert not Path("mod.py").exists() and git(repo, "status", "--porcelain") == ""


def test_git_gc_between_an_undo_and_its_redo(repo):
    Path("a.txt").write_text("uncommitted user edit\n")
    as_agent()
    turn("edit a", "a.txt", "a by agent\n")
    turn("make new", "new/made.txt", "made by agent\n")
    state = user_state(repo)
    cp = Checkpoint()
    cp.undo(2)
    assert Path("a.txt").read_text() == "uncommitted user edit\n"
    assert not Path("new/made.txt").exists()
    for where in (git, own_git):  # the user's gc, and one in Amas's repository too
        where(repo, "reflog", "expire", "--expire=now", "--all")
        where(repo, "gc", "-q", "--prune=now")
    assert cp.undo(redo=True) == "Redid 2 turns: 'edit a': a.txt; 'make new': new/made.txt."
    assert user_state(repo) == state
    assert Path("a.txt").read_text() == "a by agent\n"
    assert Path("new/made.txt").read_text() == "made by agent\n"
    cp.undo(2)  # and the bytes the undo needs survived too
    git(repo, "gc", "-q", "--prune=now")
    cp.undo(2, redo=True)
    cp.undo(2)
    assert Path("a.txt").read_text() == "uncommitted user edit\n"


def test_redo_repeats_as_many_as_the_last_undo(repo):
    as_agent()
    for i in range(3):
        turn(f"a{i}", "a.txt", f"a{i}\n")
    cp = Checkpoint()
    cp.undo(2)
    assert Path("a.txt").read_text() == "a0\n"
    assert cp.undo(redo=True) == "Redid 2 turns: 'a1': a.txt; 'a2': a.txt."
    assert Path("a.txt").read_text() == "a2\n"
    with pytest.raises(Refused, match="Nothing to redo"):
        cp.undo(redo=True)
    cp.undo(3)
    assert Path("a.txt").read_text() == "a committed\n"
    with pytest.raises(Refused, match="Nothing to undo"):
        cp.undo()
    assert cp.undo(4, redo=True).startswith("Redid 3 turns")  # as many as there are
    assert Path("a.txt").read_text() == "a2\n"


def test_a_redo_keeps_what_the_user_changed_after_the_undo_and_names_it(repo):
    as_agent()
    turn("change a", "a.txt", "a1\n")
    turn("change b", "b.txt", "b1\n")
    cp = Checkpoint()
    cp.undo(2)
    Path("b.txt").write_text("user changed b after the undo\n")
    done = cp.undo(2, redo=True)
    assert done.startswith("Redid 2 turns")
    assert done.endswith("Kept as they are, changed since: b.txt.")
    assert Path("a.txt").read_text() == "a1\n"
    assert Path("b.txt").read_text() == "user changed b after the undo\n"


def test_redo_before_any_undo_has_nothing_to_redo(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    with pytest.raises(Refused, match="^Nothing to redo.$"):
        Checkpoint().undo(redo=True)
    assert Path("a.txt").read_text() == "a by agent\n"


def test_redo_after_an_undo_that_kept_a_file_keeps_it_again(repo):
    as_agent()
    turn("change a", "a.txt", "a by agent\n")
    turn("change b", "b.txt", "b by agent\n")
    Path("a.txt").write_text("the user's later edit\n")
    undone = Checkpoint().undo(2)
    assert undone.startswith("Undid 2 turns") and "changed since: a.txt." in undone
    assert Path("b.txt").read_text() == "b committed\n"
    redone = Checkpoint().undo(redo=True)
    assert redone.startswith("Redid 2 turns") and "changed since: a.txt." in redone
    assert Path("b.txt").read_text() == "b by agent\n"
    assert Path("a.txt").read_text() == "the user's later edit\n"


def test_a_user_commit_after_the_undo_does_not_block_redo_and_the_branch_stays(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    cp = Checkpoint()
    cp.undo()
    Path("c.txt").write_text("user's\n")
    git(repo, "add", "c.txt")
    git(repo, "commit", "-qm", "user: after the undo")
    commit, index = head(repo), git(repo, "ls-files", "-s")
    assert cp.undo(redo=True).startswith("Redid")
    assert (head(repo), git(repo, "ls-files", "-s")) == (commit, index)
    assert Path("a.txt").read_text() == "a by agent\n" and Path("c.txt").read_text() == "user's\n"
    assert git(repo, "status", "--porcelain") == " M a.txt\n"


def test_undo_and_redo_in_an_empty_repository_never_make_a_commit(isolated):
    git_init(isolated)
    as_agent()
    write("first.txt", "first\n")
    cp = Checkpoint()
    cp.undo()
    assert branch_head(isolated) == ""
    assert not Path("first.txt").exists() and git(isolated, "ls-files") == ""
    cp.undo(redo=True)
    assert own_subjects(isolated) == ["[amas] wrote first.txt"]
    assert branch_head(isolated) == ""
    assert Path("first.txt").read_text() == "first\n"
    assert git(isolated, "status", "--porcelain") == "?? first.txt\n"


def commit_during_the_undo(monkeypatch, root: Path) -> None:
    """The user commits a file of their own while an undo is under way, before it writes files."""
    restore = Checkpoint._restore

    def commit_then_restore(self, *args, **kwargs):
        Path(root, "user.txt").write_text("committed meanwhile\n")
        git(root, "add", "user.txt")
        git(root, "commit", "-qm", "user: meanwhile")
        monkeypatch.setattr(Checkpoint, "_restore", restore)  # once
        restore(self, *args, **kwargs)

    monkeypatch.setattr(Checkpoint, "_restore", commit_then_restore)


def test_a_first_commit_made_during_the_undo_is_never_lost(isolated, monkeypatch):
    git_init(isolated)
    as_agent()
    write("first.txt", "first\n")
    commit_during_the_undo(monkeypatch, isolated)
    assert Checkpoint().undo().startswith("Undid")
    assert git(isolated, "log", "--format=%s") == "user: meanwhile\n"
    assert not Path("first.txt").exists()
    assert Path("user.txt").read_text() == "committed meanwhile\n"


def test_a_new_edit_keeps_the_redo_stack_and_redo_keeps_the_new_edit(repo):
    as_agent()
    turn("edit a", "a.txt", "a by agent\n")
    cp = Checkpoint()
    cp.undo()
    turn("edit b", "b.txt", "b by agent, a new edit\n")
    assert [request for _, request, _ in Checkpoint().history()] == ["edit b"]
    assert Checkpoint().undo(redo=True) == "Redid 1 turn: 'edit a': a.txt."
    assert Path("a.txt").read_text() == "a by agent\n"
    assert Path("b.txt").read_text() == "b by agent, a new edit\n"
    assert cp.undo() == "Undid 1 turn: 'edit a': a.txt."  # redo had put it on top
    turn("edit a again", "a.txt", "a, the agent's second try\n")
    assert Checkpoint().undo(1, redo=True).endswith("Kept as they are, changed since: a.txt.")
    assert Path("a.txt").read_text() == "a, the agent's second try\n"  # the newer change stays


def test_history_lists_the_newest_first_and_undo_takes_it_back(repo):
    as_agent()
    for name in ("a.txt", "b.txt", "c.txt"):
        turn(f"write {name}", name, f"{name} by agent\n")
    shown = Checkpoint().history(2)
    assert [row[1:] for row in shown] == [("write c.txt", "c.txt"), ("write b.txt", "b.txt")]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", shown[0][0])
    Checkpoint().undo()
    assert Checkpoint().history()[0][1] == "write b.txt"


def test_history_shows_the_latest_twenty_by_default(repo):
    as_agent()
    for i in range(21):
        turn(f"a{i}", "a.txt", f"a{i}\n")
    shown = Checkpoint().history()
    assert len(shown) == 20 and shown[0][1] == "a20" and shown[-1][1] == "a1"


# Exact bytes and modes, the index left alone ----------------------------------------------------


def test_an_executable_keeps_mode_100755_in_the_checkpoint_and_after_undo_and_redo(repo):
    assert entry(repo, "run.sh").startswith("100755")
    as_agent()
    write("run.sh", "#!/bin/sh\necho agent\n")
    assert own_entry(repo, "run.sh").startswith("100755")
    assert entry(repo, "run.sh").startswith("100755") and os.access("run.sh", os.X_OK)
    assert git(repo, "status", "--porcelain") == " M run.sh\n"  # content only, no mode change
    cp = Checkpoint()
    cp.undo()
    assert Path("run.sh").read_text() == "#!/bin/sh\necho committed\n"
    assert os.access("run.sh", os.X_OK) and git(repo, "status", "--porcelain") == ""
    cp.undo(redo=True)
    assert Path("run.sh").read_text() == "#!/bin/sh\necho agent\n"
    assert entry(repo, "run.sh").startswith("100755") and os.access("run.sh", os.X_OK)
    assert git(repo, "status", "--porcelain") == " M run.sh\n"


def test_an_ordinary_file_stays_100644(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    write("fresh.txt", "new\n")
    assert own_entry(repo, "a.txt").startswith("100644")
    assert own_entry(repo, "fresh.txt").startswith("100644")
    assert not os.access("a.txt", os.X_OK) and not os.access("fresh.txt", os.X_OK)
    assert git(repo, "status", "--porcelain") == " M a.txt\n?? fresh.txt\n"


def test_undo_leaves_the_users_own_index_entry_and_gives_back_the_file_and_its_mode(repo):
    """The user made a.txt executable and staged other bytes: the agent's edit and its undo leave
    the index as the user made it, and undo gives back the unstaged bytes and the mode."""
    Path("a.txt").chmod(0o755)
    Path("a.txt").write_text("staged by the user\n")
    git(repo, "add", "a.txt")
    Path("a.txt").write_text("unstaged on top\n")
    staged, status = entry(repo, "a.txt"), git(repo, "status", "--porcelain")
    assert staged.startswith("100755")
    as_agent()
    write("a.txt", "a by agent\n")
    assert own_entry(repo, "a.txt").startswith("100755") and entry(repo, "a.txt") == staged
    Checkpoint().undo()
    assert entry(repo, "a.txt") == staged and git(repo, "status", "--porcelain") == status
    assert Path("a.txt").read_text() == "unstaged on top\n" and os.access("a.txt", os.X_OK)


def test_an_edit_keeps_bytes_that_are_not_utf8_and_undo_gives_them_back(repo):
    Path("latin1.txt").write_bytes(b"caf\xe9 old\n")
    as_agent()
    result = tools.run("edit_file", {"path": "latin1.txt", "old_str": "old", "new_str": "new"})
    assert result == "Edited latin1.txt (1 lines)."
    assert Path("latin1.txt").read_bytes() == b"caf\xe9 new\n"
    Checkpoint().undo()
    assert Path("latin1.txt").read_bytes() == b"caf\xe9 old\n"


def test_redo_of_a_file_whose_folder_the_user_deleted(repo):
    as_agent()
    write("pkg/sub/mod.py", "x = 1\n")
    cp = Checkpoint()
    cp.undo()
    assert not Path("pkg/sub/mod.py").exists()
    subprocess.run(["rm", "-rf", "pkg"], check=True)
    assert cp.undo(redo=True).startswith("Redid")
    assert Path("pkg/sub/mod.py").read_text() == "x = 1\n"
    assert git(repo, "status", "--porcelain") == "?? pkg/\n"


def test_file_names_starting_with_a_dash(repo):
    Path("-e.txt").write_text("dash committed\n")
    git(repo, "add", "--", "-e.txt")
    git(repo, "commit", "-qm", "user: a dash file")
    Path("-e.txt").write_text("dash, uncommitted\n")
    as_agent()
    assert write("-e.txt", "dash by agent\n") == "Wrote -e.txt (1 lines)."
    assert write("--new.txt", "new dash file\n") == "Wrote --new.txt (1 lines)."
    assert own_subjects(repo) == ["[amas] wrote --new.txt", "[amas] wrote -e.txt"]
    assert own_git(repo, "show", "refs/amas/keep:--new.txt") == "new dash file\n"
    cp = Checkpoint()
    assert cp.undo().startswith("Undid 1 turn: '': --new.txt, -e.txt.")
    assert Path("-e.txt").read_text() == "dash, uncommitted\n" and not Path("--new.txt").exists()
    assert cp.undo(redo=True).startswith("Redid")
    assert Path("-e.txt").read_text() == "dash by agent\n"
    assert Path("--new.txt").read_text() == "new dash file\n"
    assert git(repo, "status", "--porcelain") == " M -e.txt\n?? --new.txt\n"
    Path("-e.txt").write_text("the user changed it again\n")
    assert cp.undo().endswith("Kept as they are, changed since: -e.txt.")
    assert Path("-e.txt").read_text() == "the user changed it again\n"
    assert not Path("--new.txt").exists()


# Undo while git waits on the user: the work tree only ---------------------------------------------


def side_commit(repo: Path, content: str) -> str:
    """A commit on another branch that changes b.txt; main changes it too, so applying conflicts."""
    git(repo, "checkout", "-qb", "side")
    Path("b.txt").write_text(content)
    git(repo, "commit", "-qm", "user: side change", "b.txt")
    sha = head(repo)
    git(repo, "checkout", "-q", "main")
    Path("b.txt").write_text("main's b\n")
    git(repo, "commit", "-qm", "user: main change", "b.txt")
    return sha


def stopped(repo: Path, *args: str) -> None:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)
    assert done.returncode, done  # it stopped on the conflict and waits for the user


def start_cherry_pick(repo: Path) -> None:
    stopped(repo, "cherry-pick", side_commit(repo, "side's b\n"))


def start_revert(repo: Path) -> None:
    Path("b.txt").write_text("b changed\n")
    git(repo, "commit", "-qm", "user: change b", "b.txt")
    Path("b.txt").write_text("b changed again\n")
    git(repo, "commit", "-qm", "user: change b again", "b.txt")
    stopped(repo, "revert", "--no-edit", "HEAD~1")


def start_am(repo: Path) -> None:
    sha = side_commit(repo, "side's b\n")
    patch = git(repo, "format-patch", "-1", "--stdout", sha)
    Path("../side.patch").write_text(patch)
    stopped(repo, "am", "../side.patch")


@pytest.mark.parametrize(
    "start, name",
    [
        (start_cherry_pick, "CHERRY_PICK_HEAD"),
        (start_revert, "REVERT_HEAD"),
        (start_am, "rebase-apply"),
    ],
)
def test_undo_and_redo_while_git_is_busy_write_only_the_work_tree(repo, start, name):
    """A cherry-pick, revert or `git am` stopped on a conflict: undo and redo take back and put
    back the agent's file, and leave HEAD, the index and git's operation as the user has them."""
    as_agent()
    turn("a1", "a.txt", "a1\n")
    turn("a2", "a.txt", "a2\n")
    Checkpoint().undo()  # something to undo, and something to redo
    start(repo)
    assert Path(".git", name).exists()
    head_and_index = head(repo), git(repo, "ls-files", "-s")
    assert Checkpoint().undo() == "Undid 1 turn: 'a1': a.txt."
    assert Path("a.txt").read_text() == "a committed\n"
    assert (head(repo), git(repo, "ls-files", "-s")) == head_and_index
    assert Checkpoint().undo(redo=True) == "Redid 1 turn: 'a1': a.txt."
    assert Path("a.txt").read_text() == "a1\n" and Path(".git", name).exists()
    done = amas("undo")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert (head(repo), git(repo, "ls-files", "-s")) == head_and_index
    assert Path(".git", name).exists() and Path("a.txt").read_text() == "a committed\n"




@pytest.mark.parametrize(
    "start",
    [
        start_cherry_pick,
        start_revert,
        start_am,
    ],
)
def test_an_edit_while_git_is_busy_is_checkpointed_and_undone(repo, start, capsys):
    start(repo)
    before = head(repo), git(repo, "ls-files", "-s")
    as_agent()
    capsys.readouterr()
    assert write("a.txt", "a by agent during it\n") == "Wrote a.txt (1 lines)."
    assert "No snapshot" not in capsys.readouterr().err
    assert "a.txt" in Checkpoint().undo() and Path("a.txt").read_text() == "a committed\n"
    assert (head(repo), git(repo, "ls-files", "-s")) == before


def test_a_commit_made_during_the_undo_is_never_lost(repo, monkeypatch):
    as_agent()
    write("a.txt", "a by agent\n")
    commit_during_the_undo(monkeypatch, repo)
    assert Checkpoint().undo().startswith("Undid")
    assert git(repo, "log", "--format=%s", "-2") == "user: meanwhile\nuser: initial\n"
    assert Path("a.txt").read_text() == "a committed\n"
    assert Path("user.txt").read_text() == "committed meanwhile\n"


def test_an_undo_git_refuses_leaves_the_files_and_the_index_and_can_be_tried_again(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    Path(".git/amas/repo/index.lock").write_text("")  # another git process holds the snapshots
    state = user_state(repo)
    with pytest.raises(Refused, match="index.lock"):
        Checkpoint().undo()
    assert user_state(repo) == state and Path("a.txt").read_text() == "a by agent\n"
    Path(".git/amas/repo/index.lock").unlink()
    assert Checkpoint().undo().startswith("Undid 1 turn")
    assert Path("a.txt").read_text() == "a committed\n"


def test_a_stale_branch_lock_does_not_stop_undo_and_the_branch_stays(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    Path(".git/refs/heads/main.lock").write_text("")
    branch = head(repo)
    done = amas("undo", cwd=repo)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert Path("a.txt").read_text() == "a committed\n" and head(repo) == branch
    assert git(repo, "status", "--porcelain") == "" and Path(".git/refs/heads/main.lock").exists()


def test_a_stale_branch_lock_does_not_stop_an_edit_or_its_checkpoint(repo):
    """Another git process holds the branch (refs/heads/main.lock): Amas never writes the
    branch, so the edit is made and recorded."""
    as_agent()
    Path(".git/refs/heads/main.lock").write_text("")
    assert write("a.txt", "a by agent\n") == "Wrote a.txt (1 lines)."
    assert own_subjects(repo) == ["[amas] wrote a.txt"]
    assert head(repo) == git(repo, "rev-parse", "main").strip()
    assert "a.txt" in Checkpoint().undo() and Path("a.txt").read_text() == "a committed\n"


def test_a_failed_checkpoint_leaves_the_users_index_entry_and_the_file(repo):
    Path("a.txt").write_text("staged by the user\n")
    git(repo, "add", "a.txt")
    staged = entry(repo, "a.txt")
    as_agent()
    Path(".git/amas/repo/index.lock").write_text("")  # no snapshot can be taken
    assert "declined" in write("a.txt", "a by agent\n")  # no /undo: --yes asks, no terminal
    assert entry(repo, "a.txt") == staged and Path("a.txt").read_text() == "staged by the user\n"


def test_stars_are_written_unless_they_would_replace_a_masked_secret(isolated, monkeypatch):
    as_agent()
    assert write("notes.md", "***bold italic***\n").startswith("Wrote")
    assert write("notes.md", "*** again\n").startswith("Wrote")
    assert Path("notes.md").read_text() == "*** again\n"
    monkeypatch.setenv("SERVICE_TOKEN", "tok-secret-value")
    Path(".env").write_text("SERVICE_TOKEN=tok-secret-value\n")
    refused = write(".env", "SERVICE_TOKEN=***\n")
    assert refused.startswith("Error: .env has secrets you see as ***")
    assert Path(".env").read_text() == "SERVICE_TOKEN=tok-secret-value\n"
    assert write(".env", "SERVICE_TOKEN=tok-new-value\n").startswith("Wrote")


# Paths stay inside -------------------------------------------------------------------------------


def test_a_sibling_folder_sharing_the_prefix_is_outside(tmp_path, isolated):
    sibling = tmp_path / f"{isolated.name}-old"
    sibling.mkdir()
    (sibling / "x.txt").write_text("the old project's file\n")
    as_agent()
    assert not tools.inside(sibling / "x.txt") and not tools.inside(sibling)
    assert tools.inside(isolated) and tools.inside(isolated / "deep" / "new.txt")
    result = write(str(sibling / "x.txt"), "pwned\n")
    assert result.startswith("Error: refusing to write") and str(sibling / "x.txt") in result
    assert (sibling / "x.txt").read_text() == "the old project's file\n"
    result = tools.run("read_file", {"path": str(sibling / "x.txt")})
    assert result.startswith("Error: reading") and "was not allowed" in result


def test_reading_outside_under_yes_asks_and_is_refused_without_a_terminal(
    tmp_path, isolated, capsys
):
    outside = tmp_path / "outside.txt"
    outside.write_text("outside text\n")
    Path("inside.txt").write_text("inside text\n")
    as_agent()  # --yes
    result = tools.run("read_file", {"path": str(outside)})
    assert "outside text" not in result and "was not allowed" in result
    assert "outside the project? → no" in capsys.readouterr().err
    assert tools.run("read_file", {"path": "inside.txt"}) == "   1 | inside text"
    assert "→ no" not in capsys.readouterr().err  # inside: no question


def test_reading_outside_is_allowed_when_the_user_says_yes(tmp_path, isolated, monkeypatch):
    outside = tmp_path / "outside.txt"
    outside.write_text("outside text\n")
    as_agent()
    leader, follower = pty.openpty()  # stdin is a terminal, as when a user runs amas
    monkeypatch.setattr(sys, "stdin", os.fdopen(follower))
    with terminal("y"):
        assert tools.run("read_file", {"path": str(outside)}) == "   1 | outside text"
    os.close(leader)


def test_writes_stay_out_of_dot_git_but_not_out_of_similar_names(repo):
    as_agent()
    assert tools.run("read_file", {"path": ".git/HEAD"}) == "   1 | ref: refs/heads/main"
    result = write(".git/hooks/pre-commit", "#!/bin/sh\n")
    assert (
        result.startswith("Error: refusing to write") and not Path(".git/hooks/pre-commit").exists()
    )
    assert write(".github/ci.yml", "on: push\n").startswith("Wrote")
    assert write("docs/.git-notes", "notes\n").startswith("Wrote")
    assert Path(".github/ci.yml").read_text() == "on: push\n"


# The command judge --------------------------------------------------------------------------------


def shell(command: str) -> str:
    return tools.run("shell_command", {"command": command})


DECLINED = "The user declined to run this command."


def test_git_checkout_of_an_existing_file_runs_under_yes_and_undo_takes_it_back(repo):
    """#37: the snapshot before the command holds the uncommitted work git checkout throws away."""
    git(repo, "branch", "feature")
    Path("a.txt").write_text("uncommitted work\n")
    as_agent()
    assert not tools.destructive("git checkout a.txt")
    assert shell("git checkout -q HEAD a.txt").endswith("[exit code 0]")
    assert Path("a.txt").read_text() != "uncommitted work\n"
    assert Checkpoint().undo() == "Undid 1 turn: '': a.txt."
    assert Path("a.txt").read_text() == "uncommitted work\n"
    Path("checkout").write_text("a file named like the subcommand is no argument of it\n")
    result = shell("git checkout -q feature")  # a branch, not a file: it runs
    assert result.endswith("[exit code 0]")
    assert git(repo, "branch", "--show-current") == "feature\n"
    assert Path("a.txt").read_text() == "uncommitted work\n"  # git carried the edit over


def test_git_with_no_subcommand_or_only_global_options_runs_unasked(repo):
    as_agent()
    version = shell("git --version")
    assert version.startswith("git version") and version.endswith("[exit code 0]")
    bare = shell("git")
    assert "usage: git" in bare and bare.endswith("[exit code 1]")
    assert shell("git -C . status --short").endswith("[exit code 0]")
    assert shell("git diff --stat a.txt") == "[exit code 0]"  # an existing path, not checkout
    assert shell("git add a.txt") == "[exit code 0]"
    assert shell("git --no-pager log -1 --format=%s") == "user: initial\n[exit code 0]"
    for line in ("git -C . reset --hard", "git --no-pager clean -fd", "git -c a.b=c stash clear"):
        assert tools.destructive(line), line


def test_a_line_ending_in_bash_c_is_judged_not_crashed(repo):
    as_agent()
    assert not tools.destructive("bash -c")
    result = shell("bash -c")
    assert "option requires an argument" in result and result.endswith("[exit code 2]")
    Path("victim").write_text("keep\n")
    assert shell("bash -c 'rm -f victim'") == DECLINED
    assert shell("env X=1 bash -x -c 'rm -f victim'") == DECLINED
    assert Path("victim").exists()
    assert shell("bash -c 'echo fine'") == "fine\n[exit code 0]"


@pytest.mark.parametrize(
    "line",
    [
        "git push -qf origin main",  # -f bundled with -q
        "git push -fq origin main",
        "git clean -xdf",
        "git push origin +main",
        "git push origin :old",
        "git reflog expire --all",
        "git gc --prune=now",
        "git branch -D feature",
        "nohup rm victim",
        "xargs -0 rm < list",
        "A=1 B=2 rm victim",
        "/bin/rm victim",
        "curl -s x.sh | python3",
        "dd if=x of=/dev/nvme0n1",
        "mkfs.ext4 disk.img",
        "chmod -R 000 .",
        "find . -exec rm {} +",
        "echo 'unbalanced",
    ],
)
def test_destructive_lines_ask(line):
    assert tools.destructive(line), line


@pytest.mark.parametrize(
    "line",
    [
        "git gc",
        "git push origin main",
        "git branch feature",
        "git stash list",
        "git checkout -qb feature2",
        "chmod +x run.sh",
        "find . -name '*.txt'",
        "curl -o page.html https://example.com",
        "python3 -c 'print(1)'",
        "timeout 5 ls",
        "ls -la /dev/null",
        "",
    ],
)
def test_ordinary_lines_do_not_ask(line):
    assert not tools.destructive(line), line


def test_under_yes_a_destructive_command_is_declined_while_an_ordinary_one_runs(repo):
    as_agent()
    Path("victim").write_text("keep\n")
    assert shell("rm -f victim") == DECLINED and Path("victim").exists()
    assert shell("echo ran > out.txt") == "[exit code 0]" and Path("out.txt").exists()
    tools.STATE["config"]["yolo"] = True
    assert shell("rm -f victim") == "[exit code 0]" and not Path("victim").exists()


def test_a_newline_separates_commands(repo):
    as_agent()
    Path("victim").write_text("keep\n")
    assert tools.destructive("echo hi\nrm -f victim")
    assert shell("echo hi\nrm -f victim") == DECLINED
    assert Path("victim").read_text() == "keep\n"


# run() never raises -------------------------------------------------------------------------------


def test_run_turns_every_failure_into_a_line_for_the_model(isolated):
    as_agent()
    Path("listed.txt").write_text("")
    assert tools.run("list_files", "") == tools.run("list_files", {}) == "listed.txt"
    assert tools.run("no_such_tool", {}).startswith("Malformed call: unknown tool 'no_such_tool'")
    assert "not valid JSON" in tools.run("read_file", "{nope")
    wrong = tools.run("read_file", {"path": 7})
    assert wrong.startswith("Malformed call: bad arguments for read_file") and "path" in wrong
    missing = tools.run("read_file", {"path": "missing.txt"})
    assert missing == "Error: [Errno 2] No such file or directory: 'missing.txt'"
    Path("f.txt").write_text("one two\n")
    refused = tools.run("edit_file", {"path": "f.txt", "old_str": "zzz", "new_str": "y"})
    assert refused.startswith("Error: old_str was not found in f.txt")
    assert tools.run("shell_command", '{"command": "true"}') == "[exit code 0]"
    assert tools.run("read_file", '{"path": "f.txt"}') == "   1 | one two"


# Secrets stay masked, nothing else is ------------------------------------------------------------


def test_environment_secrets_are_masked_and_ordinary_values_are_not(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_tokenvalue123")
    monkeypatch.setenv("MISTRAL_API_KEY", "mistral-key-456")
    monkeypatch.setenv("EDITOR", "vimvimvim")
    monkeypatch.setenv("EMPTY_TOKEN", "")
    monkeypatch.setenv("SHORT_TOKEN", "abc")
    monkeypatch.setenv("FOUR_TOKEN", "wxyz")
    monkeypatch.setenv("TOKENIZER_PATH", "/opt/tokenizer")  # a name merely containing TOKEN
    text = "gh ghp_tokenvalue123 m mistral-key-456 e vimvimvim abc wxyz /opt/tokenizer"
    config = settings.load(".")
    assert settings.redact(text, config) == "gh *** m *** e vimvimvim abc *** /opt/tokenizer"


def test_config_secrets_are_masked_longest_first_and_ordinary_values_survive(isolated):
    home = Path(os.environ["AMAS_HOME"])
    (home / "config.yaml").write_text(
        "model: openai/gpt-4o-mini\n"
        "api_key: sk-abcd\n"
        "db_password: hunter2hunter2\n"
        "auth_token: sk-abcd-longer\n"
        "git_token: a-hunter2hunter2\n"
        "shell_timeout: 45\n"
        "empty_secret: ''\n"
        "short_token: xyz\n"
        "numeric_key: 123456\n"
    )
    config = settings.load(".")
    assert config["model"] == "openai/gpt-4o-mini" and config["shell_timeout"] == 45
    text = "model openai/gpt-4o-mini key sk-abcd pw hunter2hunter2 tok sk-abcd-longer t 45 xyz"
    assert (
        settings.redact(text, config) == "model openai/gpt-4o-mini key *** pw *** tok *** t 45 xyz"
    )
    assert settings.redact("[a-hunter2hunter2] 123456", config) == "[***] 123456"


def test_a_config_without_its_secrets_list_is_still_masked():
    assert settings.redact("key sk-only-here", {"api_key": "sk-only-here"}) == "key ***"
    assert settings.redact("nothing secret", {"model": "nothing secret"}) == "nothing secret"


def test_a_projects_secret_and_the_users_are_both_masked(isolated):
    (Path(os.environ["AMAS_HOME"]) / "config.yaml").write_text("api_key: sk-user-111\n")
    Path(".amas").mkdir()
    Path(".amas/config.yaml").write_text("api_key: sk-project-222\nmodel: project/model\n")
    config = settings.load(".")
    assert config["model"] == "project/model"
    assert settings.redact("sk-user-111 sk-project-222", config) == "*** ***"
    cli = settings.load(".", {"api_key": "sk-cli-333", "model": None})
    assert cli["model"] == "project/model"
    assert settings.redact("sk-user-111 sk-project-222 sk-cli-333", cli) == "*** *** ***"


def test_a_project_cannot_set_personal_settings(isolated):
    (Path(os.environ["AMAS_HOME"]) / "config.yaml").write_text("api_base: http://mine\n")
    Path(".amas").mkdir()
    Path(".amas/config.yaml").write_text(
        "auto_accept: true\nyolo: true\napi_base: http://evil\nshell_timeout: 7\n"
    )
    config = settings.load(".")
    assert not config.get("auto_accept") and not config.get("yolo")
    assert config["api_base"] == "http://mine"
    assert config["shell_timeout"] == 7


def test_without_amas_home_the_config_comes_from_home(isolated, tmp_path, monkeypatch):
    home = tmp_path / "user-home"
    (home / ".config" / "amas").mkdir(parents=True)
    (home / ".config" / "amas" / "config.yaml").write_text(
        "model: home/model\napi_key: sk-from-home-789\n"
    )
    monkeypatch.delenv("AMAS_HOME")
    monkeypatch.setenv("HOME", str(home))
    config = settings.load(".")
    assert config["model"] == "home/model"
    assert settings.redact("key=sk-from-home-789", config) == "key=***"
    monkeypatch.setenv("AMAS_HOME", "")  # set but empty: the same as unset
    assert settings.load(".")["model"] == "home/model"


@pytest.mark.parametrize("where", ["user", "project"])
def test_a_config_file_holding_a_list_is_a_clear_error(isolated, where):
    home = Path(os.environ["AMAS_HOME"])
    file = home / "config.yaml" if where == "user" else isolated / ".amas" / "config.yaml"
    file.parent.mkdir(exist_ok=True)
    file.write_text("- model: x\n- api_key: y\n")
    with pytest.raises(ValueError, match="must hold a mapping of settings, not list"):
        settings.load(".")
    done = amas("checkpoint")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "config.yaml must hold a mapping of settings, not list" in done.stderr


def test_an_empty_or_broken_config_file(isolated):
    file = Path(os.environ["AMAS_HOME"]) / "config.yaml"
    file.write_text("")
    assert settings.load(".")["model"] == settings.DEFAULT_CONFIG["model"]
    file.write_bytes(b"model: \xff\xfe\n")
    with pytest.raises(ValueError, match="is not valid YAML"):
        settings.load(".")
    file.write_text("model: [unclosed\n")
    with pytest.raises(ValueError, match=f"{file} is not valid YAML"):
        settings.load(".")


def test_the_exec_bit_survives_a_write_without_checkpoints(isolated):
    Path("tool.sh").write_text("#!/bin/sh\n")
    Path("tool.sh").chmod(0o750)
    as_agent()
    tools.STATE["checkpoint"] = Checkpoint(".", enabled=False)
    write("tool.sh", "#!/bin/sh\necho new\n")
    assert stat.S_IMODE(Path("tool.sh").stat().st_mode) == 0o750
