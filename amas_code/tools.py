"""The model's tools: TOOLS holds their schemas, HANDLERS the functions; run() never raises."""

import functools
import inspect
import json
import os
import pkgutil
import re
import shutil
import signal
import subprocess
import threading
from contextlib import suppress
from fnmatch import fnmatch
from pathlib import Path

from amas_code import ui
from amas_code.config import DEFAULT_CONFIG, MASK, WORDS, packaged, redact

TOOLS: list[dict] = []
HANDLERS: dict = {}
TYPES: dict = {}  # tool name -> {parameter: its Python type}, for checking what a model sends
STATE: dict = {"config": DEFAULT_CONFIG, "checkpoint": None, "root": ".", "done": []}
MAX_READ, MAX_OUTPUT, MAX_FETCH, MAX_SEARCH = 50_000, 30_000, 2_000_000, 1_000_000
# The judge reads bash, so commands run with bash where there is one (/bin/sh may be dash).
GIT_FILES, BASH = ["git", "ls-files", "-co", "--exclude-standard", "-z"], shutil.which("bash")
RULES, LANGUAGES = packaged("destructive.yaml"), packaged("languages.yaml")
SCRIPTS, ASK, WORD = (re.compile("|".join(RULES[k]), re.S) for k in ("scripts", "ask", "words"))


class ToolError(Exception):
    """A tool cannot do what was asked; run() hands the message to the model."""


# Errors whose message run() gives the model as the result.
REPORTED: tuple = (ToolError, OSError, re.error, RecursionError)


def register(*handlers: object) -> None:
    """The schema comes from the handler: its docstring, parameter names, types and defaults."""
    for fn in handlers:
        params = inspect.signature(fn).parameters.values()
        props = {p.name: {"type": {int: "integer"}.get(p.annotation, "string")} for p in params}
        required = [p.name for p in params if p.default is p.empty]
        schema = {"type": "object", "properties": props, "required": required}
        function = {"name": fn.__name__, "description": inspect.getdoc(fn), "parameters": schema}
        TOOLS.append({"type": "function", "function": function})
        HANDLERS[fn.__name__], TYPES[fn.__name__] = fn, {p.name: p.annotation for p in params}


def run(name: str, args: dict | str) -> str:
    if name not in HANDLERS:
        return WORDS["unknown_tool"].format(name, ", ".join(HANDLERS))
    try:
        kwargs = dict(json.loads(args or "{}") if isinstance(args, str) else args)  # an object
        if wrong := [k for k, v in kwargs.items() if not isinstance(v, TYPES[name].get(k, object))]:
            raise TypeError(f"wrong type for {', '.join(wrong)}; see the tool's parameters")
        return HANDLERS[name](**kwargs) or WORDS["empty"]
    except json.JSONDecodeError as e:
        return WORDS["not_json"].format(name, e)
    except (TypeError, ValueError) as e:
        return WORDS["bad_arguments"].format(name, e)
    except REPORTED as e:
        return f"Error: {(str(e).strip() or type(e).__name__).splitlines()[0]}"


def describe() -> str:
    """The tools as lines of text, for models that write their tool calls as text."""
    return "\n".join(f"- {n}({', '.join(TYPES[n])}): {f.__doc__}" for n, f in HANDLERS.items())


@functools.cache
def grammar(language: str) -> tuple:
    """The tree-sitter parser of one language and a cursor over its query, which starts no deeper
    than the language's max_start_depth (if it has one), built on first use: the map's (skills.py)
    and the command judge's."""
    from tree_sitter import Language, Parser, Query, QueryCursor

    lang = Language(pkgutil.resolve_name(LANGUAGES[language]["grammar"])())
    cursor = QueryCursor(Query(lang, LANGUAGES[language]["query"]))
    cursor.set_max_start_depth(LANGUAGES[language].get("max_start_depth", 2**32 - 1))
    return Parser(lang), cursor


def destructive(line: str) -> bool:
    """Whether a shell line can destroy work: tree-sitter-bash finds every command in it, wherever it
    stands, and destructive.yaml judges each; a line that does not parse asks (no telling what runs).
    A script taken out of a rendered command has its hidden spaces (see render) shown again."""
    tree = grammar("bash")[0].parse(line.translate(RULES["show"]).encode(errors="surrogateescape"))
    found = grammar("bash")[1].captures(tree.root_node)
    scripts = [node.text.decode(errors="replace") for node in found.get("script", [])]
    commands = {render(node) for node in found.get("command", [])}
    decided = tree.root_node.has_error or "ask" in found
    return decided or any(map(destructive, scripts)) or any(map(judge, commands))


def render(command: object) -> str:
    """A command as one line of words separated by single spaces, one level of quoting removed and
    line continuations joined: `bash -lc 'rm -rf "my dir"'` becomes `bash -lc rm␣-rf␣"my␣dir"`, a
    blank inside a word hidden (destructive.yaml's `words` and `hide`); A=1 before it is left out."""
    start = (command.child_by_field_name("name") or command).start_byte - command.start_byte
    text = command.text[start:].decode(errors="replace")
    return WORD.sub(lambda m: m[1] and " " or m[m.lastindex].translate(RULES["hide"]), text)


def judge(command: str) -> bool:
    """Whether one command, rendered as a line of words, can destroy work by destructive.yaml."""
    for pattern, row in RULES["rewrite"].items():
        command = re.sub(pattern, row["to"], command, flags=re.S)
    script = SCRIPTS.search(command)
    return bool(ASK.search(command) or script and destructive(script[script.lastindex]))


def allowed(question: str, risky: bool = False) -> bool:
    """Yes without asking under --yes; what is `risky` (no /undo for it, or it can destroy data, or
    it reads outside the project) only under --yolo. Otherwise the user answers; what is not risky
    can be answered `a`, for every later question of its kind (its first word: Apply, Run)."""
    kind = "" if risky else question.split()[0]
    return STATE["config"].get("yolo" if risky else "auto_accept") or ui.confirm(question, kind)


def inside(path: str | Path) -> bool:
    """Whether a path, symlinks followed, is in the project."""
    return Path(os.path.realpath(path)).is_relative_to(Path(STATE["root"]).resolve())


def confine(path: str, write: bool = False) -> Path:
    """Writes stay inside the project root and out of .git; reads outside it ask first. A write
    goes to the path's real file (symlinks followed), a read by the path as given."""
    root, real = Path(STATE["root"]).resolve(), Path(os.path.realpath(path))
    if write and (not inside(real) or ".git" in real.parts[len(root.parts) :]):
        raise ToolError(f"refusing to write {real}: outside the project root {root} or in .git")
    if not inside(real) and not allowed(f"Let the model read {real}, outside the project?", True):
        raise ToolError(f"reading {real}, outside the project root {root}, was not allowed")
    return real if write else Path(path)


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[: limit // 2]}\n[… {len(text) - limit} characters cut …]\n{text[-limit // 2 :]}"


def head(path: Path, limit: int) -> tuple[bytes, int]:
    """The first `limit` bytes of a regular file, and its size; FIFOs and devices are never opened."""
    if path.exists() and not path.is_file():
        raise ToolError(f"{path} is not a regular file")
    with path.open("rb") as file:
        return file.read(limit), os.fstat(file.fileno()).st_size


def read_file(path: str) -> str:
    """Read a text file; lines come numbered."""
    data, size = head(confine(path), MAX_READ)
    if b"\0" in data[:8192]:
        raise ToolError(f"{path} is a binary file ({size} bytes); cannot display it.")
    text = data.decode("utf-8", errors="replace")
    numbered = "\n".join(f"{i:4} | {line}" for i, line in enumerate(text.splitlines(), 1))
    if size > MAX_READ:
        numbered += f"\n[truncated: showing the first {MAX_READ} of {size} bytes]"
    return numbered or f"{path} is empty."


def change_file(path: str, new: str, verb: str) -> str:
    """Diff, ask unless auto-accept, checkpoint, write: the one road every file change takes."""
    real = confine(path, write=True)  # a new file renamed into place: atomic, no hard link
    shown = real.read_bytes() if real.exists() else None  # what the diff is made from
    old = (shown or b"").decode("utf-8", "surrogateescape")
    if MASK in new and redact(old, STATE["config"]) != old:  # it was shown to the model masked
        raise ToolError(f"{path} has secrets you see as {MASK}; change it with edit_file instead.")
    ui.show_diff(old, new, path)
    before = STATE["checkpoint"].snapshot([real])
    if not allowed(f"Apply this change to {path}?", before is None):  # no /undo: it asks
        return f"The user declined the change to {path}; nothing was written."
    if (real.read_bytes() if real.exists() else None) != shown:  # saved in an editor meanwhile
        raise ToolError(f"{path} changed while the user was deciding; read it again.")
    fresh = create_own(real.with_name(f".{real.name}.amas-new"), new)
    shutil.copymode(real, fresh) if real.exists() else None
    os.replace(fresh, real)
    if before:
        STATE["checkpoint"].record(before, f"{verb} {path}", [real])
    STATE["done"].append(f"{verb} {path}")  # for the turn's summary: what was really applied
    return f"{verb.capitalize()} {path} ({len(new.splitlines())} lines)."


def create_own(path: Path, text: str, append: bool = False) -> Path:
    """Write a file Amas Code itself keeps in the project: inside it (its folders made), never through
    a symlink, and created exclusively unless it is appended to. A byte that was not UTF-8 when read
    (a surrogate) is written back as it was."""
    if not inside(path.parent):
        raise ToolError(f"{path.parent} leads outside the project; not writing {path.name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    # its transcript stays out of git, also beside a committed .amas/config.yaml
    if path.parent.name == ".amas" and not os.path.lexists(path.parent / ".gitignore"):
        (path.parent / ".gitignore").write_text("*\n")
    if not append:  # a planted symlink: itself, not its target
        path.unlink(missing_ok=True)
    how = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_EXCL)
    with open(os.open(path, how, 0o644), "wb") as file:
        file.write(text.encode(errors="surrogateescape"))
    return path


def write_file(path: str, content: str) -> str:
    """Write a file's full content, replacing what it held (or creating it)."""
    return change_file(path, content, "wrote")


def create_file(path: str, content: str) -> str:
    """Create a new file; refuses to overwrite an existing one."""
    if Path(path).exists():
        raise ToolError(f"{path} already exists; use edit_file or write_file to change it.")
    return change_file(path, content, "created")


def edit_file(path: str, old_str: str, new_str: str) -> str:
    """Replace the one exact occurrence of old_str in a file with new_str. Read the file first."""
    content = confine(path).read_bytes().decode("utf-8", "surrogateescape")
    count = content.count(old_str) if old_str else 0
    if count != 1:
        raise ToolError(WORDS["repeated" if count else "missing"].format(count=count, path=path))
    return change_file(path, content.replace(old_str, new_str, 1), "edited")


def shell_command(command: str, timeout: int = 0) -> str:
    """Run a shell command in the project directory (timeout in seconds, default 30)."""
    risky = destructive(command)
    if not allowed("This command reaches beyond /undo. Run it?" if risky else "Run it?", risky):
        return "The user declined to run this command."
    # after the answer: a file saved while the question waited stays as saved
    before, words = STATE["checkpoint"].snapshot(), re.split(r"[^\w.-]+", command)
    # no snapshot, or one that leaves out a path the command names (an untracked 15 MB data file)
    unheld = before is None or any(Path(p).name in words for p in STATE["checkpoint"].left)
    if unheld and not allowed("Run it with no /undo?", True):
        return "The user declined to run this command."
    ran = "ran " + command.partition("\n")[0]  # by its first line, in the summary and /checkpoint
    STATE["done"].append(ran)
    try:
        return watch(command, min(max(timeout, 0) or STATE["config"]["shell_timeout"], 3600))
    finally:  # after Ctrl-C or a closed terminal too: what the command did can be undone
        if before:
            STATE["checkpoint"].record(before, ran)


def watch(command: str, timeout: int) -> str:
    """Run a command with bash, its output (head and tail) and exit code as the result; a timeout,
    Ctrl-C or a closed terminal kills its whole process group, children too."""
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "stdin": subprocess.DEVNULL}
    proc = subprocess.Popen(command, shell=True, executable=BASH, start_new_session=True, **pipes)
    kept = bytearray()
    reader = threading.Thread(target=drain, args=(proc.stdout, kept), daemon=True)
    reader.start()
    try:
        with ui.working(lambda: kept[-500:].decode(errors="replace")):  # its latest line
            status = f"[exit code {proc.wait(timeout)}]"
    except subprocess.TimeoutExpired:
        status = f"[timed out after {timeout}s; killed]"
    except KeyboardInterrupt:  # what it printed so far stays on screen
        ui.show_result(f"{kept.decode(errors='replace').rstrip()}\n[interrupted]".lstrip("\n"), 6)
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    reader.join(1)  # a background child may hold the pipe open: take what came
    # its first line's own indent kept: `git status --short`'s " M" is not "M"
    return f"{clip(kept.decode(errors='replace'), MAX_OUTPUT).rstrip()}\n{status}".lstrip("\n")


def drain(pipe: object, kept: bytearray) -> None:
    """Read a pipe to its end keeping its head and tail, so `yes` cannot fill the memory."""
    for chunk in iter(lambda: pipe.read1(1 << 16), b""):
        kept += chunk
        if len(kept) > 2 * MAX_OUTPUT:
            kept[MAX_OUTPUT // 2 : -MAX_OUTPUT // 2] = b"\n[... output cut ...]\n"


def project_files(path: str = ".") -> list[str]:
    """Files under path, less what .gitignore (inside git) and the config `ignore` patterns skip."""
    if not confine(path).is_dir():
        raise ToolError(f"{path} is not a directory")
    try:
        found = subprocess.run(GIT_FILES, cwd=path, capture_output=True, check=True).stdout
        found = os.fsdecode(found).split("\0")
    except (subprocess.CalledProcessError, OSError):
        found = [os.path.relpath(Path(d, f), path) for d, _, fs in os.walk(path) for f in fs]
    skip = STATE["config"].get("ignore", [])
    found = [f for f in found if f and not any(fnmatch(p, g) for p in f.split("/") for g in skip)]
    return sorted(f for f in found if inside(Path(path, f)))  # no symlink leads out


def list_files(path: str = ".") -> str:
    """List the project's files under a directory (ignored files left out)."""
    return clip("\n".join(project_files(path)), MAX_OUTPUT)  # a huge tree: its head and tail


def search_files(pattern: str, path: str = ".") -> str:
    """Search the project's files for a Python regular expression; returns file:line: text."""
    regex, hits = re.compile(pattern), []
    for name in project_files(path):
        with suppress(OSError, ToolError):  # unreadable, or not a regular file: skipped
            text = head(Path(path, name), MAX_SEARCH)[0].decode(errors="replace")
            lines = redact(text, STATE["config"]).splitlines()  # before a line is cut: a cut key
            hits += [f"{name}:{i}: {s[:200]}" for i, s in enumerate(lines, 1) if regex.search(s)]
    return clip("\n".join(hits), MAX_OUTPUT) if hits else f"No matches for {pattern!r} in {path}."


def search_google(query: str) -> str:
    """Search the web with Google; returns numbered titles, URLs and descriptions."""
    from googlesearch import search  # its network errors are OSErrors: run() reports them

    found = search(query, num_results=8, advanced=True, timeout=STATE["config"]["web_timeout"])
    lines = [f"{i}. {r.title}\n   {r.url}\n   {r.description}" for i, r in enumerate(found, 1)]
    return "\n".join(lines) or f"No results for {query!r} (or Google refused to answer)."


def fetch_url(url: str) -> str:
    """Fetch a URL over HTTP(S): HTML comes back as Markdown, other text as it is."""
    import httpx

    try:
        timeout = STATE["config"]["web_timeout"]
        with httpx.stream("GET", url, follow_redirects=True, timeout=timeout) as response:
            body = next(response.raise_for_status().iter_bytes(MAX_FETCH + 1), b"")  # capped
    except (httpx.HTTPError, httpx.InvalidURL) as e:  # DNS, TLS, timeouts, 4xx and 5xx
        raise ToolError(f"{url}: {str(e) or type(e).__name__}") from None  # run() keeps line 1
    kind = response.headers.get("content-type", "")
    if not re.search(r"^text/|json|[+/]xml\b|javascript|yaml", kind):  # an image, a PDF, an .xlsx
        return f"{response.url}: {len(body)} bytes of {kind or 'unlabelled'} content; not shown."
    text = body.decode(response.encoding, errors="replace")
    if "html" in kind:
        from markdownify import markdownify  # drops <script> and <style>

        text = markdownify(text, heading_style="ATX")
    return clip(text.strip(), MAX_READ)


register(read_file, write_file, create_file, edit_file, shell_command, search_files, list_files)
register(search_google, fetch_url)
