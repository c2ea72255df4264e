"""Never lose the user's work, the common cases (issue #31): a save made while amas asks, a project
config that turns undo off, writes undo cannot take back, the mode git records, the transcript kept
out of commits. Real repositories, real files, the real CLI."""

import json
import os
from pathlib import Path

import pytest
from conftest import amas, git, git_init, own_git, own_subjects
from fake_llm import text, tool

from amas_code import config as settings
from amas_code import tools, ui
from amas_code.agent import Agent
from amas_code.checkpoint import Checkpoint


@pytest.fixture
def repo(isolated):
    git_init(isolated)
    Path("app.py").write_text("print('committed')\n")
    Path(".gitignore").write_text(".env\n")
    git(isolated, "add", ".")
    git(isolated, "commit", "-qm", "user: initial")
    return isolated


def as_agent(yolo: bool = False) -> None:
    """The tools as `amas --yes` (or `--yolo`) runs them, with no terminal to ask on."""
    tools.STATE.update(checkpoint=Checkpoint("."), root=Path.cwd())
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True, "yolo": yolo}


def agent_commits(repo: Path) -> list[str]:
    """The agent's `[amas]` snapshots, in Amas's own repository (none is ever on the branch)."""
    assert "[amas]" not in git(repo, "log", "--all", "--format=%s")
    return own_subjects(repo) if Path(repo, ".git/amas/repo/refs/amas/keep").exists() else []


# 1. A save made while the question waits ---------------------------------------------------------


@pytest.mark.parametrize(
    "tool, path",
    [("write_file", "app.py"), ("create_file", "new.py")],  # saved over, or created meanwhile
)
def test_a_save_made_while_the_question_waits_is_kept_and_the_model_told(
    repo, monkeypatch, tool, path
):
    tools.STATE.update(checkpoint=Checkpoint("."), root=repo)

    def user_saves_then_answers_yes(question: str, kind: str) -> bool:
        Path(path).write_text("saved by the user meanwhile\n")
        return True

    monkeypatch.setattr(ui, "confirm", user_saves_then_answers_yes)
    result = tools.run(tool, {"path": path, "content": "the agent's\n"})
    assert Path(path).read_text() == "saved by the user meanwhile\n"
    assert "changed while the user was deciding" in result and "read it again" in result
    assert agent_commits(repo) == [] and not list(Path(".").glob(f".{path}.amas-new"))


def test_an_unchanged_file_is_written_after_the_answer(repo, monkeypatch):
    tools.STATE.update(checkpoint=Checkpoint("."), root=repo)
    monkeypatch.setattr(ui, "confirm", lambda question, kind: True)
    assert tools.run("write_file", {"path": "app.py", "content": "x\n"}).startswith("Wrote")
    assert Path("app.py").read_text() == "x\n" and agent_commits(repo) == ["[amas] wrote app.py"]


# 2. A cloned repository cannot switch undo off -----------------------------------------------------


def test_a_project_config_cannot_turn_checkpoints_off(repo, llm):
    Path(".amas").mkdir()
    Path(".amas/config.yaml").write_text("checkpoint_on_edit: false\n")
    assert settings.load(".")["checkpoint_on_edit"] is True
    llm.queue(tool("write_file", {"path": "app.py", "content": "print('agent')\n"}), text("ok"))
    base = ["--model", "openai/x", "--api-base", llm.url, "--yes", "edit"]
    assert amas(*base, env={"OPENAI_API_KEY": "sk-x"}).returncode == 0
    assert agent_commits(repo) == ["[amas] wrote app.py"]
    assert git(repo, "status", "--porcelain") == " M app.py\n"  # the user's to commit
    undone = amas("undo")
    assert undone.returncode == 0 and "Undid" in undone.stderr
    assert Path("app.py").read_text() == "print('committed')\n"


def test_your_own_config_can_still_turn_checkpoints_off(repo, tmp_path):
    (tmp_path / "home" / "config.yaml").write_text("checkpoint_on_edit: false\n")
    assert settings.load(".")["checkpoint_on_edit"] is False


# 3. A write that undo cannot take back asks, even under --yes ----------------------------------


@pytest.fixture
def submodule(repo, tmp_path):
    """repo/sub is a submodule (a repository of its own, its .git a file)."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git_init(upstream)
    (upstream / "lib.py").write_text("upstream\n")
    git(upstream, "add", ".")
    git(upstream, "commit", "-qm", "upstream")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(repo, "commit", "-qm", "user: add the submodule")
    return repo / "sub"


@pytest.fixture
def nested(repo):
    """repo/vendor/lib is an untracked repository of its own inside the project."""
    inner = repo / "vendor" / "lib"
    inner.mkdir(parents=True)
    git_init(inner)
    (inner / "lib.py").write_text("vendored\n")
    return inner


def test_a_gitignored_write_runs_under_yes_and_undo_takes_it_back(repo, capsys):
    Path(".env").write_text("SECRET=mine\n")
    as_agent()
    result = tools.run("write_file", {"path": ".env", "content": "SECRET=agent\n"})
    assert result == "Wrote .env (1 lines)." and "No snapshot" not in capsys.readouterr().err
    assert git(repo, "status", "--porcelain", "--ignored") == "!! .env\n"  # still ignored
    tools.STATE["checkpoint"].undo()
    assert Path(".env").read_text() == "SECRET=mine\n"


def test_a_write_inside_a_submodule_is_warned_asked_and_never_undone_by_the_outer_repo(
    submodule, repo, capsys
):
    as_agent()
    tools.run("write_file", {"path": "app.py", "content": "print('agent')\n"})  # a checkpoint
    status = git(repo, "status", "--porcelain")
    result = tools.run("write_file", {"path": "sub/lib.py", "content": "agent\n"})
    out = capsys.readouterr().err
    assert "No snapshot, so no /undo, for this change: " in out and "sub/lib.py" in out
    assert "declined" in result and (submodule / "lib.py").read_text() == "upstream\n"
    assert (
        agent_commits(repo) == ["[amas] wrote app.py"]
        and git(repo, "status", "--porcelain") == status
    )
    as_agent(yolo=True)  # --yolo still writes it, with no /undo
    assert tools.run("write_file", {"path": "sub/lib.py", "content": "agent\n"}).startswith("Wrote")
    assert "app.py" in Checkpoint(".").undo()
    assert (submodule / "lib.py").read_text() == "agent\n"
    assert Path("app.py").read_text() == "print('committed')\n"


def test_a_write_inside_a_nested_repository_is_undone_and_never_added_to_the_outer_one(
    nested, repo
):
    as_agent()
    inner_status, index = git(nested, "status", "--porcelain"), Path(".git/index").read_bytes()
    result = tools.run("write_file", {"path": "vendor/lib/lib.py", "content": "agent\n"})
    assert result.startswith("Wrote") and (nested / "lib.py").read_text() == "agent\n"
    assert Path(".git/index").read_bytes() == index  # the outer user's index: never written
    assert git(repo, "status", "--porcelain") == "?? vendor/\n"
    assert "vendor/lib/lib.py" in tools.STATE["checkpoint"].undo()
    assert (nested / "lib.py").read_text() == "vendored\n"
    assert git(nested, "status", "--porcelain") == inner_status
    assert Path(".git/index").read_bytes() == index and "vendor" not in git(repo, "ls-files")


def test_after_a_write_inside_a_nested_repository_amas_undo_takes_it_back(nested, repo):
    as_agent()
    tools.run("write_file", {"path": "vendor/lib/lib.py", "content": "agent\n"})
    undone = amas("undo")
    assert undone.returncode == 0 and (nested / "lib.py").read_text() == "vendored\n"


def test_under_yes_through_the_cli_an_ignored_file_is_written_without_asking(repo, llm):
    Path(".env").write_text("SECRET=mine\n")
    llm.queue(tool("write_file", {"path": ".env", "content": "SECRET=agent\n"}), text("ok"))
    base = ["--model", "openai/x", "--api-base", llm.url, "--yes", "edit"]
    done = amas(*base, env={"OPENAI_API_KEY": "sk-x"})
    assert "no terminal to ask" not in done.stderr and done.stdout == "ok\n"
    assert Path(".env").read_text() == "SECRET=agent\n"
    assert ".env" not in git(repo, "log", "--all", "--name-only", "--format=")


# 4. The mode recorded follows git's configuration ------------------------------------------------


def test_with_core_filemode_false_an_edit_and_its_undo_show_no_mode_change(repo):
    git(repo, "config", "core.fileMode", "false")
    Path("app.py").chmod(0o755)  # what a FAT, exFAT or /mnt/c file system shows for every file
    assert git(repo, "status", "--porcelain") == ""  # git itself sees no change
    as_agent()
    tools.run("write_file", {"path": "app.py", "content": "print('agent')\n"})
    assert "mode" not in git(repo, "diff") and git(repo, "status", "--porcelain") == " M app.py\n"
    assert git(repo, "ls-files", "-s", "app.py").split()[0] == "100644"
    Checkpoint(".").undo()
    assert git(repo, "status", "--porcelain") == "" and os.access("app.py", os.X_OK)


def test_with_core_filemode_true_an_executable_bit_is_recorded(repo):
    Path("run.sh").write_text("echo hi\n")
    Path("run.sh").chmod(0o755)
    git(repo, "add", "run.sh")
    git(repo, "commit", "-qm", "user: script")
    as_agent()
    tools.run("write_file", {"path": "run.sh", "content": "echo agent\n"})
    assert own_git(repo, "ls-tree", "refs/amas/keep", "run.sh").split()[0] == "100755"
    Checkpoint(".").undo()
    assert os.access("run.sh", os.X_OK) and git(repo, "status", "--porcelain") == ""


def test_with_core_symlinks_false_a_tracked_symlink_comes_back_as_git_checked_it_out(repo):
    git(repo, "config", "core.symlinks", "false")
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"app.py").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"120000,{blob},link")
    git(repo, "commit", "-qm", "user: a symlink")
    Path("link").write_text("app.py")  # as git checks it out with core.symlinks=false
    as_agent()
    tools.run("write_file", {"path": "link", "content": "other.py"})
    assert git(repo, "status", "--porcelain") == " M link\n"
    assert git(repo, "ls-files", "-s", "link").split()[0] == "120000"  # the index is the user's
    Checkpoint(".").undo()
    assert not Path("link").is_symlink() and Path("link").read_text() == "app.py"
    assert git(repo, "status", "--porcelain") == ""


# 5. The transcript never lands in a commit -------------------------------------------------------


def test_the_transcript_stays_out_of_git_status_and_git_add(repo, llm, config):
    llm.queue(text("hello"))
    Agent(config).turn("hi")
    assert Path(".amas/history.jsonl").exists() and Path(".amas/.gitignore").read_text() == "*\n"
    assert git(repo, "status", "--porcelain") == ""
    git(repo, "add", "-A")
    assert ".amas" not in git(repo, "diff", "--cached", "--name-only")


def test_beside_a_committed_amas_config_the_transcript_still_stays_out_of_git(repo, llm, config):
    """#37: a project that commits .amas/config.yaml gets .amas/.gitignore too, so `git add -A`
    never stages the transcript (which holds what the model read, secrets included)."""
    Path(".amas").mkdir()
    Path(".amas/config.yaml").write_text("max_context_tokens: 9000\n")
    git(repo, "add", ".amas/config.yaml")
    git(repo, "commit", "-qm", "user: project config")
    llm.queue(text("hello"))
    Agent(config).turn("hi")
    assert Path(".amas/.gitignore").read_text() == "*\n"
    assert json.loads(Path(".amas/history.jsonl").read_text().splitlines()[0])["content"] == "hi"
    git(repo, "add", "-A")
    assert git(repo, "status", "--porcelain") == ""  # nothing new staged, the config still tracked
    assert git(repo, "ls-files", ".amas") == ".amas/config.yaml\n"


def test_a_users_own_amas_gitignore_is_left_as_it_is(repo, llm, config):
    Path(".amas").mkdir()
    Path(".amas/.gitignore").write_text("history.jsonl\nmap.md\n")
    llm.queue(text("hello"))
    Agent(config).turn("hi")
    assert Path(".amas/.gitignore").read_text() == "history.jsonl\nmap.md\n"


# #33 item 4. An unmerged index is busy ------------------------------------------------------------


def stash_pop_conflict(repo: Path) -> None:
    """`git stash pop` meeting a conflict: unmerged entries in the index, and no MERGE_HEAD."""
    Path("app.py").write_text("print('stashed')\n")
    git(repo, "stash", "-q")
    Path("app.py").write_text("print('upstream')\n")
    git(repo, "commit", "-qam", "user: upstream")
    assert os.system("git stash pop -q >/dev/null 2>&1") != 0  # the conflict
    assert not (repo / ".git" / "MERGE_HEAD").exists() and "app.py" in git(repo, "ls-files", "-u")


def test_after_a_stash_pop_conflict_a_write_is_checkpointed_and_the_conflict_stays(repo, capsys):
    stash_pop_conflict(repo)
    index = git(repo, "ls-files", "-s")
    as_agent()
    assert "Wrote" in tools.run("write_file", {"path": "notes.md", "content": "x\n"})
    assert "No snapshot" not in capsys.readouterr().err
    assert "notes.md" in tools.STATE["checkpoint"].undo() and not Path("notes.md").exists()
    assert git(repo, "ls-files", "-s") == index  # the conflict is still the user's to resolve


def test_after_a_stash_pop_conflict_undo_takes_back_the_write_and_the_conflict_stays(repo):
    as_agent()
    tools.run("write_file", {"path": "notes.md", "content": "x\n"})
    stash_pop_conflict(repo)
    index, conflicted = git(repo, "ls-files", "-s"), Path("app.py").read_text()
    done = amas("undo", cwd=repo)
    assert done.returncode == 0 and "notes.md" in done.stderr and not Path("notes.md").exists()
    assert git(repo, "ls-files", "-s") == index and "app.py" in git(repo, "ls-files", "-u")
    assert Path("app.py").read_text() == conflicted and "<<<<<<<" in conflicted


# #33 item 3. The keep ref keeps everything undo may need -------------------------------------------


def test_the_users_staged_bytes_survive_gc_and_undo_puts_them_back(repo):
    Path("app.py").write_text("print('staged')\n")
    git(repo, "add", "app.py")
    staged = git(repo, "ls-files", "-s", "app.py").split()[1]
    Path("app.py").write_text("print('unstaged')\n")
    as_agent()
    tools.run("write_file", {"path": "app.py", "content": "print('agent')\n"})
    git(repo, "gc", "-q", "--prune=now")  # the staged blob is now only in amas' record
    Checkpoint(".").undo()
    assert git(repo, "cat-file", "-p", staged) == "print('staged')\n"
    assert Path("app.py").read_text() == "print('unstaged')\n"
    git(repo, "commit", "-qm", "user: the staged version")  # the index is whole again
    assert git(repo, "show", "HEAD:app.py") == "print('staged')\n"


def test_the_users_staged_bytes_survive_gc_after_the_user_stages_the_agents_version(repo):
    Path("app.py").write_text("print('staged, an hour of work')\n")
    git(repo, "add", "app.py")  # the work tree and the index hold it, no commit does
    as_agent()
    tools.run("write_file", {"path": "app.py", "content": "print('agent')\n"})
    git(repo, "add", "app.py")  # the user stages the agent's version over theirs
    git(repo, "gc", "-q", "--prune=now")
    Checkpoint(".").undo()
    assert Path("app.py").read_text() == "print('staged, an hour of work')\n"


@pytest.mark.parametrize(
    "path, unstage",
    [("app.py", ["reset", "-q", "app.py"]), (".env", ["rm", "-q", "-f", "--cached", ".env"])],
)
def test_bytes_the_user_staged_then_unstaged_and_pruned_are_given_back_by_undo(repo, path, unstage):
    """The snapshot before keeps its own copy of what the user staged (the seed reads it again from
    the work tree), even a file .gitignore matches (.env, added with -f): the user's index was its
    only other holder, and after an unstage and a gc only Amas has those bytes."""
    Path(path).write_text("staged, an hour of work, never committed\n")
    os.utime(path, (1e9, 1e9))  # an old date (unpacked, `cp -p`): git trusts its index's stat
    git(repo, "add", "-f", path)  # the work tree and the index hold it, no commit does
    as_agent()
    tools.run("shell_command", {"command": f"echo the agent > {path}"})  # a whole snapshot
    assert Path(path).read_text() == "the agent\n"
    git(repo, *unstage)
    git(repo, "gc", "-q", "--prune=now")  # the staged blob is in no index, commit or ref now
    done = amas("undo")
    assert "Undid 1 turn" in done.stderr, done.stderr
    assert Path(path).read_text() == "staged, an hour of work, never committed\n"


def test_each_worktree_keeps_its_own_undo_data_through_gc(repo):
    git(repo, "worktree", "add", "-q", str(repo / "linked"))
    os.chdir(repo / "linked")
    Path("app.py").write_text("print('mine, never committed')\n")
    as_agent()
    tools.run("write_file", {"path": "app.py", "content": "print('agent in linked')\n"})
    os.chdir(repo)
    as_agent()
    tools.run("write_file", {"path": "notes.md", "content": "agent in main\n"})
    git(repo, "gc", "-q", "--prune=now")
    os.chdir(repo / "linked")
    Checkpoint(".").undo()
    assert Path("app.py").read_text() == "print('mine, never committed')\n"


# #33 item 6. Settings and repositories that are not what we expect: one line --------------------


@pytest.mark.parametrize(
    "setting, expected",
    [
        ("max_context_tokens: lots", "Setting max_context_tokens: expected int, got 'lots'."),
        ("shell_timeout: [1, 2]", "Setting shell_timeout: expected int, got [1, 2]."),
        ("ignore: node_modules", "Setting ignore: expected list, got 'node_modules'."),
        ("model: 4", "Setting model: expected str, got 4."),
    ],
)
def test_a_setting_of_the_wrong_type_is_one_line_naming_it(isolated, llm, setting, expected):
    Path(".amas").mkdir()
    Path(".amas/config.yaml").write_text(setting + "\n")
    done = amas("--api-base", llm.url, "hi")
    assert done.returncode == 1 and expected in done.stderr and "Traceback" not in done.stderr
    assert llm.requests == []


def test_in_a_bare_repository_checkpoints_are_off_in_one_line(isolated, llm):
    git(isolated, "init", "-q", "--bare")
    done = amas("undo", cwd=isolated)
    assert done.returncode == 1 and "Checkpoints are off" in done.stderr
    llm.queue(text("Hello."))
    done = amas("--model", "openai/x", "--api-base", llm.url, "hi", env={"OPENAI_API_KEY": "sk-x"})
    assert done.returncode == 0 and done.stdout == "Hello.\n" and "Traceback" not in done.stderr
