"""The spec's Phase 6, the finished look (issue #32): what can be checked without a person at the
screen. A real terminal (a pty) for the rendered answer, pipes for plain text, the real CLI for the
summary, a real prompt_toolkit session for history and completion."""

import fcntl
import os
import pty
import re
import select
import struct
import termios
import time
from pathlib import Path

import pyte
from conftest import amas, git_init, interrupt_when, start, terminal
from fake_llm import Stall, text, tool

from amas_code import tools, ui
from amas_code.agent import Agent

ANSWER = "## Result\n\nThe fix is **done**; see [the docs](https://docs.example/fix).\n"


def one_shot(llm, *replies, flags=("--yes",), model="openai/x", env=None):
    llm.queue(*replies)
    base = ["--model", model, "--api-base", llm.url, *flags, "go"]
    return amas(*base, env={"OPENAI_API_KEY": "sk-x", **(env or {})})


def in_a_terminal(args: list[str], cwd: Path, keys=(), frames: list | None = None) -> str:
    """The real CLI with a pty as its terminal (80x24), its controlling terminal as a shell makes
    it: what a person would see, scrollback and screen, as a terminal emulator (pyte) draws it.
    `keys` are (drawn, typed) pairs: each typed once `drawn` has been drawn since the last keys
    (b"\x03" is Ctrl-C, which the terminal turns into SIGINT); `frames` gets every screen drawn."""
    leader, follower = pty.openpty()
    env = {**os.environ, "OPENAI_API_KEY": "sk-x", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = start(*args, cwd=cwd, env=env, stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    screen, keys = pyte.HistoryScreen(80, 24, history=1000), list(keys)
    stream, out, since, deadline = pyte.ByteStream(screen), b"", 0, time.monotonic() + 60
    while time.monotonic() < deadline:
        if keys and keys[0][0] in out[since:]:
            os.write(leader, keys.pop(0)[1])
            since = len(out)
        ready, _, _ = select.select([leader], [], [], 0.5)
        try:
            chunk = os.read(leader, 65536) if ready else b""
        except OSError:  # the child closed the terminal
            break
        out += chunk
        stream.feed(chunk)
        if chunk and frames is not None:
            frames.append("\n".join(line.rstrip() for line in screen.display))
        if not chunk and proc.poll() is not None:
            break
    proc.wait(10)
    os.close(leader)
    rows = [*screen.history.top, *screen.buffer.values()]
    scrollback = [
        "".join(row[x].data for x in range(80)).rstrip() for row in rows[: -len(screen.buffer)]
    ]
    return "\n".join(scrollback + [line.rstrip() for line in screen.display])


def test_in_a_terminal_the_answer_is_rendered_markdown_once_with_links_spelled_out(llm, isolated):
    llm.queue(text(ANSWER, pieces=12))
    out = in_a_terminal(["--model", "openai/x", "--api-base", llm.url, "go"], isolated)
    assert "**done**" not in out and "done" in out  # rendered, not raw Markdown
    assert "the docs (https://docs.example/fix)" in out  # the link's address is shown
    assert out.count("Result") == 1  # one copy: the live view was replaced, not kept


def test_in_a_terminal_a_long_answer_leaves_one_copy(llm, isolated):
    long = "".join(f"Line {i} of a long answer.\n\n" for i in range(60))
    llm.queue(text(long, pieces=60))
    out = in_a_terminal(["--model", "openai/x", "--api-base", llm.url, "go"], isolated)
    assert out.count("Line 59 of") == 1 and out.count("Line 3 of") == 1


def test_in_a_terminal_what_looks_like_html_in_an_answer_is_shown_as_text(llm, isolated):
    """Issue #43 item 6: rich's Markdown would drop it (markdown-it with html on)."""
    answer = "Return a **List<String>** or a vector<int>.\n\n<div>\n\nKeep <!-- x --> as it is.\n"
    llm.queue(text(answer))
    out = in_a_terminal(["--model", "openai/x", "--api-base", llm.url, "go"], isolated)
    assert "List<String>" in out and "vector<int>" in out and "**" not in out  # still Markdown
    assert "<div>" in out and "<!-- x -->" in out


def test_in_a_terminal_ctrl_c_mid_answer_keeps_the_partial_answer(llm, isolated):
    llm.queue(Stall([{"content": "A partial **answer** so far"}, {"content": " and the rest."}]))
    args = ["--model", "openai/x", "--api-base", llm.url, "go"]
    out = in_a_terminal(args, isolated, keys=[(b"so far", b"\x03")])
    assert "A partial answer so far" in out and "the rest" not in out
    assert "Interrupted; the conversation so far is kept." in out


def test_in_a_terminal_a_long_paragraph_wraps_at_words_and_streams_its_newest_words(llm, isolated):
    words = " ".join(f"word{i:03}" for i in range(400))  # 35 rows of 80 columns, no newline
    llm.queue(Stall([{"content": words + " NEWEST"}, {"content": " and the rest."}]))
    args = ["--model", "openai/x", "--api-base", llm.url, "go"]
    out = in_a_terminal(args, isolated, keys=[(b"NEWEST", b"\x03")])  # drawn while it stalls
    assert "the rest" not in out  # so the live view showed the newest words, not the first row
    assert all(f"word{i:03}" in out.split() for i in range(400))  # no word cut at the edge


def test_in_a_terminal_the_rendered_answer_wraps_at_words_not_at_the_edge(monkeypatch):
    import io

    from rich.console import Console

    screen, live = io.StringIO(), io.StringIO()  # stdout, where the answer goes; stderr
    monkeypatch.setattr(ui, "out", Console(file=screen, width=30, force_terminal=True))
    monkeypatch.setattr(ui, "console", Console(file=live, width=30, force_terminal=True))
    monkeypatch.setattr(ui, "INTERACTIVE", True)
    with ui.working():
        ui.pieces.append("alpha beta gamma delta epsilon zeta eta theta iota kappa")
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue()).splitlines()
    assert [line.strip() for line in shown] == [
        "alpha beta gamma delta epsilon",
        "zeta eta theta iota kappa",
    ]


# Something moves while a command or /compact runs (#50 item 1) ----------------------------------

STEPS = "for i in 1 2 3; do echo step $i; sleep 1; done"
SPINNER = re.compile(r"^\S (\d+)s (.*)$", re.M)  # a turning dot, the seconds, the latest line


def test_in_a_terminal_a_running_command_shows_its_seconds_and_latest_line(llm, isolated):
    llm.queue(tool("shell_command", {"command": STEPS}), text("Three steps ran."))
    frames: list[str] = []
    args = ["--model", "openai/x", "--api-base", llm.url, "--yes", "go"]
    out = in_a_terminal(args, isolated, frames=frames)
    shown = [found.groups() for frame in frames for found in SPINNER.finditer(frame)]
    assert any(line == "step 2" and int(seconds) >= 1 for seconds, line in shown), frames
    assert len({seconds for seconds, line in shown if line.startswith("step")}) >= 2  # counting
    assert "  ⎿ step 1\n    step 2\n    step 3\n    [exit code 0]" in out  # the result, as before
    assert not SPINNER.search(out.split("⎿")[1])  # the spinner went when the command ended
    llm.queue(tool("shell_command", {"command": STEPS}), text("Three steps ran."))
    piped = amas(*args, env={"OPENAI_API_KEY": "sk-x"})  # a pipe gets nothing new
    assert piped.stdout == "Three steps ran.\n" and "\x1b" not in piped.stderr
    assert "  ⎿ step 1\n    step 2\n    step 3\n    [exit code 0]\n" in piped.stderr


def test_in_a_terminal_ctrl_c_during_a_command_keeps_what_it_printed(llm, isolated):
    endless = "for i in $(seq 1 60); do echo step $i; sleep 1; done"
    llm.queue(tool("shell_command", {"command": endless}))
    args = ["--model", "openai/x", "--api-base", llm.url, "--yes", "go"]
    out = in_a_terminal(args, isolated, keys=[(b"step 2", b"\x03")])  # typed Ctrl-C
    assert "  ⎿ step 1\n    step 2" in out and "step 9" not in out, out
    assert "Interrupted; the conversation so far is kept." in out


def test_in_a_terminal_the_spinner_skips_a_blank_last_line_and_ctrl_c_says_interrupted(
    llm, isolated
):
    """A command whose last line is blank left the spinner with its seconds alone, and Ctrl-C then
    left a bare `⎿`: now the spinner shows its last words, and the result ends `[interrupted]`."""
    llm.queue(tool("shell_command", {"command": "echo step 1; echo; sleep 8"}))
    args = ["--model", "openai/x", "--api-base", llm.url, "--yes", "go"]
    out = in_a_terminal(args, isolated, keys=[(b"1s step 1", b"\x03")])
    assert "  ⎿ step 1\n    [interrupted]" in out, out


def test_in_a_terminal_compact_shows_a_spinner_with_its_seconds(llm, isolated):
    """Ctrl-C then ends it: the spinner goes, the REPL prompts again, Ctrl-D ends it."""
    llm.queue(text("First."), text("Second."), Stall(text("A summary.", pieces=2)))
    prompt, frames = "›".encode(), []
    keys = [(prompt, b"one\r"), (b"First.", b""), (prompt, b"two\r"), (b"Second.", b"")]
    keys += [(prompt, b"/compact\r"), (b"1s Compacting", b"\x03"), (prompt, b"\x04")]
    args = ["--model", "openai/x", "--api-base", llm.url]
    out = in_a_terminal(args, isolated, keys=keys, frames=frames)
    shown = [found.groups() for frame in frames for found in SPINNER.finditer(frame)]
    assert ("1", "Compacting 2 messages into a summary…") in shown, frames
    assert "Compacting" not in out and out.rstrip().endswith("›")  # a new prompt after it


def test_in_a_terminal_compaction_before_a_request_shows_its_own_spinner_alone(llm, isolated):
    """Automatic compaction runs before the answer's live view, not inside it (one live view at a
    time: rich 13 refuses a second, rich 14+ would stack "Thinking…" over "Compacting…")."""
    Path(".amas").mkdir()
    Path(".amas/config.yaml").write_text("max_context_tokens: 5\n")  # the first reply's 18 fill it
    llm.queue(text("First."), Stall(text("A summary.", pieces=2)))
    prompt, frames = "›".encode(), []
    keys = [(prompt, b"one\r"), (b"First.", b""), (prompt, b"two\r")]
    keys += [(b"1s Compacting", b"\x03"), (prompt, b"\x04")]
    out = in_a_terminal(["--model", "openai/x", "--api-base", llm.url], isolated, keys, frames)
    compacting = [frame for frame in frames if "Compacting 2 messages into a summary…" in frame]
    assert compacting and not any("Thinking…" in frame for frame in compacting), frames
    assert "Interrupted; the conversation so far is kept." in out and "Compacting" not in out


def test_through_a_pipe_the_answer_is_plain_text_with_no_escape_codes(llm, isolated):
    done = one_shot(llm, text("<think>hmm</think>" + ANSWER))
    assert done.returncode == 0 and "\x1b" not in done.stdout
    assert "The fix is **done**; see [the docs](https://docs.example/fix)." in done.stdout


# stdout holds the answer, nothing else (#38 item 1): `amas "summarize the API" > api.md` ---------


def test_through_a_pipe_stdout_holds_the_answer_alone_and_stderr_everything_else(llm, isolated):
    git_init(isolated)
    calls = [tool("write_file", {"path": "a.py", "content": "x = 1\n"}, "a")]
    calls += [tool("shell_command", {"command": "echo hi"}, "b")]
    done = one_shot(llm, *calls, text("## API\n\nTwo calls: `get` and `put`."))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "## API\n\nTwo calls: `get` and `put`.\n"  # the answer, plain, alone
    assert "│ write_file" in done.stderr and "+x = 1" in done.stderr  # the panel and the diff
    assert "│ shell_command" in done.stderr and "  ⎿ hi\n" in done.stderr  # a result
    assert done.stderr.splitlines()[-1] == "wrote a.py · ran echo hi"  # the summary


def test_a_provider_error_or_no_key_is_one_line_on_stderr_and_nothing_on_stdout(llm, isolated):
    bad_key = {"error": {"message": "Incorrect API key", "type": "invalid_request_error"}}
    done = one_shot(llm, (401, bad_key), flags=())
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "Incorrect API key" in done.stderr
    done = amas("--model", "openai/x", "hi", env={"OPENAI_API_KEY": None})
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "OPENAI_API_KEY" in done.stderr


def test_a_declined_question_is_on_stderr(llm, isolated):
    calls = [tool("write_file", {"path": "a.py", "content": "x = 1\n"}), text("Not written.")]
    done = one_shot(llm, *calls, flags=())
    assert done.stdout == "Not written.\n" and not Path("a.py").exists()
    assert "⚠ Apply this change to a.py? → no (no terminal to ask" in done.stderr, done.stderr


def test_a_tool_call_shows_in_a_panel_and_a_command_shows_its_last_lines(llm, isolated):

    lines = "; ".join(f"echo line {i}" for i in range(1, 10)) + "; echo '2 passed'"
    done = one_shot(llm, tool("shell_command", {"command": lines}), text("ok"))
    assert "╭" in done.stderr and "│ shell_command" in done.stderr and done.stdout == "ok\n"
    assert "line 9\n" in done.stderr and "2 passed" in done.stderr and "line 2\n" not in done.stderr
    # the last lines, as they ran, under a `…` that says there were more (none said so: `ls` seemed
    # to miss files, and a count after [exit code 0] read as lines yet to come)
    assert "  ⎿ …\n    line 6\n    line 7\n" in done.stderr
    assert "    2 passed\n    [exit code 0]\n" in done.stderr
    llm.queue(tool("shell_command", {"command": "printf ' M app.py\\n'"}), text("ok"))
    done = one_shot(llm)  # a first line's own indent is kept: " M" (changed) is not "M" (staged)
    assert "  ⎿  M app.py\n    [exit code 0]\n" in done.stderr, done.stderr
    assert llm.requests[-1]["body"]["messages"][-1]["content"] == " M app.py\n[exit code 0]"


def test_a_tool_panel_reads_like_the_call_and_a_command_shows_once(llm, isolated):
    """#38 item 9: the tool and its first argument's value, not the JSON; the command shown once,
    whole, however long (a question about it must show all of it)."""
    command = "echo " + "long " * 40 + "end"
    edit = tool("write_file", {"path": "app.py", "content": "x = 1\n"}, "a")
    done = one_shot(llm, edit, tool("shell_command", {"command": command}, "b"), text("ok"))
    panels = [line for line in done.stderr.splitlines() if line.startswith("│")]
    assert panels[0] == "│ write_file app.py │"
    assert '{"' not in done.stderr and "$ echo" not in done.stderr
    assert (
        " ".join(" ".join(line.strip("│ ").split()) for line in panels[1:])
        == f"shell_command {command}"
    )


def test_a_tool_name_with_markup_or_escapes_is_shown_as_text(capsys):
    ui.show_tool_call("[bold red]x[/] \x1b[2J", '{"a": "[link=http://evil]"}')
    out = capsys.readouterr().err
    assert "[bold red]x[/]" in out and "\\x1b[2J" in out and "\x1b[2J" not in out


# The turn's summary ------------------------------------------------------------------------------


def test_the_summary_lists_what_was_written_and_run(llm, isolated):
    git_init(isolated)
    replies = [tool("write_file", {"path": "app.py", "content": "x = 1\n"}, "a")]
    replies += [tool("shell_command", {"command": "echo hi"}, "b"), text("Done.")]
    done = one_shot(llm, *replies)
    assert done.stdout == "Done.\n"  # the answer alone; the summary is stderr's last line
    assert done.stderr.splitlines()[-1] == "wrote app.py · ran echo hi"


def test_the_summary_adds_the_turns_tokens_and_their_cost_when_litellm_prices_the_model(
    llm, isolated
):
    """As aider shows them after every reply: the tokens the turn's requests sent and received,
    summed, and what they cost by litellm's price of the model; a model it does not price: none."""
    llm.usage = {"prompt_tokens": 12000, "completion_tokens": 800, "total_tokens": 12800}
    replies = [tool("shell_command", {"command": "echo hi"}), text("Done.")]
    done = one_shot(llm, *replies, model="openai/gpt-4o-mini")
    last = done.stderr.splitlines()[-1]
    assert last == "ran echo hi · 24,000 tokens sent, 1,600 received, $0.0046", done.stderr
    done = one_shot(llm, text("Hello."), model="openai/gpt-4o-mini")  # no tools: the tokens alone
    assert done.stderr.splitlines()[-1] == "12,000 tokens sent, 800 received, $0.0023"
    done = one_shot(llm, text("Hello."), model="openai/unpriced-model")
    assert "tokens sent" not in done.stderr


def test_a_declined_command_is_not_in_the_summary_and_an_empty_summary_shows_nothing(llm, isolated):
    replies = [tool("shell_command", {"command": "rm -rf x"}), text("Declined, fine.")]
    done = one_shot(llm, *replies)
    assert done.stdout == "Declined, fine.\n"  # the answer's own line end, no more
    last = done.stderr.splitlines()[-1]
    assert last == "  ⎿ The user declined to run this command."  # its result; no summary after


def test_an_interrupted_turn_shows_no_summary(llm, config, capsys, isolated):
    llm.queue(tool("shell_command", {"command": "touch started; sleep 20"}))
    agent = Agent({**config, "auto_accept": True})
    interrupt_when("started")
    assert agent.turn("wait") == 130
    out = capsys.readouterr().err
    assert "Interrupted" in out and "ran touch" not in out


# /attach -----------------------------------------------------------------------------------------


def test_attach_adds_the_file_to_the_next_request(llm, config, isolated):
    Path("notes.md").write_text("remember the milk\n")
    agent = Agent(config)
    agent.command("/attach notes.md")
    llm.queue(text("ok"))
    agent.turn("what do my notes say?")
    sent = str(llm.requests[0]["body"]["messages"])
    assert "remember the milk" in sent and "what do my notes say?" in sent


def test_compact_right_after_two_attaches_summarizes_them(llm, config, isolated, capsys):
    Path("a.md").write_text("first notes\n")
    Path("b.md").write_text("second notes\n")
    agent = Agent(config)
    agent.command("/attach a.md")
    agent.command("/attach b.md")
    llm.queue(text("The user attached two files of notes."))
    assert agent.command("/compact") == 0  # no turn has run yet: nothing of a turn's is assumed
    assert len(llm.requests) == 1  # one request: the summary of all but the latest attach
    assert "The user attached two files of notes." in str(agent.messages)
    assert "first notes" not in str(agent.messages) and "second notes" in str(agent.messages)


def test_attach_follows_read_files_rules(llm, config, isolated, tmp_path, capsys):
    (tmp_path / "outside.txt").write_text("private\n")
    Path("big.txt").write_text("x" * (tools.MAX_READ + 5000))
    Path(".env").write_text("OPENAI_API_KEY=sk-test-secret\n")
    agent = Agent(config)
    agent.command(f"/attach {tmp_path / 'outside.txt'}")  # no terminal to ask: refused
    agent.command("/attach missing.txt")
    agent.command("/attach big.txt")
    agent.command("/attach .env")
    out, sent = capsys.readouterr().err, str(agent.messages)

    assert "outside the project" in out and "No such file" in out and "private" not in sent
    assert "[truncated: showing the first" in sent
    assert "sk-test-secret" not in sent and "OPENAI_API_KEY=***" in sent


# Input comfort -----------------------------------------------------------------------------------


def test_input_history_survives_a_restart_and_answers_stay_out_of_it(
    llm, config, isolated, tmp_path
):
    Path("a.py").write_text("x = 1\n")
    llm.queue(tool("write_file", {"path": "a.py", "content": "x = 2\n"}), text("done"))
    with terminal("change a.py", "y", "/quit"):
        Agent(config).repl()
    history = (tmp_path / "home" / ".amas_history").read_text()
    assert "change a.py" in history and "/quit" in history and "\n+y\n" not in history
    assert Path("a.py").read_text() == "x = 2\n"
    with terminal("\x1b[A"):  # arrow up in a new session: the last line comes back
        assert ui.ask("› ", {"/help": ""}, tmp_path / "home" / ".amas_history") == "/quit"


def test_tab_completes_a_slash_command(isolated, tmp_path):
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    completer = ui._comforts(Agent(tools.STATE["config"]).commands(), tmp_path / "h")["completer"]
    found = completer.get_completions(Document("/at"), CompleteEvent(completion_requested=True))
    assert [c.text for c in found] == ["/attach"]  # /help shows what each does


def test_in_a_terminal_a_long_notice_wraps_at_words(llm, isolated):
    """#43 item 13: a notice longer than the screen is wrapped by rich at words, not cut mid-word
    by the terminal; a pipe still gets it on one line."""
    words = " ".join(f"word{i:03}" for i in range(25))  # litellm's text is cut at 300
    llm.queue(*[(400, {"error": {"message": words}})] * 2)
    out = in_a_terminal(["--model", "openai/x", "--api-base", llm.url, "go"], isolated)
    assert all(f"word{i:03}" in out for i in range(25)), out
    piped = amas("--model", "openai/x", "--api-base", llm.url, "go", env={"OPENAI_API_KEY": "k"})
    assert "word000" in piped.stderr and len(piped.stderr.strip().splitlines()) == 1


def test_escape_enter_no_longer_starts_a_new_line(isolated):
    """Cut for the line budget (PLAN.md): Esc-Enter ends the line as Enter does; a pasted block
    still arrives whole."""
    with terminal("first\x1b\rsecond"):
        assert ui.ask("› ", {"/help": ""}, Path("h")) == "first"


# stdout is the answer, exactly (#50 item 7) -------------------------------------------------------


def test_through_a_pipe_stdout_is_the_answer_exactly_less_its_reasoning(llm, isolated):
    done = one_shot(llm, text("<think>Read it first.</think>root:x:0:0:root\n\tindented\n"))
    assert done.stdout == "root:x:0:0:root\n\tindented\n", done.stdout  # no ❌, no spaces for tabs


def test_with_stdout_redirected_the_spinner_still_shows_on_a_terminal_s_stderr(llm, isolated):
    llm.queue(text("The answer."))
    leader, follower = pty.openpty()
    with open(isolated / "answer.txt", "wb") as answer:
        args = ["--model", "openai/x", "--api-base", llm.url, "go"]
        env = {**os.environ, "OPENAI_API_KEY": "sk-x", "TERM": "xterm-256color"}
        proc = start(*args, env=env, stdin=follower, stdout=answer, stderr=follower)
        os.close(follower)
        drawn = b""
        while select.select([leader], [], [], 60)[0]:
            try:
                drawn += os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
        assert proc.wait(10) == 0
    os.close(leader)
    assert b"The answer." in drawn and drawn.endswith(b"\x1b[2K")  # streamed live, then erased
    assert (isolated / "answer.txt").read_text() == "The answer.\n"


def test_ctrl_c_while_litellm_first_loads_leaves_the_repl_able_to_answer(
    llm, isolated, monkeypatch
):
    """Ctrl-C during the first request's import of litellm (2-5 s) left it half imported: the
    next request died with a traceback and the REPL with it. Now Ctrl-C is ignored while litellm
    loads. A fresh interpreter: a real import."""
    monkeypatch.setenv("AMAS_TEST_EXEC", "1")
    llm.queue(text("The first answer."), text("The second answer."))
    keys = [(b"/help", b"first\r"), (b"1s Thinking", b"\x03")]  # litellm loads: 2-5 s
    keys += [(b"The first answer.", b"second\r")]
    keys += [(b"The second answer.", b""), ("›".encode(), b"\x04")]  # Ctrl-D at the next prompt
    out = in_a_terminal(["--model", "openai/x", "--api-base", llm.url], isolated, keys)
    assert "The first answer." in out and "The second answer." in out, out
    assert "Traceback" not in out and "Interrupted" not in out  # the Ctrl-C came while it loaded
