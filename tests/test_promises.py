"""Tests that would catch a broken promise (issue #26): each guards something a user would notice,
found by mutation testing (bench/mutate.py) where a deliberately broken checkpoint.py, tools.py or
config.py still passed. Real git repositories with a bare remote, real files with modes, real
environment variables, the real CLI."""

import os
import pty
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import amas, git, git_init, terminal
from git.exc import GitCommandError

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


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def entry(repo: Path, path: str) -> str:
    """The index entry (mode, blob, stage) of a path, as `git ls-files -s` shows it."""
    return git(repo, "ls-files", "-s", "--", path).split("\t")[0]


def tree_entry(repo: Path, rev: str, path: str) -> str:
    return git(repo, "ls-tree", rev, "--", path).split("\t")[0]


def agent_commits(repo: Path) -> list[str]:
    return [s for s in git(repo, "log", "--format=%s").splitlines() if s.startswith("[amas]")]


# Redo works in an ordinary repository ------------------------------------------------------------


def test_undo_then_redo_with_an_up_to_date_remote(remote, repo):
    """The checkpoint's parent is pushed (origin/main is there): only undo of a pushed checkpoint
    is refused, never the redo that puts an unpushed one back."""
    as_agent()
    assert write("a.txt", "a by agent\n") == "Wrote a.txt (1 lines)."
    checkpoint = head(repo)
    cp = Checkpoint()
    assert cp.undo().startswith("Undid")
    assert Path("a.txt").read_text() == "a committed\n"
    assert head(repo) == git(repo, "rev-parse", "origin/main").strip()  # the pushed commit
    assert cp.redo().startswith("Redid")
    assert Path("a.txt").read_text() == "a by agent\n" and head(repo) == checkpoint
    assert git(repo, "status", "--porcelain") == ""


def test_undo_and_redo_through_the_cli_with_a_remote_behind(remote, repo):
    Path("c.txt").write_text("user's own, committed, not pushed\n")
    git(repo, "add", "c.txt")
    git(repo, "commit", "-qm", "user: unpushed")
    as_agent()
    write("a.txt", "a1\n")
    write("b.txt", "b1\n")
    undone = amas("undo", "2")
    assert undone.returncode == 0 and "Undid" in undone.stderr, undone.stdout + undone.stderr
    assert (Path("a.txt").read_text(), Path("b.txt").read_text()) == (
        "a committed\n",
        "b committed\n",
    )
    assert git(repo, "log", "-1", "--format=%s") == "user: unpushed\n"
    redone = amas("redo")
    assert redone.returncode == 0 and "Redid" in redone.stderr, redone.stdout + redone.stderr
    assert (Path("a.txt").read_text(), Path("b.txt").read_text()) == ("a1\n", "b1\n")
    assert agent_commits(repo) == ["[amas] wrote b.txt", "[amas] wrote a.txt"]
    assert git(repo, "status", "--porcelain") == ""


def test_undo_of_a_pushed_checkpoint_loses_nothing_the_remote_keeps_it(remote, repo):
    """#37 coarsening (PLAN.md): the "already pushed" refusal went for room; undo then moves the
    branch behind its remote, and the pushed commit stays there, for a pull to bring back."""
    as_agent()
    write("a.txt", "a by agent\n")
    git(repo, "push", "-q", "origin", "main")
    pushed = head(repo)
    assert "Undid" in Checkpoint().undo()
    assert Path("a.txt").read_text() == "a committed\n" and head(repo) != pushed
    assert git(repo, "rev-parse", "origin/main").strip() == pushed


def test_checkpoints_work_when_amas_starts_in_a_subfolder(repo, monkeypatch):
    Path("src/pkg").mkdir(parents=True)
    monkeypatch.chdir("src/pkg")
    tools.STATE.update(checkpoint=Checkpoint("."), root=repo)
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    assert write("mod.py", "x = 1\n") == "Wrote mod.py (1 lines)."
    assert agent_commits(repo) == ["[amas] wrote mod.py"]
    assert git(repo, "show", "--name-only", "--format=", "HEAD") == "src/pkg/mod.py\n"
    done = amas("undo")
    assert done.returncode == 0 and "src/pkg/mod.py" in done.stderr, done.stdout + done.stderr
    assert not Path("mod.py").exists() and agent_commits(repo) == []


def test_git_gc_between_an_undo_and_its_redo(repo):
    Path("a.txt").write_text("uncommitted user edit\n")
    as_agent()
    write("a.txt", "a by agent\n")
    write("new/made.txt", "made by agent\n")
    checkpoint, tree = head(repo), git(repo, "rev-parse", "HEAD^{tree}")
    cp = Checkpoint()
    cp.undo(2)
    assert Path("a.txt").read_text() == "uncommitted user edit\n"
    assert not Path("new/made.txt").exists()
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert cp.redo() == f"Redid {git(repo, 'rev-parse', 'HEAD~1').strip()[:7]} a.txt; " + (
        f"{checkpoint[:7]} new/made.txt."
    )
    assert head(repo) == checkpoint and git(repo, "rev-parse", "HEAD^{tree}") == tree
    assert Path("a.txt").read_text() == "a by agent\n"
    assert Path("new/made.txt").read_text() == "made by agent\n"
    cp.undo(2)  # and the bytes the undo needs survived too
    git(repo, "gc", "-q", "--prune=now")
    cp.redo(2)
    cp.undo(2)
    assert Path("a.txt").read_text() == "uncommitted user edit\n"


def test_redo_repeats_as_many_as_the_last_undo(repo):
    as_agent()
    for i in range(3):
        write("a.txt", f"a{i}\n")
    cp = Checkpoint()
    cp.undo(2)
    assert Path("a.txt").read_text() == "a0\n"
    assert cp.redo().count(" a.txt") == 2 and Path("a.txt").read_text() == "a2\n"
    with pytest.raises(Refused, match="Nothing to redo"):
        cp.redo()
    cp.undo(3)
    assert Path("a.txt").read_text() == "a committed\n"
    with pytest.raises(Refused, match="Nothing to undo"):
        cp.undo()
    with pytest.raises(Refused, match="^Redid 3 of 4, then stopped: Nothing to redo"):
        cp.redo(4)
    assert Path("a.txt").read_text() == "a2\n"


def test_a_partial_redo_says_how_far_it_got(repo):
    as_agent()
    write("a.txt", "a1\n")
    write("b.txt", "b1\n")
    cp = Checkpoint()
    cp.undo(2)
    Path("b.txt").write_text("user changed b after the undo\n")
    with pytest.raises(Refused) as refused:
        cp.redo(2)
    assert str(refused.value).startswith("Redid 1 of 2, then stopped:")
    assert "b.txt was changed" in str(refused.value)
    assert Path("a.txt").read_text() == "a1\n"
    assert Path("b.txt").read_text() == "user changed b after the undo\n"


def test_redo_before_any_undo_has_nothing_to_redo(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    with pytest.raises(Refused, match="^Nothing to redo on this branch"):
        Checkpoint().redo()
    assert Path("a.txt").read_text() == "a by agent\n"


def test_redo_after_an_undo_that_stopped_part_way(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    write("b.txt", "b by agent\n")
    Path("a.txt").write_text("the user's later edit\n")
    with pytest.raises(Refused, match="^Undid 1 of 2, then stopped: a.txt was changed"):
        Checkpoint().undo(2)
    assert Path("b.txt").read_text() == "b committed\n"
    assert Checkpoint().redo() == f"Redid {head(repo)[:7]} b.txt."
    assert Path("b.txt").read_text() == "b by agent\n"
    assert Path("a.txt").read_text() == "the user's later edit\n"


def test_redo_refuses_when_the_user_committed_after_the_undo(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    cp = Checkpoint()
    cp.undo()
    Path("c.txt").write_text("user's\n")
    git(repo, "add", "c.txt")
    git(repo, "commit", "-qm", "user: after the undo")
    state = head(repo), git(repo, "ls-files", "-s"), git(repo, "status", "--porcelain")
    with pytest.raises(Refused, match="HEAD"):
        cp.redo()
    assert (head(repo), git(repo, "ls-files", "-s"), git(repo, "status", "--porcelain")) == state
    assert Path("a.txt").read_text() == "a committed\n"


def test_undo_and_redo_of_the_first_commit_in_an_empty_repository(isolated):
    git_init(isolated)
    as_agent()
    write("first.txt", "first\n")
    cp = Checkpoint()
    cp.undo()
    unborn = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", "HEAD"], capture_output=True, check=False
    )
    assert unborn.returncode and not Path("first.txt").exists()
    assert git(isolated, "ls-files") == ""
    cp.redo()
    assert agent_commits(isolated) == ["[amas] wrote first.txt"]
    assert (
        Path("first.txt").read_text() == "first\n" and git(isolated, "status", "--porcelain") == ""
    )


def commit_during_the_checks(monkeypatch, root: Path) -> None:
    """The user commits between an undo's checks and its move of the branch."""
    check = Checkpoint._check

    def check_then_commit(self, *args, **kwargs):
        check(self, *args, **kwargs)
        git(root, "commit", "-q", "--allow-empty", "-m", "user: meanwhile")

    monkeypatch.setattr(Checkpoint, "_check", check_then_commit)


def test_a_first_commit_made_during_the_undo_is_never_lost(isolated, monkeypatch):
    """The undo of the only checkpoint deletes the branch; `update-ref -d` is given the expected
    old value, so a commit the user makes meanwhile survives."""
    git_init(isolated)
    as_agent()
    write("first.txt", "first\n")
    commit_during_the_checks(monkeypatch, isolated)
    with pytest.raises((Refused, GitCommandError)):
        Checkpoint().undo()
    assert git(isolated, "log", "--format=%s") == "user: meanwhile\n[amas] wrote first.txt\n"
    assert Path("first.txt").read_text() == "first\n"


def test_a_new_edit_clears_the_redo_stack(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    cp = Checkpoint()
    cp.undo()
    write("b.txt", "b by agent, a new edit\n")
    with pytest.raises(Refused, match="Nothing to redo"):
        Checkpoint().redo()
    assert Path("a.txt").read_text() == "a committed\n"
    assert agent_commits(repo) == ["[amas] wrote b.txt"]
    assert [message for _, _, message in Checkpoint().history()] == ["[amas] wrote b.txt"]


def test_history_lists_the_newest_first_and_undo_takes_it_back(repo):
    as_agent()
    for name in ("a.txt", "b.txt", "c.txt"):
        write(name, f"{name} by agent\n")
    shown = Checkpoint().history(2)
    assert [m for _, _, m in shown] == ["[amas] wrote c.txt", "[amas] wrote b.txt"]
    assert shown[0][0] == head(repo)[:7]
    Checkpoint().undo()
    assert next(m for _, _, m in Checkpoint().history()) == "[amas] wrote b.txt"


def test_history_shows_the_latest_twenty_by_default(repo):
    as_agent()
    for i in range(21):
        write("a.txt", f"a{i}\n")
    shown = Checkpoint().history()
    assert len(shown) == 20 and shown[0][0] == head(repo)[:7]
    assert shown[-1][0] == git(repo, "rev-parse", "HEAD~19").strip()[:7]


# Exact bytes and index entries -------------------------------------------------------------------


def test_an_executable_keeps_mode_100755_in_the_checkpoint_and_after_undo_and_redo(repo):
    assert entry(repo, "run.sh").startswith("100755")
    as_agent()
    write("run.sh", "#!/bin/sh\necho agent\n")
    assert tree_entry(repo, "HEAD", "run.sh").startswith("100755")
    assert entry(repo, "run.sh").startswith("100755") and os.access("run.sh", os.X_OK)
    assert git(repo, "status", "--porcelain") == ""
    cp = Checkpoint()
    cp.undo()
    assert Path("run.sh").read_text() == "#!/bin/sh\necho committed\n"
    assert entry(repo, "run.sh").startswith("100755") and os.access("run.sh", os.X_OK)
    cp.redo()
    assert Path("run.sh").read_text() == "#!/bin/sh\necho agent\n"
    assert tree_entry(repo, "HEAD", "run.sh").startswith("100755")
    assert entry(repo, "run.sh").startswith("100755") and os.access("run.sh", os.X_OK)
    assert git(repo, "status", "--porcelain") == ""


def test_an_ordinary_file_stays_100644(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    write("fresh.txt", "new\n")
    assert tree_entry(repo, "HEAD", "a.txt").startswith("100644")
    assert tree_entry(repo, "HEAD", "fresh.txt").startswith("100644")
    assert git(repo, "status", "--porcelain") == ""


def test_undo_gives_back_the_users_own_index_entry(repo):
    """The user made a.txt executable and staged other bytes: undo restores both exactly."""
    Path("a.txt").chmod(0o755)
    Path("a.txt").write_text("staged by the user\n")
    git(repo, "add", "a.txt")
    Path("a.txt").write_text("unstaged on top\n")
    staged, status = entry(repo, "a.txt"), git(repo, "status", "--porcelain")
    assert staged.startswith("100755")
    as_agent()
    write("a.txt", "a by agent\n")
    assert tree_entry(repo, "HEAD", "a.txt").startswith("100755")
    Checkpoint().undo()
    assert entry(repo, "a.txt") == staged and git(repo, "status", "--porcelain") == status
    assert Path("a.txt").read_text() == "unstaged on top\n"


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
    assert cp.redo().startswith("Redid")
    assert Path("pkg/sub/mod.py").read_text() == "x = 1\n"
    assert git(repo, "ls-files", "pkg") == "pkg/sub/mod.py\n"
    assert git(repo, "status", "--porcelain") == ""


def test_file_names_starting_with_a_dash(repo):
    Path("-e.txt").write_text("dash committed\n")
    git(repo, "add", "--", "-e.txt")
    git(repo, "commit", "-qm", "user: a dash file")
    Path("-e.txt").write_text("dash, uncommitted\n")
    as_agent()
    assert write("-e.txt", "dash by agent\n") == "Wrote -e.txt (1 lines)."
    assert write("--new.txt", "new dash file\n") == "Wrote --new.txt (1 lines)."
    assert agent_commits(repo) == ["[amas] wrote --new.txt", "[amas] wrote -e.txt"]
    assert git(repo, "show", "HEAD:--new.txt") == "new dash file\n"
    cp = Checkpoint()
    assert cp.undo(2).startswith("Undid")
    assert Path("-e.txt").read_text() == "dash, uncommitted\n" and not Path("--new.txt").exists()
    assert git(repo, "ls-files", "--", "--new.txt") == ""
    assert cp.redo().startswith("Redid")
    assert Path("-e.txt").read_text() == "dash by agent\n"
    assert Path("--new.txt").read_text() == "new dash file\n"
    assert git(repo, "status", "--porcelain") == ""
    Path("-e.txt").write_text("the user changed it again\n")
    with pytest.raises(Refused, match="-e.txt was changed"):
        cp.undo(2)


# Undo refuses when it cannot be exact ------------------------------------------------------------


def side_commit(repo: Path, content: str) -> str:
    """A commit on another branch that changes b.txt; main changes it too, so applying conflicts."""
    git(repo, "checkout", "-qb", "side")
    Path("b.txt").write_text(content)
    git(repo, "commit", "-qam", "user: side change")
    sha = head(repo)
    git(repo, "checkout", "-q", "main")
    Path("b.txt").write_text("main's b\n")
    git(repo, "commit", "-qam", "user: main change")
    return sha


def stopped(repo: Path, *args: str) -> None:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)
    assert done.returncode, done  # it stopped on the conflict and waits for the user


def start_cherry_pick(repo: Path) -> None:
    stopped(repo, "cherry-pick", side_commit(repo, "side's b\n"))


def start_revert(repo: Path) -> None:
    Path("b.txt").write_text("b changed\n")
    git(repo, "commit", "-qam", "user: change b")
    Path("b.txt").write_text("b changed again\n")
    git(repo, "commit", "-qam", "user: change b again")
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
def test_undo_and_redo_refuse_while_git_is_busy(repo, start, name):
    """A cherry-pick, revert or `git am` stopped on a conflict: undo and redo change nothing."""
    as_agent()
    write("a.txt", "a1\n")
    write("a.txt", "a2\n")
    Checkpoint().undo()  # something to undo, and something to redo
    start(repo)
    assert Path(".git", name).exists()
    state = head(repo), git(repo, "ls-files", "-s"), git(repo, "status", "--porcelain")
    for action in (Checkpoint().undo, Checkpoint().redo):
        with pytest.raises(Refused, match=f"\\.git/{name} exists"):
            action()
    assert (head(repo), git(repo, "ls-files", "-s"), git(repo, "status", "--porcelain")) == state
    assert Path("a.txt").read_text() == "a1\n"
    done = amas("undo")
    assert done.returncode == 1 and f".git/{name} exists" in done.stderr
    assert "Traceback" not in done.stderr and head(repo) == state[0]


@pytest.mark.parametrize("start", [start_cherry_pick, start_revert, start_am])
def test_an_edit_while_git_is_busy_makes_no_checkpoint_and_says_so(repo, start, capsys):
    start(repo)
    before = head(repo)
    as_agent()
    capsys.readouterr()
    result = write("a.txt", "a by agent during it\n")
    assert "Wrote a.txt" in result or "not applied" in result
    assert head(repo) == before and agent_commits(repo) == []
    shown = capsys.readouterr().err
    assert "No checkpoint, so no /undo, for this change: .git/" in shown


def test_a_commit_made_during_the_undo_is_never_lost(repo, monkeypatch):
    """update-ref is given the expected old value: a commit the user makes between undo's checks
    and its move of the branch makes git refuse, and the user's commit stays."""
    as_agent()
    write("a.txt", "a by agent\n")
    check = Checkpoint._check

    def check_then_commit(self, *args, **kwargs):
        check(self, *args, **kwargs)
        Path("user.txt").write_text("committed meanwhile\n")
        git(repo, "add", "user.txt")
        git(repo, "commit", "-qm", "user: meanwhile")

    monkeypatch.setattr(Checkpoint, "_check", check_then_commit)
    with pytest.raises((Refused, GitCommandError)):
        Checkpoint().undo()
    assert git(repo, "log", "--format=%s", "-2") == "user: meanwhile\n[amas] wrote a.txt\n"
    assert Path("a.txt").read_text() == "a by agent\n"
    assert Path("user.txt").read_text() == "committed meanwhile\n"


def test_a_refused_undo_leaves_the_index_as_it_was(repo, monkeypatch):
    as_agent()
    write("a.txt", "a by agent\n")
    commit_during_the_checks(monkeypatch, repo)
    with pytest.raises(Refused, match="git refused to move the branch"):
        Checkpoint().undo()
    assert git(repo, "status", "--porcelain") == ""  # the index still matches HEAD and the file


def test_a_stale_branch_lock_makes_undo_refuse_in_one_line_and_change_nothing(repo):
    as_agent()
    write("a.txt", "a by agent\n")
    Path(".git/refs/heads/main.lock").write_text("")
    done = amas("undo", cwd=repo)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "git refused to move the branch" in done.stderr and "main.lock" in done.stderr
    assert git(repo, "status", "--porcelain") == "" and Path("a.txt").read_text() == "a by agent\n"


def test_a_git_failure_while_saving_is_reported_to_the_model(repo):
    """Another git process holds the branch (refs/heads/main.lock): the model is told no
    checkpoint was made, with git's reason, and no half-made checkpoint is left."""
    as_agent()
    Path(".git/refs/heads/main.lock").write_text("")
    result = write("a.txt", "a by agent\n")
    assert "main.lock" in result, result
    if Path("a.txt").read_text() == "a by agent\n":
        assert "No checkpoint was made" in result
    else:
        assert result.startswith("Error: not applied") and "checkpoint" in result
    assert agent_commits(repo) == [] and head(repo) == git(repo, "rev-parse", "main").strip()
    Path(".git/refs/heads/main.lock").unlink()
    with pytest.raises(Refused, match="Nothing to undo"):
        Checkpoint().undo()


def test_a_failed_checkpoint_leaves_the_users_index_entry(repo):
    Path("a.txt").write_text("staged by the user\n")
    git(repo, "add", "a.txt")
    staged = entry(repo, "a.txt")
    as_agent()
    Path(".git/refs/heads/main.lock").write_text("")
    write("a.txt", "a by agent\n")
    assert entry(repo, "a.txt") == staged


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
    assert "ran git checkout -q HEAD a.txt" in Checkpoint().undo()
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
    assert missing == "Error: No such file or directory: missing.txt"
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
    write("tool.sh", "#!/bin/sh\necho new\n")
    assert stat.S_IMODE(Path("tool.sh").stat().st_mode) == 0o750
