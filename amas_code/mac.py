"""macOS tools over osascript, offered to the model only on macOS. User text travels as `on run argv`
arguments and is never spliced into script source, so quotes, backslashes and emoji arrive intact.
The clipboard, volume, Spotlight (`mdfind`) and listing or quitting apps are one AppleScript or shell
command away."""

import subprocess
import sys

from amas_code import tools

NOTIFY = "on run argv\ndisplay notification (item 2 of argv) with title (item 1 of argv)\nend run"


def run(*command: str) -> str:
    """Run osascript; its stdout, or ToolError with what went wrong."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    if done.returncode:
        raise tools.ToolError(f"{command[0]} failed: {done.stderr.strip()[:300]}")
    return done.stdout.strip()


def applescript(script: str, text: str = "") -> str:
    """Run an AppleScript (asks first): volume, apps, Finder, the clipboard (`the clipboard as
    text`), anything osascript can do. Pass text as `text` and read it as item 1 of argv in an
    `on run argv` handler (set the clipboard to (item 1 of argv)): quotes then need no escaping."""
    if not tools.allowed("Run this AppleScript?", not tools.STATE["config"].get("yolo")):
        return "The user declined to run this AppleScript."
    return run("osascript", "-e", script, *filter(None, [text])) or tools.EMPTY


def mac_notify(title: str, message: str) -> str:
    """Show a macOS notification."""
    return run("osascript", "-e", NOTIFY, title, message) or "Notification shown."


if sys.platform == "darwin":
    tools.register(applescript, mac_notify)
