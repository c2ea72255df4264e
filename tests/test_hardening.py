"""What adversarial testing broke (issue #18), each through the real CLI or the real tool functions:
destructive git commands under --yes, sandbox gaps, tracebacks, hangs, runaway output, undo during
merges and rebases, all-or-nothing undo, and secrets."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import amas, git, git_init
from fake_llm import text, tool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amas_code import tools
from amas_code.agent import Agent
from amas_code.checkpoint import Checkpoint


@pytest.fixture
def repo(isolated):
    git_init(isolated)
    Path("a.txt").write_text("base\n")
    git(isolated, "add", ".")
    git(isolated, "commit", "-qm", "user: base")
    return isolated


def one_shot(llm, *calls, flags=("--yes",), env=None) -> subprocess.CompletedProcess:
    """The real `amas` one-shot, no terminal, against the scripted server making `calls`."""
    llm.queue(*[tool(name, args, f"c{i}") for i, (name, args) in enumerate(calls)], text("done"))
    base = ["--model", "openai/x", "--api-base", llm.url, *flags, "go"]
    return amas(*base, env={"OPENAI_API_KEY": "sk-x", **(env or {})})


def peak_mib(code: str) -> float:
    """Peak RSS of a fresh Python process that imports the tools and runs `code`."""
    script = "from pathlib import Path\nfrom amas_code import tools\nfrom amas_code.checkpoint import "
    script += f"Checkpoint\ntools.STATE['checkpoint'] = Checkpoint('.', enabled=False)\n{code}\n"
    script += "print(Path('/proc/self/status').read_text().split('VmHWM:')[1].split()[0])"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    return int(done.stdout.split()[-1]) / 1024  # VmHWM, kB: unlike ru_maxrss, reset by exec


def finishes(action, seconds: float = 20):
    """Run action in a thread; whether it came back at all (a hang detector, not a timing)."""
    box = []
    worker = threading.Thread(target=lambda: box.append(action()), daemon=True)
    worker.start()
    worker.join(seconds)
    return box[0] if box else None


# Destructive commands under --yes ------------------------------------------------------------


def test_yes_no_longer_runs_commands_that_destroy_uncommitted_or_untracked_work(llm, repo):
    git(repo, "branch", "feat")
    Path("a.txt").write_text("uncommitted edit\n")
    Path("u.txt").write_text("untracked\n")
    commands = [
        "git restore .",
        "git checkout -- .",
        "git -C . reset --hard",
        "git reset -q --hard",
        "git -C . clean -fd",
        "rm u.txt",
        "git branch -D feat",
        "git stash clear",
    ]
    done = one_shot(llm, *[("shell_command", {"command": c}) for c in commands])
    assert done.stderr.count("This command reaches beyond /undo. Run it? → no") == len(commands)
    assert Path("a.txt").read_text() == "uncommitted edit\n" and Path("u.txt").exists()
    assert "feat" in git(repo, "branch")
    sent = llm.requests[-1]["body"]["messages"]
    assert sum(m["content"] == "The user declined to run this command." for m in sent) == len(
        commands
    )


def test_yolo_still_runs_them(llm, repo):
    Path("u.txt").write_text("untracked\n")
    one_shot(llm, ("shell_command", {"command": "rm u.txt"}), flags=("--yolo",))
    assert not Path("u.txt").exists()


# Sandbox --------------------------------------------------------------------------------------


def test_search_and_list_skip_symlinks_that_lead_out_of_the_project(tmp_path, isolated):
    outside = tmp_path / "outside.txt"
    outside.write_text("SECRET outside the project\n")
    (isolated / "link.txt").symlink_to(outside)
    (isolated / "inner.txt").write_text("SECRET inside\n")
    (isolated / "inner-link.txt").symlink_to(isolated / "inner.txt")
    found = tools.run("search_files", {"pattern": "SECRET"})
    assert "outside the project" not in found and "inner.txt:1: SECRET inside" in found
    listed = tools.run("list_files", {}).split()
    assert "link.txt" not in listed and {"inner.txt", "inner-link.txt"} <= set(listed)


def test_a_write_never_goes_through_a_hard_link_and_keeps_the_mode(tmp_path, isolated):
    outside = tmp_path / "outside.sh"
    outside.write_text("#!/bin/sh\necho outside\n")
    outside.chmod(0o755)
    os.link(outside, isolated / "run.sh")  # as `ln` through the shell would
    tools.STATE["config"]["auto_accept"] = True
    assert tools.run(
        "write_file", {"path": "run.sh", "content": "#!/bin/sh\necho new\n"}
    ).startswith("Wrote")
    assert outside.read_text() == "#!/bin/sh\necho outside\n"
    assert (isolated / "run.sh").read_text() == "#!/bin/sh\necho new\n"
    assert os.access(isolated / "run.sh", os.X_OK) and not list(isolated.glob(".*amas-new"))


# Never a traceback, never a hang ----------------------------------------------------------------


@pytest.mark.parametrize("content", [None, 42, ["a"], {"b": 1}])
def test_write_with_content_that_is_not_text_is_a_malformed_call(content, isolated):
    tools.STATE["config"]["auto_accept"] = True
    for name in ("write_file", "create_file"):
        result = tools.run(name, {"path": "x.txt", "content": content})
        assert result.startswith("Malformed call:") and "content" in result
    assert not Path("x.txt").exists()


def test_a_huge_or_wrongly_typed_timeout_is_no_crash(isolated):
    tools.STATE["config"]["auto_accept"] = True
    result = tools.run("shell_command", {"command": "echo hi", "timeout": 99999999999})
    assert result == "hi\n[exit code 0]"
    assert tools.run("shell_command", {"command": "echo hi", "timeout": "soon"}).startswith(
        "Malformed"
    )


def test_symlink_loops_are_an_error_not_a_traceback(isolated):
    Path("loop").symlink_to("loop")
    tools.STATE["config"]["auto_accept"] = True
    result = tools.run("read_file", {"path": "loop"})
    assert result.startswith("Error: ") and "\n" not in result
    result = tools.run("write_file", {"path": "loop", "content": "x"})  # the loop is replaced
    assert result == "Wrote loop (1 lines)." and Path("loop").read_text() == "x"


def test_a_path_inside_a_submodule_is_written_without_a_checkpoint(tmp_path, repo):
    (tmp_path / "lib").mkdir()
    lib = git_init(tmp_path / "lib")
    (lib / "lib.txt").write_text("lib\n")
    git(lib, "add", ".")
    git(lib, "commit", "-qm", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "sub")
    git(repo, "commit", "-qm", "add sub")
    as_agent(repo)
    result = tools.run("write_file", {"path": "sub/lib.txt", "content": "changed\n"})
    assert "declined" in result and Path("sub/lib.txt").read_text() == "lib\n"  # --yes asks (#31)
    tools.STATE["config"]["yolo"] = True
    result = tools.run("write_file", {"path": "sub/lib.txt", "content": "changed\n"})
    assert result.startswith("Wrote sub/lib.txt") and Path("sub/lib.txt").read_text() == "changed\n"
    assert git(repo, "log", "--format=%s", "-1") == "add sub\n"  # no checkpoint in the outer repo


def test_a_file_name_that_is_not_utf8_does_not_break_the_session(llm, config, isolated):
    Path(os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")
    llm.queue(tool("list_files", {}), text("listed"), text("still here"))
    agent = Agent(config)
    assert agent.turn("list") == 0 and agent.turn("again") == 0
    assert "caf?.txt" in str(llm.requests[1]["body"]) and len(llm.requests) == 3


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(
        [
            "read_file",
            "write_file",
            "create_file",
            "edit_file",
            "shell_command",
            "search_files",
            "list_files",
            "fetch_url",
        ]
    ),
    args=st.dictionaries(
        st.sampled_from(
            [
                "path",
                "content",
                "old_str",
                "new_str",
                "command",
                "timeout",
                "pattern",
                "url",
                "extra",
            ]
        ),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=5,
        ),
        max_size=4,
    ),
)
def test_any_json_arguments_give_a_string_back(name, args, isolated):
    tools.STATE["config"]["auto_accept"] = (
        False  # nothing is written or run: every question is "no"
    )
    assert isinstance(tools.run(name, args), str)
    assert isinstance(tools.run(name, json.dumps(args)), str)


# Bounded memory, timeouts that hold ----------------------------------------------------------------


def test_endless_output_is_read_as_it_comes_and_only_head_and_tail_kept(isolated):
    tools.STATE["config"]["auto_accept"] = True
    result = finishes(lambda: tools.run("shell_command", {"command": "yes", "timeout": 1}))
    assert result is not None and "[timed out after 1s; killed]" in result
    assert len(result) < 2 * tools.MAX_OUTPUT and "cut …]" in result
    yes = "tools.STATE['config']['auto_accept'] = True\ntools.shell_command('yes', timeout=3)"
    assert peak_mib(yes) < 200  # it grew to gigabytes when the output was read whole


def test_a_background_child_holding_the_pipe_does_not_stretch_the_timeout(isolated):
    tools.STATE["config"]["auto_accept"] = True
    command = "setsid sleep 40 & echo bg"
    result = finishes(lambda: tools.run("shell_command", {"command": command, "timeout": 2}), 15)
    assert result == "bg\n[exit code 0]"


def test_huge_files_are_read_in_bounded_bytes(isolated):
    with open("big.log", "wb") as big:  # 2 GB, sparse: instant to make, costly to read whole
        big.truncate(2 * 1024**3)
        big.seek(0)
        big.write(b"first line FIND-ME\n")
    result = finishes(lambda: tools.run("read_file", {"path": "big.log"}))
    assert result == f"Error: big.log is a binary file ({2 * 1024**3} bytes); cannot display it."
    assert "big.log:1: first line FIND-ME" in finishes(
        lambda: tools.run("search_files", {"pattern": "FIND"})
    )
    assert peak_mib("tools.run('read_file', {'path': 'big.log'}); tools.search_files('FIND')") < 200


def test_fifos_are_never_read(isolated):
    os.mkfifo("pipe")
    Path("note.txt").write_text("hello\n")
    assert (
        finishes(lambda: tools.run("read_file", {"path": "pipe"}))
        == "Error: pipe is not a regular file"
    )
    assert finishes(lambda: tools.run("search_files", {"pattern": "hello"})) == "note.txt:1: hello"


# Checkpoints during merges and rebases; all-or-nothing undo --------------------------------------


def as_agent(repo: Path) -> None:
    """Tools as the agent runs them with --yes, checkpoints on."""
    tools.STATE.update(checkpoint=Checkpoint("."), root=repo)
    tools.STATE["config"]["auto_accept"] = True


def diverge(repo: Path) -> None:
    """main and topic each change a.txt: the next merge or rebase stops on a conflict."""
    git(repo, "checkout", "-qb", "topic")
    Path("a.txt").write_text("topic\n")
    git(repo, "commit", "-qam", "user: topic change")
    git(repo, "checkout", "-q", "main")
    Path("a.txt").write_text("main\n")
    git(repo, "commit", "-qam", "user: main change")


def test_an_edit_during_a_merge_is_undone_and_undo_cannot_lose_the_merge(repo):
    diverge(repo)
    assert subprocess.run(["git", "merge", "-q", "topic"], cwd=repo, capture_output=True).returncode
    conflicted, index = Path("a.txt").read_text(), git(repo, "ls-files", "-s")
    as_agent(repo)
    result = tools.run("write_file", {"path": "a.txt", "content": "OURS and THEIRS\n"})
    assert result.startswith("Wrote a.txt")
    cp = Checkpoint(".")
    assert "a.txt" in cp.undo() and Path("a.txt").read_text() == conflicted
    assert Path(".git/MERGE_HEAD").exists() and git(repo, "ls-files", "-s") == index
    assert "a.txt" in cp.undo(redo=True) and Path("a.txt").read_text() == "OURS and THEIRS\n"
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "--no-edit")
    assert git(repo, "show", "HEAD:a.txt") == "OURS and THEIRS\n"
    assert len(git(repo, "show", "-s", "--format=%P", "HEAD").split()) == 2  # a real merge


def test_undo_never_touches_a_path_with_conflict_stages(repo):
    as_agent(repo)
    tools.run("write_file", {"path": "b.txt", "content": "agent\n"})
    blob = git(repo, "hash-object", "-w", "b.txt").strip()
    index = "".join(f"100644 {blob} {stage}\tb.txt\n" for stage in (1, 2, 3))  # as `stash pop`
    git(repo, "update-index", "--index-info", input=index.encode())
    assert "b.txt" in Checkpoint(".").undo() and not Path("b.txt").exists()
    assert git(repo, "ls-files", "-u", "b.txt").count("b.txt") == 3  # still the user's to resolve


def test_an_edit_during_a_rebase_keeps_the_users_picked_commit(repo):
    diverge(repo)
    git(repo, "checkout", "-q", "topic")
    assert subprocess.run(["git", "rebase", "-q", "main"], cwd=repo, capture_output=True).returncode
    conflicted = Path("a.txt").read_text()
    as_agent(repo)
    assert tools.run("write_file", {"path": "a.txt", "content": "both\n"}).startswith("Wrote")
    cp = Checkpoint(".")
    assert "a.txt" in cp.undo() and Path("a.txt").read_text() == conflicted
    assert Path(".git/rebase-merge").exists()
    cp.undo(redo=True)
    git(repo, "add", "a.txt")
    subprocess.run(
        ["git", "-c", "core.editor=true", "rebase", "--continue"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    log = git(repo, "log", "--format=%s").split("\n")
    assert log[:3] == ["user: topic change", "user: main change", "user: base"]
    assert git(repo, "show", "HEAD:a.txt") == "both\n"


def test_undo_while_git_holds_the_users_index_lock_leaves_the_index_and_the_lock(repo):
    as_agent(repo)
    tools.run("write_file", {"path": "a.txt", "content": "agent\n"})
    head, index = git(repo, "rev-parse", "HEAD"), Path(".git/index").read_bytes()
    Path(".git/index.lock").write_text("")  # a git process of the user's is at work
    done = amas("undo")
    assert done.returncode == 0 and "Traceback" not in done.stderr and done.stdout == ""
    assert Path("a.txt").read_text() == "base\n" and Path(".git/index.lock").exists()
    assert (git(repo, "rev-parse", "HEAD"), Path(".git/index").read_bytes()) == (head, index)


def test_undo_with_a_lock_on_the_snapshots_changes_nothing_and_names_it_in_one_line(repo):
    as_agent(repo)
    tools.run("write_file", {"path": "a.txt", "content": "agent\n"})
    Path(".git/amas/repo/index.lock").write_text("")  # another amas, or a git it started
    done = amas("undo")
    assert done.returncode == 1 and "Traceback" not in done.stderr and done.stdout == ""
    assert Path("a.txt").read_text() == "agent\n"
    assert done.stderr.count("\n") == 1 and "index.lock" in done.stderr


# Secrets ------------------------------------------------------------------------------------------


def test_a_project_api_key_does_not_unmask_the_users_key(llm, isolated, tmp_path):
    home = Path(os.environ["AMAS_HOME"])
    (home / "config.yaml").write_text("api_key: sk-user-key-123\n")
    (isolated / ".amas").mkdir()
    (isolated / ".amas/config.yaml").write_text("api_key: sk-project-key-456\n")
    one_shot(llm, ("shell_command", {"command": f"cat {home / 'config.yaml'}"}))
    sent = json.dumps(llm.requests[-1]["body"])
    assert "sk-user-key-123" not in sent and "api_key: ***" in sent


def test_a_masked_secret_is_never_written_back(llm, config, isolated, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    Path(".env").write_text("OPENAI_API_KEY=sk-real-openai-key\nDEBUG=0\n")
    llm.queue(
        tool("read_file", {"path": ".env"}, "r"),
        tool("write_file", {"path": ".env", "content": "OPENAI_API_KEY=***\nDEBUG=1\n"}, "w"),
        tool("edit_file", {"path": ".env", "old_str": "DEBUG=0", "new_str": "DEBUG=1"}, "e"),
        text("done"),
    )
    Agent({**config, "auto_accept": True}).turn("turn on debug")
    assert Path(".env").read_text() == "OPENAI_API_KEY=sk-real-openai-key\nDEBUG=1\n"
    refused = [m["content"] for m in llm.requests[2]["body"]["messages"] if m["role"] == "tool"][-1]
    assert "use edit_file" in refused or "edit_file instead" in refused
