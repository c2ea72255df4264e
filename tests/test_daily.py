"""Issue #43, the daily user's turn: first contact, loops, what the conversation knows, the screen.
The real CLI through a pipe, the scripted server and the real litellm."""

import functools
import http.server
import os
import threading
from contextlib import contextmanager
from pathlib import Path

from conftest import amas
from fake_llm import text, tool

from amas_code import config as settings

# 1. First contact ---------------------------------------------------------------------------------


def test_the_first_run_uses_the_model_of_the_key_that_is_set(llm, isolated):
    llm.queue(text("Hello."))
    done = amas("--api-base", llm.url, "hi", env={"OPENAI_API_KEY": "sk-x"})
    assert done.returncode == 0 and done.stdout == "Hello.\n", done.stderr
    assert llm.requests[0]["body"]["model"] == "gpt-4o-mini"  # OpenAI's, not Gemini's


def test_the_model_follows_the_key_and_a_chosen_model_wins(isolated, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    assert settings.load(".")["model"].startswith("anthropic/")
    (Path(os.environ["AMAS_HOME"]) / "config.yaml").write_text("model: ollama/qwen\n")
    assert settings.load(".")["model"] == "ollama/qwen"


def test_no_key_at_all_is_one_line_before_litellm_loads(isolated, tmp_path):
    spy = tmp_path / "spy"  # a litellm that leaves a mark if anything imports it
    spy.mkdir()
    (spy / "litellm.py").write_text(f"open({str(tmp_path / 'loaded')!r}, 'w')\n")
    done = amas("hi", env={"PYTHONPATH": str(spy), "GOOGLE_API_KEY": None})
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "OPENAI_API_KEY" in done.stderr and "~/.config/amas/config.yaml" in done.stderr
    assert not (tmp_path / "loaded").exists()


# 2. Long and looping turns ------------------------------------------------------------------------


def one_shot(llm, *replies, flags=("--yes",)):
    llm.queue(*replies)
    base = ["--model", "openai/x", "--api-base", llm.url, *flags, "go"]
    return amas(*base, env={"OPENAI_API_KEY": "sk-x"})


def test_past_20_rounds_a_warning_once_and_the_turn_goes_on(llm, isolated):
    for i in range(25):
        Path(f"f{i}.txt").write_text(f"{i}\n")
    calls = [tool("read_file", {"path": f"f{i}.txt"}, f"c{i}") for i in range(25)]
    done = one_shot(llm, *calls, text("Read them all."))
    assert done.returncode == 0 and done.stdout == "Read them all.\n", done.stderr
    assert done.stderr.count("20 tool rounds in this turn") == 1
    assert len(llm.requests) == 26  # no cap: the model went on to its answer


def test_the_same_call_three_times_in_a_row_stops_the_turn(llm, isolated):
    Path("a.txt").write_text("a\n")
    Path("b.txt").write_text("b\n")
    same = [tool("read_file", {"path": "a.txt"}, f"c{i}") for i in range(4)]
    other = tool("read_file", {"path": "b.txt"}, "o")
    done = one_shot(llm, same[0], same[1], other, *same[1:], text("never asked for"))
    assert "same call three times in a row" in done.stderr
    assert len(llm.requests) == 6 and "never asked for" not in done.stdout  # a, a, b, a, a, a


# 3. The conversation knows what happened ----------------------------------------------------------


def test_what_undo_or_redo_showed_goes_before_the_next_request_once(llm, config, isolated):
    from amas_code.agent import Agent

    agent = Agent(config)
    assert agent.noted("Rolled back: edited calc.py.") == "Rolled back: edited calc.py."
    llm.queue(text("I see calc.py is back as it was."), text("ok"))
    agent.turn("go on")
    agent.turn("and now?")
    first, second = (r["body"]["messages"][-1]["content"] for r in llm.requests)
    assert "Rolled back: edited calc.py." in first and first.endswith("go on")
    assert second == "and now?"  # told once


def test_attach_says_how_sends_nothing_when_it_fails_and_counts_the_lines(llm, isolated):
    Path("calc.py").write_text("".join(f"x{i} = {i}\n" for i in range(21)))
    llm.queue(text("It sets 21 names."))
    base = ["--model", "openai/x", "--api-base", llm.url]
    typed = "/attach\n/attach missing.py\n/attach calc.py\nwhat does it do?\n"
    done = amas(*base, env={"OPENAI_API_KEY": "sk-x"}, stdin=typed)
    assert (
        "/attach FILE" in done.stderr
        and "No such file or directory" in done.stderr
        and "missing.py" in done.stderr
    )
    assert "Attached calc.py (21 lines)" in done.stderr and "╭" not in done.stderr  # no panel
    sent = [m["content"] for m in llm.requests[0]["body"]["messages"][1:]]
    assert len(sent) == 2 and "x20 = 20" in sent[0] and sent[1] == "what does it do?"


# 12. fetch_url of something that is not text ------------------------------------------------------


@contextmanager
def served(folder: Path, name: str, data: bytes):
    """A file served on loopback by Python's own HTTP server (its type guessed from the name); yields
    its URL."""
    folder.mkdir()
    (folder / name).write_bytes(data)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/{name}"
    finally:
        server.shutdown()


def test_fetch_url_of_an_image_is_one_line_with_its_type_and_size(llm, isolated, tmp_path):
    with served(tmp_path / "site", "logo.png", b"\x89PNG\r\n\x1a\n" + bytes(60_000)) as url:
        done = one_shot(llm, tool("fetch_url", {"url": url}), text("A PNG."))
    result = llm.requests[1]["body"]["messages"][-1]["content"]
    assert result == f"{url}: 60008 bytes of image/png content; not shown.", result[:80]
    assert done.stdout == "A PNG.\n"


# #50, the small things -----------------------------------------------------------------------------


def test_undo_says_1_turn_not_1_turns(llm, isolated):
    llm.queue(tool("write_file", {"path": "a.txt", "content": "x\n"}), text("done"))
    base = ["--model", "openai/x", "--api-base", llm.url]
    amas(*base, "--yes", "write a.txt", env={"OPENAI_API_KEY": "sk-x"})
    undone = amas("undo")
    assert "Undid 1 turn: 'write a.txt': a.txt." in undone.stderr, undone.stderr


def test_attach_of_a_binary_file_says_it_is_not_text_and_sends_nothing(llm, isolated):
    Path("logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0" + bytes(100))
    llm.queue(text("ok"))
    base = ["--model", "openai/x", "--api-base", llm.url]
    done = amas(*base, env={"OPENAI_API_KEY": "sk-x"}, stdin="/attach logo.png\nhello\n")
    assert "logo.png is a binary file (111 bytes)" in done.stderr and "Attached" not in done.stderr
    sent = [m["content"] for m in llm.requests[0]["body"]["messages"][1:]]
    assert sent == ["hello"]


def test_the_repl_with_no_key_says_so_in_its_first_line(isolated):
    done = amas(stdin="/quit\n")
    first = done.stderr.splitlines()[0]
    assert "no API key" in first and "·  ·" not in first, first


def test_fetch_url_of_an_office_document_is_one_line(llm, isolated, tmp_path):
    with served(tmp_path / "site", "report.xlsx", b"PK\x03\x04" + bytes(5000)) as url:
        one_shot(llm, tool("fetch_url", {"url": url}), text("A spreadsheet."))
    result = llm.requests[1]["body"]["messages"][-1]["content"]
    assert result.startswith(f"{url}: 5004 bytes of application/vnd.openxmlformats"), result[:120]
    assert result.endswith("content; not shown.")


def test_the_identical_call_stop_is_told_to_the_model_at_the_next_request(llm, isolated):
    Path("a.txt").write_text("a\n")
    same = [tool("read_file", {"path": "a.txt"}, f"c{i}") for i in range(3)]
    llm.queue(*same, text("I was looping."))
    base = ["--model", "openai/x", "--api-base", llm.url]
    done = amas(*base, env={"OPENAI_API_KEY": "sk-x"}, stdin="read a.txt\nwhat happened?\n")
    assert "same call three times in a row" in done.stderr
    told = llm.requests[-1]["body"]["messages"][-1]["content"]
    assert "same call three times in a row" in told and told.endswith("what happened?")


def test_undo_does_not_name_a_kept_file_as_undone_too(llm, isolated):
    writes = [tool("write_file", {"path": p, "content": "agent\n"}, p) for p in ("a.txt", "b.txt")]
    llm.queue(*writes, text("done"))
    base = ["--model", "openai/x", "--api-base", llm.url]
    amas(*base, "--yes", "write both", env={"OPENAI_API_KEY": "sk-x"})
    Path("a.txt").write_text("the user's\n")
    undone = amas("undo").stderr
    assert "Undid 1 turn: 'write both': b.txt. Kept as they are, changed since: a.txt." in undone


KEY = {"OPENAI_API_KEY": "sk-x"}


def test_a_provider_error_names_the_server_and_drops_litellm_s_notes_to_programmers(llm, isolated):
    done = amas("--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "hi", env=KEY)
    assert done.stderr == "✗ InternalServerError from http://127.0.0.1:9/v1: Connection error.\n"
    failed = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    llm.queue((500, failed), (500, failed))  # the first try and its one retry
    base = llm.url.removesuffix("/v1")  # Anthropic's client adds /v1/messages
    done = amas(
        "--model", "anthropic/claude-x", "--api-base", base, "hi", env={"ANTHROPIC_API_KEY": "k"}
    )
    assert done.returncode == 1 and "Internal server error" in done.stderr, done.stderr
    assert f"InternalServerError from {base}: b'" in done.stderr  # the server's own words, first
    assert "Handle with" not in done.stderr and "litellm." not in done.stderr


def test_clear_starts_a_new_conversation_and_exit_leaves_as_quit_does(llm, config):
    from conftest import terminal

    from amas_code.agent import Agent

    llm.queue(text("Noted: 42."), text("I do not know."))
    with terminal("remember 42", "/clear", "what was the number?", "/exit", "never sent"):
        Agent(config).repl()
    assert len(llm.requests) == 2  # /exit ended the REPL: the last line was never sent
    asked = [m["content"] for m in llm.requests[1]["body"]["messages"] if m["role"] != "system"]
    assert asked == ["what was the number?"], asked  # nothing of the conversation before /clear
    history = Path(".amas/history.jsonl").read_text()
    assert "remember 42" in history and "what was the number?" in history  # both kept there


def test_a_at_a_question_answers_yes_to_every_later_one_of_its_kind_but_destroying_asks(
    llm, isolated
):
    """aider's "All": `a` to a command's question runs the later ones unasked; an edit still asks,
    and so does a command that can destroy data, each time."""
    from test_look import in_a_terminal

    llm.queue(
        tool("shell_command", {"command": "echo 1 > one.txt"}),
        tool("shell_command", {"command": "echo 2 > two.txt"}),
        tool("shell_command", {"command": "rm one.txt"}),
        tool("write_file", {"path": "app.py", "content": "x = 1\n"}),
        tool("shell_command", {"command": "echo 3 > three.txt"}),
        text("Done."),
    )
    keys = [
        (b"Run it? [y/N/a=always]", b"a\r"),
        (b"beyond /undo. Run it? [y/N]", b"n\r"),
        (b"app.py? [y/N/a=always]", b"y\r"),
    ]
    out = in_a_terminal(["--model", "openai/x", "--api-base", llm.url, "go"], isolated, keys)
    assert out.count("Run it? [y/N/a=always]") == 1, out  # two.txt and three.txt ran unasked
    assert "This command reaches beyond /undo. Run it? [y/N] n" in out  # no `a` offered
    assert [Path(f).read_text() for f in ("one.txt", "two.txt", "three.txt")] == [
        "1\n",
        "2\n",
        "3\n",
    ]
    assert Path("app.py").read_text() == "x = 1\n" and "Done." in out
