"""Rules, AGENTS.md/CLAUDE.md, skills and compaction, checked on what the model receives."""

from pathlib import Path

from fake_llm import text, tool

from amas_code.agent import PROMPTS, Agent


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)


def system_of(request: dict) -> str:
    return request["body"]["messages"][0]["content"]


def test_rules_agents_md_and_claude_md_reach_the_model_every_turn(llm, config, isolated):
    write_tree(
        isolated, {".amas/rules.md": "Always use tabs.\n", "AGENTS.md": "Run `make check`.\n"}
    )
    write_tree(isolated, {"CLAUDE.md": "Never touch vendor/.\n"})
    llm.queue(text("ok"), text("still ok"))
    agent = Agent(config)
    agent.turn("hello")
    (isolated / ".amas/rules.md").write_text("Always use spaces.\n")  # rebuilt every turn
    (isolated / "CLAUDE.md").unlink()
    agent.turn("again")
    first, second = system_of(llm.requests[0]), system_of(llm.requests[1])
    assert first.startswith("You are Amas Code") and "## Context & Rules" in first
    assert "# Browser Control & Web Interaction" in first and "never type" in first.lower()
    for expected in ("Always use tabs.", "Run `make check`.", "Never touch vendor/."):
        assert expected in first
    assert "Always use spaces." in second and "Always use tabs." not in second
    assert "Never touch vendor/." not in second and "Run `make check`." in second


def test_without_rule_files_the_prompt_says_so(llm, config):
    llm.queue(text("ok"))
    Agent(config).turn("hi")
    assert "(no rules.md, AGENTS.md or CLAUDE.md in this project)" in system_of(llm.requests[0])


def test_skills_are_included_only_when_the_conversation_matches(llm, config, isolated, tmp_path):
    write_tree(isolated, {".amas/skills/docker.md": "DOCKER-SKILL: use multi-stage builds.\n"})
    write_tree(isolated, {".amas/skills/css-style.md": "CSS-SKILL: use rem units.\n"})
    write_tree(
        isolated, {".amas/skills/deploy/SKILL.md": "---\nname: deploy\n---\nRELEASE-SKILL\n"}
    )
    (isolated / ".amas/skills/dangling.md").symlink_to(isolated / "missing.md")
    (tmp_path / "outside.md").write_text("OUTSIDE-SKILL\n")
    (isolated / ".amas/skills/docker-x.md").symlink_to(tmp_path / "outside.md")  # leads outside
    llm.queue(text("ok"), text("ok"))
    agent = Agent(config)
    agent.turn("Please deploy the Docker image")
    system = system_of(llm.requests[0])
    assert "DOCKER-SKILL" in system and "RELEASE-SKILL" in system
    assert "CSS-SKILL" not in system and "OUTSIDE-SKILL" not in system
    agent.turn("now the CSS style for the header")
    assert "CSS-SKILL" in system_of(llm.requests[1])


def test_rule_files_that_lead_outside_the_project_are_not_sent(llm, config, isolated, tmp_path):
    (tmp_path / "secret.txt").write_text("PRIVATE KEY MATERIAL\n")
    (isolated / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
    llm.queue(text("ok"))
    Agent(config).turn("hi")
    assert "PRIVATE KEY MATERIAL" not in system_of(llm.requests[0])


def test_long_conversations_compact_by_themselves_and_keep_tool_pairs(llm, config, isolated):
    Path("notes.txt").write_text("lorem ipsum " * 200)
    llm.queue(tool("read_file", {"path": "notes.txt"}), text("read it"))
    llm.queue(text("SUMMARY: the user read notes.txt"), text("answer after compaction"))
    llm.usage = {"prompt_tokens": 480, "completion_tokens": 20, "total_tokens": 500}
    agent = Agent({**config, "max_context_tokens": 300})  # the server says 500 were used
    assert agent.turn("read notes.txt") == 0
    assert agent.turn("what next?") == 0
    summarize, after = llm.requests[2]["body"]["messages"], llm.requests[3]["body"]["messages"]
    assert summarize[-1]["content"] == PROMPTS["summarize"]
    assert [m["role"] for m in after] == ["system", "user", "assistant", "user"]
    assert (
        "SUMMARY: the user read notes.txt" in after[1]["content"]
        and after[3]["content"] == "what next?"
    )
    for request in llm.requests:
        messages = request["body"]["messages"]
        called = {c["id"] for m in messages for c in m.get("tool_calls") or []}
        assert {m["tool_call_id"] for m in messages if m["role"] == "tool"} == called
    assert agent.messages[-1]["content"] == "answer after compaction"


def test_compaction_mid_turn_keeps_the_latest_tool_exchange_verbatim(llm, config, capsys):
    Path("notes.txt").write_text("lorem ipsum " * 200)
    llm.queue(text("hello"), tool("read_file", {"path": "notes.txt"}, "call_9"))
    llm.queue(text("SUMMARY: greeted"), tool("list_files", {}, "call_10"), text("done"))
    agent = Agent({**config, "max_context_tokens": 300})
    assert agent.turn("hi") == 0
    llm.usage = {"prompt_tokens": 480, "completion_tokens": 20, "total_tokens": 500}
    assert agent.turn("read notes.txt") == 0
    assert llm.requests[2]["body"]["messages"][-1]["content"] == PROMPTS["summarize"]
    after = llm.requests[3]["body"]["messages"]
    assert after[0]["role"] == "system" and after[0]["content"].startswith("You are Amas Code")
    assert "SUMMARY: greeted" in after[1]["content"] and after[3]["content"] == "read notes.txt"
    assert after[4]["tool_calls"][0]["id"] == "call_9" and after[5]["tool_call_id"] == "call_9"
    assert "lorem ipsum" in after[5]["content"] and len(after) == 6
    # still over the limit, but nothing new to summarise: no second summary, no noise
    assert len(llm.requests) == 5 and len(llm.requests[4]["body"]["messages"]) == 8
    assert "Nothing to compact" not in capsys.readouterr().err


def test_skills_reach_the_model_and_compact_works_from_the_repl(llm, config, isolated, capsys):
    from conftest import terminal

    write_tree(
        isolated, {".amas/skills/pytest.md": "---\ndescription: Test conventions\n---\nUse -q.\n"}
    )
    llm.queue(text("tests pass"))
    with terminal("run pytest please", "/compact", "/quit"):
        Agent(config).repl()
    out = capsys.readouterr().err
    assert "Use -q." in system_of(llm.requests[0])

    assert len(llm.requests) == 1  # nothing to compact: no request
