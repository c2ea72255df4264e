"""The agent: one synchronous loop over a list of messages, which is its only state."""

import json
import time
from collections import Counter
from contextlib import suppress
from pathlib import Path

from amas_code import __version__, checkpoint, config, providers, skills, tools, ui
from amas_code import browser, mac  # noqa: F401 (imported for their tools, which they register)

PROMPTS, RESULTS, SUMMARY = skills.PROMPTS, "[tool results]", "Summary of our conversation so far:"
HISTORY = Path(".amas/history.jsonl")


def message(role: str, content: str, **extra: object) -> dict:
    """A message; a non-UTF-8 byte (a file name, a typed line) would break every request: "?"."""
    return {"role": role, "content": content.encode(errors="replace").decode(), **extra}


def is_request(m: dict) -> bool:
    """Whether a message is a request the user typed (not tool results or a summary)."""
    return m["role"] == "user" and not m["content"].startswith((RESULTS, SUMMARY))


class Agent:
    def __init__(self, config: dict):
        self.config, self.note, self.tokens = config, "", Counter()  # note: for the next request
        self.cmd_clear()
        self.mode = {"native": "native", "text": "text"}.get(config.get("tool_mode"), "auto")
        self.checkpoint = checkpoint.Checkpoint(".", config.get("checkpoint_on_edit", True))
        tools.STATE.update(config=config, checkpoint=self.checkpoint, root=Path.cwd())

    def cmd_clear(self, arg: str = "") -> None:
        """Start a new conversation: the model forgets this one (.amas/history.jsonl keeps it)."""
        self.messages, self.used, self.saved = [], 0, 0
        self.session = str(time.time_ns())  # a new session in the history

    def turn(self, text: str) -> int:
        """Run one request until the model stops calling tools; returns an exit code."""
        self.messages.append(message("user", self.note + text))
        self.checkpoint.begin(text)  # what this request changes, /undo takes back in one step
        self.note, tools.STATE["done"], self.tokens = "", [], Counter()  # what this turn does
        try:
            self.rounds()
        except KeyboardInterrupt:
            if not self.answer_pending("Interrupted by the user."):  # cut off while it answered:
                self.messages.append(message("assistant", "".join(ui.pieces) + "\n[cut off]"))
            ui.warning("Interrupted; the conversation so far is kept.")
            return 130
        except providers.ProviderError as e:
            ui.error(str(e))
            return e.exit_code
        finally:  # the history is written once a turn, however it ends (SIGTERM is a SystemExit)
            self.remember()
        ui.show_summary([*tools.STATE["done"], providers.spent(self.config["model"], self.tokens)])
        return 0

    def rounds(self) -> None:
        """Rounds until the model calls no tool: no cap, a warning past 20 (Ctrl-C stops it), a stop
        when the same calls, with the same arguments, come three times in a row."""
        seen = []
        while calls := self.step():
            seen.append([call["function"] for call in calls])  # without the calls' ids
            if len(seen) == 20:
                ui.warning(config.WORDS["rounds"])
            if seen[-3:] == seen[-1:] * 3:
                return ui.warning(self.noted(config.WORDS["loop"]))  # the model is told too

    def noted(self, text: str) -> str:
        """Text shown to the user that the model must know too (what /undo took back, what /redo put
        back): it goes before the next request. Returns the text, to be shown."""
        self.note += config.WORDS["noted"].format(text)
        return text

    def step(self) -> list:
        """One round: the model's reply, streamed to the screen (the context compacted first if
        full), then the tools it calls; returns those calls."""
        if self.used > self.config["max_context_tokens"]:
            self.cmd_compact()  # before the answer's spinner: one live view at a time
        with ui.working():  # a spinner, the answer as it streams, then rendered
            reply = self.call(self.messages, ui.pieces.append)
        self.messages.append(reply)
        native = reply.get("tool_calls", [])
        if native or self.mode == "auto" and providers.native(self.config["model"]):
            self.mode = "native"  # then its text is never read for calls: prose quoting one
        written = "" if self.mode == "native" else reply["content"]
        calls = native or providers.written_calls(written, tools.TYPES)
        results = [self.execute(call, bool(native)) for call in calls]
        if calls and not native:
            self.messages.append(message("user", f"{RESULTS}\n" + "\n\n".join(results)))
        return calls

    def call(self, messages: list, on_chunk: object = None) -> dict:
        """One request; a provider that refuses native tools switches us to calls written as text."""
        offered = tools.TOOLS if self.mode != "text" else None  # the native tools' schemas
        extra = "" if offered else PROMPTS["text_tools"] + tools.describe()
        request = [message("system", skills.system_prompt(messages, extra)), *messages]
        try:
            reply, usage = providers.complete(request, offered, self.config, on_chunk)
        except providers.ProviderError as e:
            if e.kind != "tools" or self.mode != "auto":
                raise
            self.mode = "text"  # silently: its calls show as any other
            return self.call(messages, on_chunk)
        self.used = usage.get("total_tokens") or 0  # what the provider counted: exact, and free
        self.tokens.update({k: usage.get(k) or 0 for k in ("prompt_tokens", "completion_tokens")})
        return reply

    def cmd_compact(self, arg: str = "") -> None:
        """Summarize the conversation so far to free context (automatic past max_context_tokens)."""
        # all but the latest request become the model's summary; tool pairs stay together
        requests = [i for i, m in enumerate(self.messages) if is_request(m)]
        if len(requests) < 2:  # only the latest request, or nothing new since the last summary
            return
        old, keep = self.messages[: requests[-1]], self.messages[requests[-1] :]
        with ui.working(lambda: f"Compacting {len(old)} messages into a summary…"):
            summary = self.call([*old, message("user", PROMPTS["summarize"])])["content"]
        self.cmd_clear()  # the summary and the latest request go into the history as a new session
        self.messages += [message("user", f"{SUMMARY}\n{summary}"), message("assistant", "Noted.")]
        self.messages += keep

    def execute(self, call: dict, native: bool) -> str:
        """Run one call, shown as it runs; returns its result under the tool's name, as calls written
        as text get it. A native call is answered in the conversation at once, so that Ctrl-C during
        the next one leaves every call before it answered."""
        name, args = call["function"]["name"], call["function"]["arguments"]
        ui.show_tool_call(name, args)
        result = config.redact(tools.run(name, args), self.config)
        ui.show_result(result, 6 if name == "shell_command" else 1)
        if native:
            self.messages.append(message("tool", result, tool_call_id=call["id"]))
        return f"{name}: {result}"

    def remember(self) -> None:
        """Append the conversation's new messages to .amas/history.jsonl, secrets masked."""
        lines = [json.dumps({"session": self.session, **m}) for m in self.messages[self.saved :]]
        text = "".join(line + "\n" for line in lines)
        try:
            tools.create_own(HISTORY, config.redact(text, self.config), append=True)
        except (OSError, tools.ToolError) as e:
            ui.warning(f"History not saved: {e}")
        self.saved = len(self.messages)

    def answer_pending(self, text: str) -> list:
        """Give every tool call of the last assistant message a result, so the history stays valid;
        returns those calls (none: the interruption came while the model answered)."""
        last = max(i for i, m in enumerate(self.messages) if m["role"] != "tool")
        # its results follow it in its calls' order: the calls past the results so far are pending
        pending = self.messages[last].get("tool_calls", [])[len(self.messages) - last - 1 :]
        self.messages += [message("tool", text, tool_call_id=c["id"]) for c in pending]
        return pending

    def repl(self) -> None:
        ui.info(f"Amas Code {__version__} · {self.config['model'] or 'no API key'} · /help")
        with suppress(EOFError):  # Ctrl-D or /quit: the REPL ends
            while True:
                with suppress(KeyboardInterrupt):  # Ctrl-C at the prompt: a new prompt
                    line = ui.ask("› ", self.commands(), Path.home() / ".amas_history").strip()
                    if line.startswith("/"):
                        self.command(line)
                    elif line:
                        self.turn(line)

    def command(self, line: str) -> int:
        name, _, arg = line[1:].partition(" ")
        try:
            if not (handler := getattr(self, f"cmd_{name}", None)):
                raise checkpoint.Refused(f"Unknown command /{name}; /help lists the commands.")
            return handler(arg.strip()) or 0
        except (providers.ProviderError, checkpoint.Refused) as e:
            ui.error(str(e))
            return 1

    def commands(self) -> dict[str, str]:
        """The slash commands, sorted, with their help: each method cmd_<name> is /<name>."""
        return {f"/{n[4:]}": getattr(self, n).__doc__ for n in dir(self) if n.startswith("cmd_")}

    def cmd_help(self, arg: str) -> None:
        """List the commands."""
        ui.show_table(list(self.commands().items()))

    def cmd_attach(self, arg: str) -> None:
        """/attach FILE: add a file's contents to the conversation (read_file's rules apply)."""
        result = config.redact(tools.run("read_file", {"path": arg}), self.config)
        if not arg or result.startswith("Error: "):  # nothing is sent
            raise checkpoint.Refused(result[7:] if arg else self.cmd_attach.__doc__)
        self.messages.append(message("user", f"Attached {arg}:\n{result}"))
        ui.success(f"Attached {arg} ({len(result.splitlines())} lines)")

    def cmd_quit(self, arg: str) -> None:
        """Leave Amas Code (Ctrl-D does too)."""
        raise EOFError  # what Ctrl-D raises: the REPL ends

    cmd_exit = cmd_quit

    def cmd_init(self, arg: str) -> None:
        """Map the project's classes and functions into .amas/map.md, which the model then reads."""
        ui.success(skills.init())

    def cmd_undo(self, arg: str) -> None:
        """/undo [n]: take back the agent's last n turns (edits and commands); your own edits stay."""
        ui.success(self.noted(self.checkpoint.undo(arg)))

    def cmd_redo(self, arg: str) -> None:
        """/redo [n]: put back what the last /undo took back."""
        ui.success(self.noted(self.checkpoint.undo(arg, redo=True)))

    def cmd_checkpoint(self, arg: str) -> None:
        """List the agent's turns that changed files, newest first; /undo N takes back the newest N."""
        ui.show_table(self.checkpoint.history(), "time", "request", "files")
