"""The macOS tool over osascript, offered to the model only on macOS. User text travels as an
`on run argv` argument and is never spliced into script source, so quotes, backslashes and emoji
arrive intact. A notification, the clipboard, volume, Spotlight (`mdfind`) and listing or quitting
apps are one AppleScript or shell command away."""

import subprocess
import sys

from amas_code import tools


def applescript(script: str, text: str = "") -> str:
    """Run an AppleScript (asks first): notifications (display notification (item 1 of argv) with
    title "Amas"), volume, apps, Finder, the clipboard (`the clipboard as text`), anything osascript
    can do. Pass text as `text` and read it as item 1 of argv in an `on run argv` handler (set the
    clipboard to (item 1 of argv)): quotes then need no escaping."""
    if not tools.allowed("Run this AppleScript?", True):
        return "The user declined to run this AppleScript."
    command = ["osascript", "-e", script, *filter(None, [text])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    if done.returncode:
        raise tools.ToolError(f"osascript failed: {done.stderr.strip()[:300]}")
    return done.stdout.strip() or tools.WORDS["empty"]


if sys.platform == "darwin":
    tools.register(applescript)
