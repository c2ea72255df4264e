"""Each tool handler for real: files on disk, real subprocesses, a real git repository."""

import time
from pathlib import Path

from conftest import git_init

from amas_code import tools


def call(name: str, *args):
    """A tool as the agent calls it: through run(), which turns failures into text."""
    params = list(tools.HANDLERS[name].__code__.co_varnames)
    return tools.run(name, dict(zip(params, args)))


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_shell_timeout_kills_the_whole_process_group():
    tools.STATE["config"]["auto_accept"] = True
    start = time.monotonic()
    result = tools.shell_command(
        "sleep 60 & echo $! > child.pid; echo started; sleep 60", timeout=1
    )
    assert time.monotonic() - start < 10
    assert "started" in result and "timed out after 1s" in result
    child = int(Path("child.pid").read_text())
    deadline = time.monotonic() + 10  # the kill is sent; its arrival is waited for, not guessed
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(child)


def test_shell_captures_stdout_stderr_and_exit_code():
    tools.STATE["config"]["auto_accept"] = True
    result = tools.shell_command("echo out; echo err >&2; exit 3")
    assert "out" in result and "err" in result and "[exit code 3]" in result


def test_shell_output_is_truncated_with_a_note():
    tools.STATE["config"]["auto_accept"] = True
    result = tools.shell_command("python3 -c \"print('x' * 100000)\"")
    assert len(result) < tools.MAX_OUTPUT + 200 and "characters cut" in result


def test_shell_declined_without_a_terminal():
    assert "declined" in tools.shell_command("touch made") and not Path("made").exists()


def test_read_file_numbers_lines_and_handles_binary_large_and_bad_utf8():
    Path("a.txt").write_text("one\ntwo\n")
    assert call("read_file", "a.txt") == "   1 | one\n   2 | two"
    Path("b.bin").write_bytes(b"\x89PNG\0\0\0")
    assert "binary file" in call("read_file", "b.bin")
    Path("big.txt").write_text("y" * 80 + "\n" * 1 + "z" * 60_000)
    assert "truncated: showing the first 50000 of 60081 bytes" in call("read_file", "big.txt")
    Path("latin.txt").write_bytes(b"caf\xe9\n")
    assert call("read_file", "latin.txt") == "   1 | caf\ufffd"
    assert call("read_file", "missing.txt") == "Error: [Errno 2] No such file or directory: 'missing.txt'"
    assert "is not a regular file" in call("read_file", ".")


def test_edit_file_requires_a_unique_exact_match():
    tools.STATE["config"]["auto_accept"] = True
    Path("f.py").write_text("a = 1\na = 1\n")
    assert "appears 2 times" in call("edit_file", "f.py", "a = 1", "b")
    assert "was not found" in call("edit_file", "f.py", "zzz", "b")
    assert "was not found" in call("edit_file", "f.py", "", "b")
    assert "No such file or directory: 'nope.py'" in call("edit_file", "nope.py", "a", "b")
    assert Path("f.py").read_text() == "a = 1\na = 1\n"


def test_create_file_refuses_to_overwrite_and_makes_directories():
    tools.STATE["config"]["auto_accept"] = True
    Path("here.txt").write_text("keep")
    assert "already exists" in call("create_file", "here.txt", "new")
    assert Path("here.txt").read_text() == "keep"
    assert "Created" in call("create_file", "deep/er/new.txt", "x\n")
    assert Path("deep/er/new.txt").read_text() == "x\n"


def test_list_and_search_skip_ignored_and_gitignored_paths():
    git_init(Path("."))
    Path(".gitignore").write_text("secret/\n")
    for name in ("src/app.py", "secret/key.py", "node_modules/lib.py", "__pycache__/c.py"):
        Path(name).parent.mkdir(exist_ok=True)
        Path(name).write_text("needle = 1\n")
    assert call(
        "list_files",
    ).split() == [".gitignore", "src/app.py"]
    assert call("search_files", "needle") == "src/app.py:1: needle = 1"
    assert call("search_files", "(").startswith("Error: missing ), unterminated subpattern")
    assert "No matches" in call("search_files", "haystack")


def test_list_files_outside_git_uses_the_ignore_list():
    Path("pkg").mkdir()
    Path("pkg/m.py").write_text("")
    Path("dist").mkdir()
    Path("dist/out.js").write_text("")
    assert (
        call(
            "list_files",
        )
        == "pkg/m.py"
    )


def test_unknown_tool_bad_arguments_and_empty_output():
    assert "unknown tool 'nope'" in tools.run("nope", {})
    assert "bad arguments for read_file" in tools.run("read_file", {"file": "x"})
    assert "bad arguments for shell_command" in tools.run(
        "shell_command", {"command": "true", "timeout": "soon"}
    )
    tools.STATE["config"]["auto_accept"] = True
    assert tools.run("shell_command", {"command": "true"}) == "[exit code 0]"
    assert tools.run("list_files", {}) == tools.WORDS["empty"]


def test_schemas_come_from_the_handlers():
    schema = {t["function"]["name"]: t["function"] for t in tools.TOOLS}
    shell = schema["shell_command"]["parameters"]
    assert shell["required"] == ["command"] and shell["properties"]["timeout"]["type"] == "integer"
    assert schema["edit_file"]["parameters"]["required"] == ["path", "old_str", "new_str"]
    assert all(f["description"] for f in schema.values())


def test_a_search_that_matches_everywhere_gives_its_head_and_tail_within_the_output_bound():
    Path("big.txt").write_text("".join(f"hit number {i}\n" for i in range(20_000)))
    result = tools.search_files("hit")
    assert result.startswith("big.txt:1: hit number 0\n") and result.endswith(": hit number 19999")
    assert len(result) < tools.MAX_OUTPUT + 200 and "characters cut" in result
