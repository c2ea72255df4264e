"""Every byte Amas Code shows goes through here (rich for output, prompt_toolkit for input)."""

import difflib
import sys
from functools import partial

from rich.console import Console
from rich.text import Text

console = Console(highlight=False, soft_wrap=True)
INTERACTIVE = sys.stdin.isatty() and sys.stdout.isatty()
_session = None
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
CONTROLS = [*range(9), *range(11, 32), *range(127, 160), *map(ord, BIDI)]  # not \t or \n
VISIBLE = {c: repr(chr(c))[1:-1] for c in CONTROLS}  # ESC shows as \x1b


def safe(text: str) -> str:
    """Untrusted text with its control characters and bidi overrides made visible, so that no file,
    page, command or reply can move the cursor, erase a line or set the clipboard."""
    return str(text).translate(VISIBLE)


def _say(symbol: str, style: str, msg: str) -> None:
    console.print(Text.assemble((f"{symbol} ", style), safe(msg)))


info, success = partial(_say, "ℹ", "blue"), partial(_say, "✓", "green")
warning, error = partial(_say, "⚠", "yellow"), partial(_say, "✗", "red")
show_command = partial(_say, "$", "bold magenta")
end_stream = console.print
_thinking = False


def stream(piece: str) -> None:
    """One streamed piece of an answer; reasoning between <think> and </think> shows dimmed."""
    global _thinking
    _thinking = ("<think>" in piece or _thinking) and "</think>" not in piece
    console.print(safe(piece), end="", markup=False, style="dim" if _thinking else None)


def show_diff(old: str, new: str, filename: str) -> None:
    from rich.syntax import Syntax  # pygments: only when there is a diff to show

    a, b = old.split("\n"), new.split("\n")  # only \n: a \r or \f changed shows as \x0d or \x0c
    text = "\n".join(difflib.unified_diff(a, b, f"a/{filename}", f"b/{filename}", lineterm=""))
    text = safe(text) or "(no changes)"
    console.print(Syntax(text, "diff", theme="ansi_dark", background_color=""))


def show_tool_call(name: str, args: str) -> None:
    call = safe(f"({_short(args, 100)})")
    console.print(Text.assemble(("⏺ ", "cyan"), (safe(name), "bold cyan"), call))


def show_result(result: str) -> None:
    lines = result.splitlines() or [""]
    more = f" … (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    console.print(Text(safe(f"  ⎿ {_short(lines[0], 100)}{more}"), style="dim"))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show_table(rows: list, *headers: str) -> None:
    from rich.table import Table

    table = Table(*headers, show_header=bool(headers), box=None)
    for row in rows:
        table.add_row(*(Text(safe(cell)) for cell in row))
    console.print(table)


def ask(message: str) -> str:
    """One line of input: prompt_toolkit on a terminal, plain stdin otherwise. EOFError at the end."""
    global _session
    if not INTERACTIVE:
        return input()
    if _session is None:
        from prompt_toolkit import PromptSession

        _session = PromptSession()
    return _session.prompt(message, in_thread=True)  # beside the loop playwright keeps running


def confirm(question: str) -> bool:
    """Yes/no, default no. With no terminal nobody can answer, so the answer is no. Ctrl-C is
    not an answer: it goes up and ends the turn, as it does anywhere else."""
    if not INTERACTIVE:
        warning(f"{question} → no (no terminal to ask; --yes allows edits, --yolo everything)")
        return False
    if sys.stdin.isatty():  # keys typed ahead, while the model worked, answer nothing
        from termios import TCIFLUSH, tcflush  # POSIX, as the shell tool is

        tcflush(sys.stdin, TCIFLUSH)
    try:
        return ask(f"{safe(question)} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False
