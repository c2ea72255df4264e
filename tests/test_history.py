""".amas/history.jsonl and `amas -c` / `--continue` (issue #15's first item), through the real CLI and
a REPL fed through prompt_toolkit, checked on what the scripted server receives."""

import json
import os
from pathlib import Path

from conftest import amas, terminal
from fake_llm import text, tool

from amas_code.agent import HISTORY, Agent


def cli(llm, *args: str, stdin: str = ""):
    base = ["--model", "openai/x", "--api-base", llm.url, "--yes", *args]
    return amas(*base, env={"OPENAI_API_KEY": "sk-env-secret-999"}, stdin=stdin)


def test_every_message_is_appended_as_it_happens_without_secrets(llm, isolated):
    Path(os.environ["AMAS_HOME"], "config.yaml").write_text("api_key: sk-config-secret-123\n")
    Path("a.txt").write_text("key is sk-config-secret-123 and sk-env-secret-999\n")
    llm.queue(tool("read_file", {"path": "a.txt"}), text("It holds two keys."))
    assert cli(llm, "what is in a.txt?").returncode == 0
    lines = HISTORY.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["role"] for r in records] == ["user", "assistant", "tool", "assistant"]
    assert (
        records[0]["content"] == "what is in a.txt?" and len({r["session"] for r in records}) == 1
    )
    assert records[2]["content"] == "   1 | key is *** and ***"
    assert "sk-config-secret-123" not in HISTORY.read_text()
    assert "sk-env-secret-999" not in HISTORY.read_text()


def test_continue_sends_the_earlier_messages_in_a_one_shot(llm, isolated):
    llm.queue(text("Noted: the port is 8123."))
    cli(llm, "remember that the port is 8123")
    llm.queue(text("It is 8123."))
    assert cli(llm, "-c", "which port?").returncode == 0
    sent = [m["content"] for m in llm.requests[-1]["body"]["messages"][1:]]
    assert sent == ["remember that the port is 8123", "Noted: the port is 8123.", "which port?"]
    llm.queue(text("A fresh start."))
    cli(llm, "which port?")  # without -c: a new session
    assert len(llm.requests[-1]["body"]["messages"]) == 2


def test_continue_in_the_repl_and_after_a_session_cut_mid_tool_call(llm, config, isolated):
    agent = Agent(config)
    agent.messages = [{"role": "user", "content": "list"}]
    agent.messages.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": "{}"},
                }
            ],
        }
    )
    agent.remember()  # the process died here, before the tool ran
    llm.queue(text("Sorry, the listing was cut off."))
    with terminal("go on", "/quit"):
        Agent(config, resume=True).repl()
    sent = llm.requests[0]["body"]["messages"]
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "user"]
    assert sent[3]["content"] == "The session ended before this tool call ran."
    assert sent[4]["content"] == "go on"


def test_continue_after_a_compaction_starts_from_the_summary(llm, config, isolated):
    llm.queue(text("one"), text("two"), text("SUMMARY-OF-ONE"), text("three"))
    agent = Agent(config)
    agent.turn("first")
    agent.turn("second")
    agent.command("/compact")
    Agent(config, resume=True).turn("third")
    sent = [m["content"] for m in llm.requests[-1]["body"]["messages"][1:]]
    assert "SUMMARY-OF-ONE" in sent[0] and "first" not in str(sent) and sent[-1] == "third"


def test_continue_with_no_or_a_broken_history_starts_fresh(llm, config, isolated, capsys):
    llm.queue(text("hello"), text("hello again"))
    assert Agent(config, resume=True).turn("hi") == 0
    assert "No earlier session to continue here" in capsys.readouterr().out
    HISTORY.write_text('{"session": "x", "role": "user", "content": "ok"}\n{broken\n')
    assert Agent(config, resume=True).turn("hi") == 0
    assert "No earlier session to continue here (JSONDecodeError)" in capsys.readouterr().out
    assert len(llm.requests[-1]["body"]["messages"]) == 2
