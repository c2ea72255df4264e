""".amas/history.jsonl (issue #15's first item; `-c/--continue` was cut for the budget, see PLAN.md),
through the real CLI, and kept from being turned against the user (#25)."""

import json
import os
from pathlib import Path

from conftest import amas, interrupt_when
from fake_llm import text, tool

from amas_code.agent import HISTORY, Agent


def cli(llm, *args: str, stdin: str = ""):
    base = ["--model", "openai/x", "--api-base", llm.url, "--yes", *args]
    return amas(*base, env={"OPENAI_API_KEY": "sk-env-secret-999"}, stdin=stdin)


def test_every_message_is_appended_when_the_turn_ends_without_secrets(llm, isolated):
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


def test_a_turn_ended_by_an_error_or_ctrl_c_is_written_too(llm, config, isolated):
    error = (401, {"error": {"message": "Incorrect API key provided", "type": "x"}})
    llm.queue(tool("shell_command", {"command": "echo hi"}), error)
    assert Agent({**config, "auto_accept": True}).turn("fail") == 2
    llm.queue(tool("shell_command", {"command": "touch started; sleep 20"}))
    interrupt_when("started")
    assert Agent({**config, "auto_accept": True}).turn("wait") == 130
    records = [json.loads(line) for line in HISTORY.read_text().splitlines()]
    assert [r["role"] for r in records] == ["user", "assistant", "tool"] * 2
    assert records[-1]["content"] == "Interrupted by the user."


def test_a_planted_history_symlink_is_never_written_through(
    llm, config, isolated, tmp_path, capsys
):
    rc = tmp_path / "bashrc"
    rc.write_text("# the user's shell rc\n")
    Path(".amas").mkdir()
    HISTORY.symlink_to(rc)
    llm.queue(text("hello"))
    assert Agent(config).turn("hi") == 0
    assert rc.read_text() == "# the user's shell rc\n"
    assert "History not saved" in capsys.readouterr().err
    HISTORY.unlink()
    assert Path(".amas/.gitignore").read_text() == "*\n"  # written beside the planted link
    Path(".amas/.gitignore").unlink()
    os.rmdir(".amas")
    Path(".amas").symlink_to(tmp_path)  # the folder itself leads outside
    llm.queue(text("hello"))
    assert Agent(config).turn("hi") == 0
    assert not (tmp_path / "history.jsonl").exists() and "leads outside" in capsys.readouterr().err
