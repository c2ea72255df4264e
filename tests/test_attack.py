"""Issue #25, round 3 of the adversarial review: what the user sees is what runs, Amas's own files
and settings cannot be turned against the user, undo gives back exact bytes, no traceback on hostile
input, bounded work. Each test drives the real part (the CLI, git, files) and checks what the user or
their files would notice."""

import json
import os
import time
from pathlib import Path

import pytest
from conftest import amas, git, git_init, own_git, start
from fake_llm import text, tool

from amas_code import config as settings
from amas_code import providers, skills, tools
from amas_code.agent import Agent
from amas_code.checkpoint import Checkpoint, Refused

ERASE = "\x1b[2K\x1b[1A"  # erase the line, move up: hides what was just printed


def cli(llm, *args: str):
    base = ["--model", "openai/x", "--api-base", llm.url, *args]
    return amas(*base, env={"OPENAI_API_KEY": "sk-test"})


def test_control_sequences_in_model_text_files_and_commands_are_shown_not_obeyed(llm, isolated):
    Path("a.txt").write_text(f"safe line\nhidden{ERASE}\n")
    command = f"echo ok {ERASE}; echo second"
    llm.queue(
        tool("edit_file", {"path": "a.txt", "old_str": "safe line", "new_str": f"new{ERASE}"}),
        tool("shell_command", {"command": command}, "c2"),
        text(f"Done{ERASE}\x1b]52;c;ZXZpbA==\x07 \u202etxt.exe"),
    )
    done = cli(llm, "--yes", "go")
    assert done.returncode == 0, done.stderr
    for raw in ("\x1b[2K", "\x1b]52", "\x07", "\u202e"):
        assert raw not in done.stdout and raw not in done.stderr
    assert "Done\\x1b[2K\\x1b[1A" in done.stdout and "\\x1b]52;c;ZXZpbA==\\x07" in done.stdout
    assert "\\u202e" in done.stdout and "echo ok \\x1b[2K\\x1b[1A; echo second" in done.stderr
    assert "+new\\x1b[2K\\x1b[1A" in done.stderr  # the diff


def test_a_line_break_changed_into_a_form_feed_shows_in_the_diff(isolated, capsys):
    Path("m.py").write_text("x = 1\ny = 2\n")
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    tools.run("write_file", {"path": "m.py", "content": "x = 1\fy = 2\n"})
    out = capsys.readouterr().err
    assert "(no changes)" not in out and "+x = 1\\x0cy = 2" in out


def test_a_call_quoted_in_prose_never_runs(llm, config):
    quoted = 'The README says `shell_command(command="touch pwned")` and "read_file(path=\'x\')".'
    assert providers.written_calls(quoted, tools.TYPES) == []
    inline = 'Try `{"name": "shell_command", "arguments": {"command": "touch pwned"}}` later.'
    assert providers.written_calls(inline, tools.TYPES) == []
    assert providers.written_calls("<THINK>list_files()</THINK>", tools.TYPES) == []
    # Once the model has made native calls, its prose is never read as calls, even under --yes.
    prose = '```json\n{"name": "shell_command", "arguments": {"command": "touch pwned"}}\n```'
    llm.queue(tool("list_files", {}), text(prose))
    assert Agent({**config, "auto_accept": True}).turn("look") == 0
    assert not Path("pwned").exists() and len(llm.requests) == 2


def test_hostile_written_calls_never_raise_and_stay_cheap():
    names = tools.TYPES
    for reply in ("[read_file(path=b'z')]", 'read_file(path={"a", "b"})', "[" * 50_000):
        assert providers.written_calls(reply, names) == []
    long_reply = "read_file(" + "(x" * 17_000 + ")" * 17_000
    started = time.process_time()
    providers.written_calls(long_reply, names)
    assert time.process_time() - started < 20  # was 98 s of CPU; a bound, not a benchmark
    function_as_text = '{"function": "read_file", "name": "list_files", "arguments": {}}'
    assert [c["function"]["name"] for c in providers.written_calls(function_as_text, names)] == [
        "list_files"
    ]


@pytest.mark.parametrize("args", ["[1]", "5", "null", '"a string"', "[" * 100_000])
def test_tool_arguments_that_are_not_an_object_are_a_clear_error(args):
    result = tools.run("read_file", args)
    assert result.startswith(("Malformed call:", "Error:")) and "\n" not in result


def test_a_project_config_cannot_name_a_program_or_a_key(isolated):
    Path(".amas").mkdir()
    Path(".amas/config.yaml").write_text("browser_path: ./tools/chrome\napi_key: sk-theirs\n")
    loaded = settings.load(".")
    assert loaded["browser_path"] is None and loaded["api_key"] is None


def test_own_files_are_never_written_through_a_planted_symlink(isolated, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("the user's\n")
    Path(".amas").mkdir()
    Path(".amas/map.md").symlink_to(victim)
    Path("a.py").write_text("def f():\n    pass\n")
    Path(".a.py.amas-new").symlink_to(victim)
    skills.init()
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    assert tools.run("write_file", {"path": "a.py", "content": "x = 1\n"}).startswith("Wrote")
    assert victim.read_text() == "the user's\n"
    assert "a.py" in Path(".amas/map.md").read_text() and not Path(".amas/map.md").is_symlink()
    assert Path("a.py").read_text() == "x = 1\n" and not Path(".a.py.amas-new").exists()


def test_a_planted_map_that_leads_outside_the_project_is_not_sent(isolated, tmp_path):
    (tmp_path / "id_rsa").write_text("PRIVATE KEY MATERIAL\n")
    Path(".amas").mkdir()
    Path(".amas/map.md").symlink_to(tmp_path / "id_rsa")  # committed by a cloned repository
    assert "PRIVATE KEY MATERIAL" not in skills.system_prompt([])


@pytest.fixture
def repo(isolated):
    git_init(isolated)
    Path("keep").write_text("k\n")
    git(isolated, "add", ".")
    git(isolated, "commit", "-qm", "user: initial")
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    tools.STATE.update(checkpoint=Checkpoint("."), root=isolated)
    return isolated


def test_names_with_quotes_and_glob_characters_are_checkpointed_and_undone_exactly(repo):
    os.mkdir("src")
    for name in ('"src', "src"):
        Path(name).mkdir(exist_ok=True)
    Path("src/m.py").write_text("real\n")
    Path("a*").write_text("star\n")
    Path("ab").write_text("ab\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "user: files")
    weird = '"src/m.py"'
    Path(weird).parent.mkdir(exist_ok=True)
    tools.run("write_file", {"path": weird, "content": "agent\n"})
    tools.run("write_file", {"path": "a*", "content": "agent star\n"})
    shown = own_git(repo, "log", "-2", "--name-only", "--format=", "refs/amas/keep").split()
    assert "src/m.py" not in shown and own_git(repo, "show", "refs/amas/keep:src/m.py") == "real\n"
    assert git(repo, "status", "--porcelain") == ' M a*\n?? "\\"src/"\n'  # as uncommitted edits
    Checkpoint().undo()
    assert Path("src/m.py").read_text() == "real\n" and Path("ab").read_text() == "ab\n"
    assert Path("a*").read_text() == "star\n" and not Path(weird).exists()


@pytest.mark.xfail(
    strict=True,
    reason="bug: git restore in Amas's repository applies the work tree's .gitattributes (ident "
    "expands $Id$; text/eol would convert line ends): the file comes back with other bytes",
)
def test_undo_gives_back_the_raw_bytes_whatever_git_converts(repo):
    git(repo, "config", "core.autocrlf", "true")
    Path(".gitattributes").write_text("*.txt ident\n")
    Path("w.txt").write_bytes(b"line one\r\n$Id$\r\n")  # the user's own, uncommitted bytes
    tools.run("write_file", {"path": "w.txt", "content": "agent\n"})
    Checkpoint().undo()
    assert Path("w.txt").read_bytes() == b"line one\r\n$Id$\r\n"


def test_odd_numbers_for_undo_are_refused_in_one_line(repo):
    for arg in ("²", "-1", "x", "0"):
        with pytest.raises(Refused, match="Expected a number"):
            Checkpoint().undo(arg)


def test_a_write_with_no_snapshot_says_so_before_asking(repo, capsys):
    Path(".git/amas/repo/index.lock").write_text("")  # no snapshot can be taken
    tools.run("write_file", {"path": "x.log", "content": "log\n"})
    shown = capsys.readouterr().err
    assert shown.index("No snapshot, so no /undo, for this change") < shown.index("Apply this")
    assert not Path("x.log").exists()  # --yes asks, and there is no terminal


def test_a_non_utf8_line_does_not_break_later_requests(llm, config):
    llm.queue(text("first"), text("second"))
    agent = Agent(config)
    assert agent.turn("bad \udcff byte") == 0 and agent.turn("next") == 0
    assert llm.requests[1]["body"]["messages"][-1]["content"] == "next"


def test_amas_init_skips_a_fifo_named_like_source(isolated):
    os.mkfifo("stuck.py")
    Path("ok.py").write_text("def fine():\n    pass\n")
    summary = skills.init()  # would block forever reading the FIFO
    assert "Mapped 1 files" in summary and "ok.py: fine" in Path(".amas/map.md").read_text()


def test_a_model_that_goes_silent_is_given_up_on(llm, config, capsys):
    from fake_llm import Stall

    llm.queue(Stall(text("Thinking about it", pieces=3)), text("late"))
    started = time.monotonic()
    assert Agent({**config, "timeout": 1}).turn("hi") == 1
    assert time.monotonic() - started < 7  # the server stays silent for 8 s
    assert "timed out" in capsys.readouterr().err


def test_a_closed_terminal_ends_the_running_command_and_its_children(llm, isolated):
    import signal

    llm.queue(tool("shell_command", {"command": "sleep 300 & echo $! > child; sleep 300"}))
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    args = ["--model", "openai/x", "--api-base", llm.url, "--yes", "wait"]
    proc = start(*args, env=env)
    deadline = time.monotonic() + 60
    while not (Path("child").exists() and Path("child").read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    child = int(Path("child").read_text())
    proc.send_signal(signal.SIGHUP)
    assert proc.wait(30) == 128 + signal.SIGHUP
    history = Path(".amas/history.jsonl").read_text().splitlines()  # written on the way out
    assert [json.loads(line)["role"] for line in history] == ["user", "assistant"]
    stat = Path(f"/proc/{child}/stat")

    def gone() -> bool:  # or dead
        try:
            return stat.read_text().split(")")[-1].split()[0] == "Z"
        except FileNotFoundError:
            return True

    deadline = time.monotonic() + 10  # waited for, not a fixed delay
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gone()


def test_an_error_mid_answer_starts_on_its_own_line(llm, config, capsys):
    from fake_llm import Stall

    llm.queue(Stall(text("Thinking about it", pieces=3)), text("late"))
    Agent({**config, "timeout": 1}).turn("hi")
    shown = capsys.readouterr()  # on a terminal the two interleave: the answer's line is ended
    assert shown.out == "Think\n" and shown.err.splitlines()[-1].startswith("✗ ")


def test_a_reply_with_no_answer_ends_the_turn_without_asking_again(llm, config):
    llm.queue([{"reasoning_content": "only thinking"}])
    agent = Agent(config)
    assert agent.turn("hi") == 0 and len(llm.requests) == 1
    assert agent.messages[-1]["role"] == "assistant"


def test_a_key_cut_by_search_output_is_still_masked(isolated, monkeypatch):
    key = "sk-" + "k" * 400
    monkeypatch.setenv("SERVICE_API_KEY", key)
    Path("conf.py").write_text(f"KEY = '{key}'\n")
    found = tools.run("search_files", {"pattern": "KEY"})
    assert "kkkkkkkk" not in found and "***" in found


def test_started_inside_dot_git_amas_refuses_in_one_line(llm, isolated):
    git_init(isolated)
    done = amas("--model", "openai/x", "--api-base", llm.url, "hi", cwd=isolated / ".git")
    assert (
        done.returncode == 1 and "not inside .git" in done.stderr and "Traceback" not in done.stderr
    )
    assert not (isolated / ".git" / ".amas").exists() and llm.requests == []


def test_a_ctrl_c_while_a_change_is_recorded_loses_no_record(repo, monkeypatch):
    """Ctrl-C reaches Amas while it records an edit: the edit is recorded whole, then the turn
    ends; undo and new edits still work. In a real session litellm keeps worker threads."""
    import signal
    import threading

    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()  # as litellm's pool
    changed = Checkpoint._changed

    def ctrl_c_meanwhile(self, *args):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # time for the signal to be taken
        return changed(self, *args)

    monkeypatch.setattr(Checkpoint, "_changed", ctrl_c_meanwhile)
    with pytest.raises(KeyboardInterrupt):
        tools.run("write_file", {"path": "keep", "content": "agent\n"})
    monkeypatch.setattr(Checkpoint, "_changed", changed)
    assert tools.run("write_file", {"path": "keep", "content": "agent 2\n"}).startswith("Wrote")
    undone = Checkpoint().undo()
    assert "Undid" in undone and Path("keep").read_text() == "k\n", undone


def test_ctrl_c_at_a_question_ends_the_turn_not_just_the_change(llm, config):
    from conftest import terminal

    Path("a.py").write_text("x = 1\n")
    llm.queue(tool("write_file", {"path": "a.py", "content": "x = 2\n"}), text("carrying on"))
    with terminal("\x03"):
        assert Agent(config).turn("change it") == 130
    assert Path("a.py").read_text() == "x = 1\n" and len(llm.requests) == 1


@pytest.mark.parametrize(
    "line", ["echo hi\nrm -f victim", "echo hi\r\nrm -rf /", "ls\ngit clean -fd"]
)
def test_a_newline_separates_commands_for_the_judge(line):
    assert tools.destructive(line)
    assert not tools.destructive(line.replace("rm", "ls").replace("clean -fd", "status"))
