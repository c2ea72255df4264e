"""Every byte Amas Code shows goes through here (rich for output, prompt_toolkit for input)."""

import difflib
import sys
from functools import partial

from rich.console import Console
from rich.text import Text

console = Console(highlight=False, soft_wrap=True)
INTERACTIVE = sys.stdin.isatty() and sys.stdout.isatty()
_session = None


def _say(symbol: str, style: str, msg: str) -> None:
    console.print(Text.assemble((f"{symbol} ", style), str(msg)))


info, success = partial(_say, "ℹ", "blue"), partial(_say, "✓", "green")
warning, error = partial(_say, "⚠", "yellow"), partial(_say, "✗", "red")
show_command = partial(_say, "$", "bold magenta")
end_stream = console.print
_thinking = False


def stream(piece: str) -> None:
    """One streamed piece of an answer; reasoning between <think> and </think> shows dimmed."""
    global _thinking
    _thinking = ("<think>" in piece or _thinking) and "</think>" not in piece
    console.print(piece, end="", markup=False, style="dim" if _thinking else None)


def show_diff(old: str, new: str, filename: str) -> None:
    from rich.syntax import Syntax  # pygments: only when there is a diff to show

    a, b = old.splitlines(), new.splitlines()
    text = "\n".join(difflib.unified_diff(a, b, f"a/{filename}", f"b/{filename}", lineterm=""))
    console.print(Syntax(text or "(no changes)", "diff", theme="ansi_dark", background_color=""))


def show_tool_call(name: str, args: str) -> None:
    console.print(Text.assemble(("⏺ ", "cyan"), (name, "bold cyan"), f"({_short(args, 100)})"))


def show_result(result: str) -> None:
    lines = result.splitlines() or [""]
    more = f" … (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    console.print(Text(f"  ⎿ {_short(lines[0], 100)}{more}", style="dim"))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show_table(rows: list, *headers: str) -> None:
    from rich.table import Table

    table = Table(*headers, show_header=bool(headers), box=None)
    for row in rows:
        table.add_row(*map(Text, row))
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
    """Yes/no, default no. With no terminal nobody can answer, so the answer is no."""
    if not INTERACTIVE:
        warning(f"{question} → no (no terminal to ask; --yes allows edits, --yolo everything)")
        return False
    try:
        return ask(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except (EOFError, KeyboardInterrupt):
        return False
