"""Every byte Amas Code shows goes through here (rich for output, prompt_toolkit for input)."""

import difflib
import json
import re
import sys
from contextlib import contextmanager, nullcontext, suppress
from functools import partial

from rich import live, panel, spinner, syntax, table
from rich.console import Console
from rich.text import Text

console = Console(highlight=False, soft_wrap=True, stderr=True)  # all but the answer: stderr
out = Console(highlight=False, soft_wrap=True)  # the answer alone: `amas "x" > file` gets it
INTERACTIVE = sys.stdin.isatty() and sys.stdout.isatty()
# C0 but \t and \n, DEL, C1, the bidi marks, overrides and isolates, and lone surrogates (a
# non-UTF-8 byte in a file name).
UNSAFE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"


def safe(text: str) -> str:
    """Untrusted text with its control characters and bidi overrides made visible, so that no file,
    page, command or reply can move the cursor, erase a line or set the clipboard."""
    return re.sub(UNSAFE, lambda found: repr(found[0])[1:-1], str(text))  # ESC shows as \x1b


def _say(symbol: str, style: str, msg: str) -> None:
    """A notice, wrapped at words on a terminal (a pipe gets it on one line)."""
    console.print(Text.assemble((symbol, style), " ", safe(msg)), soft_wrap=not console.is_terminal)


info, success = partial(_say, "ℹ", "blue"), partial(_say, "✓", "green")
warning, error = partial(_say, "⚠", "yellow"), partial(_say, "✗", "red")
pieces = []  # the answer being streamed, as its pieces came (the model's callback appends)
always = set()  # the kinds of question answered `a`: asked no more this session


@contextmanager
def working(status: object = lambda: "Thinking…") -> object:
    """While the model, a command or /compact works: a spinner, the seconds, `status()`'s last line;
    then the answer's last screenful as it streams (on stderr if a terminal), then the whole answer
    once, cut short or not: reasoning as plain text, the rest as Markdown, links spelled out. A pipe
    or file gets the answer's text as it came, without its reasoning."""
    dots, pieces[:] = spinner.Spinner("dots", style="cyan"), []
    shown = partial(_view, dots, console.get_time(), status)
    view = live.Live(console=console, transient=True, get_renderable=shown)
    try:
        with view if console.is_terminal else nullcontext():  # on stderr, stdout redirected too
            yield
    finally:  # the whole answer, on stdout
        text = "".join(pieces)
        thought, end, reply = text.rpartition("</think>")
        if INTERACTIVE and out.is_terminal and text.strip():
            from rich.markdown import Markdown, MarkdownIt  # 0.1 s: only where an answer shows

            reasoning = [Text(safe(thought + end))] if end else []
            rendered = Markdown(safe(reply), hyperlinks=False)
            parser = MarkdownIt("commonmark", {"html": False}).enable(["strikethrough", "table"])
            # no HTML: List<String>, <div> stay as text (rich's own parser would drop them)
            rendered.parsed = parser.parse(rendered.markup)
            out.print(*reasoning, rendered, soft_wrap=False)
        elif reply.strip():  # a pipe: the answer's text as it came (tabs, :x:), less its reasoning
            out.file.write(safe(reply.strip()) + "\n")


def _view(dots: spinner.Spinner, start: float, status: object) -> Text:
    """The last screenful of the answer so far, wrapped as the screen shows it (only the last lines
    are wrapped: their rows are at least a screenful); before its first token, the spinner, the
    seconds since `start` and `status()`'s last line, cut at the screen's edge."""
    lines = "".join(pieces).splitlines()[-console.height :]
    rows = Text(safe("\n".join(lines))).wrap(console, console.width)[2 - console.height :]
    line = f"{int(console.get_time() - start)}s {''.join(status().strip().splitlines()[-1:])}"
    spin = Text.assemble(dots.render(console.get_time()), " ", safe(line), no_wrap=True)
    return Text("\n").join(rows) if lines else spin


def show_diff(old: str, new: str, filename: str) -> None:
    a, b = old.split("\n"), new.split("\n")  # only \n: a \r or \f changed shows as \x0d or \x0c
    text = "\n".join(difflib.unified_diff(a, b, f"a/{filename}", f"b/{filename}", lineterm=""))
    console.print(syntax.Syntax(safe(text) or "(no changes)", "diff", theme="ansi_dark"))


def show_tool_call(name: str, args: str) -> None:
    """The call as it reads: the tool's name and its first argument's value (a path, a command, a
    URL), in a compact panel, cut to a few lines (500 characters) marked […]; arguments that are no
    JSON object (or nest too deep to read) show as they came."""
    with suppress(ValueError, TypeError, AttributeError, StopIteration, RecursionError):
        args = str(next(iter(json.loads(args).values())))
    args = (cut := "\n".join(args.split("\n")[:6])[:500]) + " […]" * (cut != args)  # old args
    call = Text.assemble((safe(name), "bold cyan"), " ", (safe(args), "dim"))
    console.print(panel.Panel.fit(call, border_style="cyan"), soft_wrap=False)  # wrapped, whole


def show_result(result: str, tail: int = 1) -> None:
    """A tool's result as its last line, dim, or its last `tail` lines (a command's `2 passed`),
    under a `…` when it has more."""
    rows = safe(result).splitlines()  # a \r shows as \r: not a line of its own
    console.print(Text("  ⎿ " + "\n    ".join(["…"][: len(rows) - tail] + rows[-tail:]), "dim"))


def show_summary(done: list) -> None:
    """After a turn, in one dim line: what it wrote and ran, and what it spent (None: unknown)."""
    if any(done):
        console.print(Text(safe(" · ".join(filter(None, done))), style="dim"))


def show_table(rows: list, *headers: str) -> None:
    grid = table.Table(*headers, show_header=bool(headers), box=None)
    for row in rows:
        grid.add_row(*(Text(safe(cell)) for cell in row))
    console.print(grid)


def ask(message: str, commands: dict | None = None, history: object = None) -> str:
    """One line of input: prompt_toolkit on a terminal, plain stdin otherwise. EOFError at the end.
    With `commands` it is the REPL's prompt: history kept across sessions in ~/.amas_history, Tab
    completes the slash commands. Without, a question whose answers stay out of that history."""
    if not INTERACTIVE:
        return input()
    from prompt_toolkit import prompt

    # in a thread: beside the event loop that playwright keeps running
    return prompt(message, in_thread=True, **(_comforts(commands, history) if commands else {}))


def _comforts(commands: dict, history: object) -> dict:
    """The REPL prompt's history file and Tab's completion of the slash commands."""
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.history import FileHistory

    history.touch(0o600)  # what was typed may hold secrets: the owner's alone
    return dict(history=FileHistory(history), completer=WordCompleter(list(commands), WORD=True))


def confirm(question: str, kind: str = "") -> bool | None:
    """Yes/no, default no; with a `kind`, `a` (always, as aider's "All") says yes to this question
    and to every later one of that kind in this session. With no terminal nobody can answer, so the
    answer is no. Ctrl-C is not an answer: it goes up and ends the turn, as it does anywhere else.
    None is a no."""
    if kind in always:
        return True
    if not INTERACTIVE:  # the warning's None: no
        return warning(f"{question} → no (no terminal to ask; --yes allows edits, --yolo all)")
    from termios import TCIFLUSH, tcflush  # POSIX, as the shell tool is

    tcflush(sys.stdin, TCIFLUSH)  # keys typed ahead, while the model worked, answer nothing
    with suppress(EOFError):  # Ctrl-D answers no: None
        answer = ask(f"{safe(question)} [y/N{'/a=always' * bool(kind)}] ").strip().lower()
        always.update([kind] if kind and answer in ("a", "always") else [])
        return answer in ("y", "yes") or kind in always
