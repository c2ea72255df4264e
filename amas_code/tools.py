"""The model's tools: TOOLS holds their schemas, HANDLERS the functions. Handlers never raise."""

import inspect
import os
import re
import signal
import subprocess
from subprocess import DEVNULL, PIPE, STDOUT
from fnmatch import fnmatch
from pathlib import Path

from amas_code import ui
from amas_code.config import DEFAULT_CONFIG

TOOLS: list[dict] = []
HANDLERS: dict = {}
STATE: dict = {"config": DEFAULT_CONFIG, "checkpoint": None}
MAX_READ, MAX_OUTPUT, MAX_HITS = 50_000, 30_000, 200
EMPTY = "Tool executed successfully (no output)"


def register(*handlers) -> None:
    """The schema comes from the handler: its docstring, parameter names, types and defaults."""
    for fn in handlers:
        params = inspect.signature(fn).parameters.values()
        props = {p.name: {"type": {int: "integer"}.get(p.annotation, "string")} for p in params}
        required = [p.name for p in params if p.default is p.empty]
        schema = {"type": "object", "properties": props, "required": required}
        function = {"name": fn.__name__, "description": inspect.getdoc(fn), "parameters": schema}
        TOOLS.append({"type": "function", "function": function})
        HANDLERS[fn.__name__] = fn


def run(name: str, args: dict) -> str:
    if name not in HANDLERS:
        return f"Error: unknown tool {name!r}; available: {', '.join(HANDLERS)}"
    try:
        return HANDLERS[name](**args) or EMPTY
    except (TypeError, ValueError) as e:
        return f"Error: bad arguments for {name}: {e}"


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[: limit // 2]}\n[… {len(text) - limit} characters cut …]\n{text[-limit // 2 :]}"


def read_file(path: str) -> str:
    """Read a text file; lines come numbered."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        return f"Error: cannot read {path}: {e.strerror or e}"
    if b"\0" in data[:8192]:
        return f"{path} is a binary file ({len(data)} bytes); cannot display it."
    text = data[:MAX_READ].decode("utf-8", errors="replace")
    numbered = "\n".join(f"{i:4} | {line}" for i, line in enumerate(text.splitlines(), 1))
    if len(data) > MAX_READ:
        numbered += f"\n[truncated: showing the first {MAX_READ} of {len(data)} bytes]"
    return numbered or f"{path} is empty."


def change_file(path: str, new: str, verb: str) -> str:
    """Diff, ask unless auto-accept, write, checkpoint: the one road every file change takes."""
    target, checkpoint = Path(path), STATE["checkpoint"]
    try:
        old = target.read_bytes().decode("utf-8", "surrogateescape") if target.exists() else ""
        ui.show_diff(old, new, path)
        if not STATE["config"].get("auto_accept") and not ui.confirm(
            f"Apply this change to {path}?"
        ):
            return f"The user declined the change to {path}; nothing was written."
        before = checkpoint.before(target) if checkpoint else None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(new.encode("utf-8", "surrogateescape"))
    except OSError as e:
        return f"Error: cannot write {path}: {e.strerror or e}"
    note = checkpoint.save(before, f"{verb} {path}") if before else ""
    return f"{verb.capitalize()} {path} ({len(new.splitlines())} lines).{note}"


def write_file(path: str, content: str) -> str:
    """Write a file's full content, replacing what it held (or creating it)."""
    return change_file(path, content, "wrote")


def create_file(path: str, content: str) -> str:
    """Create a new file; refuses to overwrite an existing one."""
    if Path(path).exists():
        return f"Error: {path} already exists; use edit_file or write_file to change it."
    return change_file(path, content, "created")


def edit_file(path: str, old_str: str, new_str: str) -> str:
    """Replace the one exact occurrence of old_str in a file with new_str. Read the file first."""
    try:
        content = Path(path).read_bytes().decode("utf-8", "surrogateescape")
    except OSError as e:
        return f"Error: cannot read {path}: {e.strerror or e}"
    count = content.count(old_str) if old_str else 0
    if count != 1:
        why = f"appears {count} times (add context to make it unique)" if count else "was not found"
        return f"Error: old_str {why} in {path}. Read the file and copy the exact text."
    return change_file(path, content.replace(old_str, new_str, 1), "edited")


def shell_command(command: str, timeout: int = 0) -> str:
    """Run a shell command in the project directory (timeout in seconds, default 30)."""
    timeout = int(timeout or STATE["config"].get("shell_timeout", 30))
    ui.show_command(command)
    if not STATE["config"].get("auto_accept") and not ui.confirm("Run this command?"):
        return "The user declined to run this command."
    opts = dict(stdout=PIPE, stderr=STDOUT, stdin=DEVNULL, start_new_session=True, errors="replace")
    proc = subprocess.Popen(command, shell=True, text=True, **opts)
    try:
        out, status = proc.communicate(timeout=timeout)[0], f"[exit code {proc.returncode}]"
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as e:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group: the shell's children too
        out, status = proc.communicate()[0], f"[timed out after {timeout}s; killed]"
        if isinstance(e, KeyboardInterrupt):
            raise
    return f"{clip(out, MAX_OUTPUT)}\n{status}".strip()


def project_files(root: str = ".") -> list[str]:
    """Files under root, less what .gitignore (inside git) and the config `ignore` patterns skip."""
    git = ["git", "ls-files", "-co", "--exclude-standard", "-z"]
    try:
        found = subprocess.run(git, cwd=root, capture_output=True, check=True).stdout
        found = os.fsdecode(found).split("\0")
    except (subprocess.CalledProcessError, OSError):
        found = [os.path.relpath(Path(d, f), root) for d, _, fs in os.walk(root) for f in fs]
    skip = STATE["config"].get("ignore", [])
    return sorted(
        f for f in found if f and not any(fnmatch(p, g) for p in f.split("/") for g in skip)
    )


def list_files(path: str = ".") -> str:
    """List the project's files under a directory (ignored files left out)."""
    if not Path(path).is_dir():
        return f"Error: {path} is not a directory."
    files = project_files(path)
    return "\n".join(files[:500]) + (f"\n[… {len(files) - 500} more]" if len(files) > 500 else "")


def search_files(pattern: str, path: str = ".") -> str:
    """Search the project's files for a Python regular expression; returns file:line: text."""
    try:
        regex, hits = re.compile(pattern), []
    except re.error as e:
        return f"Error: bad regular expression {pattern!r}: {e}"
    for name in project_files(path) if Path(path).is_dir() else []:
        try:
            lines = Path(path, name).read_text(errors="replace").splitlines()
        except OSError:
            continue
        hits += [
            f"{name}:{i}: {line[:200]}" for i, line in enumerate(lines, 1) if regex.search(line)
        ]
    more = f"\n[… {len(hits) - MAX_HITS} more matches]" if len(hits) > MAX_HITS else ""
    return "\n".join(hits[:MAX_HITS]) + more if hits else f"No matches for {pattern!r} in {path}."


register(read_file, write_file, create_file, edit_file, shell_command, search_files, list_files)
