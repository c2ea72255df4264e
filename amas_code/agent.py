"""The agent: one synchronous loop over a list of messages, which is its only state."""

import json
import threading

from amas_code import __version__, providers, tools, ui
from amas_code.checkpoint import NO_REPO, Checkpoint, Refused

SYSTEM_PROMPT = """You are Amas Code, an elite AI coding assistant and principal software engineer.
You execute tasks autonomously and thoroughly.

# Core Mandates
- **Engineering Standards & Completeness:** Never leave "TODO" or placeholder code. Always implement full, robust logic.
- **Idiomatic Code & Visuals:** Write idiomatic code. Ensure UIs are modern, polished, and use consistent spacing.
- **Development Lifecycle:** Research -> Strategy -> Execution -> Validation.
- **Validation:** Always verify your changes through tests or manual checks before declaring success.

## Rules
- ALWAYS read a file before editing it.
- Explain your plan before executing multi-step changes.
- Provide FULL file content when using write_file.
- If the user declines a change or a command, do not retry it; ask what they want instead."""


class Agent:
    def __init__(self, config: dict):
        self.config = config
        self.checkpoint = Checkpoint(".", config.get("checkpoint_on_edit", True))
        tools.STATE.update(config=config, checkpoint=self.checkpoint)
        self.messages = [{"role": "system", "content": SYSTEM_PROMPT}]
        if config.get("checkpoint_on_edit", True) and not self.checkpoint.repo:
            ui.info(NO_REPO)

    def turn(self, text: str) -> int:
        """Run one request until the model stops calling tools; returns an exit code."""
        self.messages.append({"role": "user", "content": text})
        try:
            while self.step():
                pass
        except KeyboardInterrupt:
            self.answer_pending("Interrupted by the user.")
            ui.warning("Interrupted; the conversation so far is kept.")
            return 130
        except providers.ProviderError as e:
            ui.error(str(e))
            return e.exit_code
        return 0

    def step(self) -> bool:
        """One model reply and its tool calls; True while the model wants to go on."""
        message, _usage = providers.complete(self.messages, tools.TOOLS, self.config, ui.stream)
        if message["content"]:
            ui.end_stream()
        self.messages.append(message)
        for call in message.get("tool_calls", []):
            result = self.execute(call)
            self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        return "tool_calls" in message

    def execute(self, call: dict) -> str:
        name = call["function"]["name"]
        try:
            args = json.loads(call["function"]["arguments"] or "{}")
        except json.JSONDecodeError as e:
            return f"Error: the arguments for {name} are not valid JSON ({e}); send the call again."
        if not isinstance(args, dict):
            return f"Error: the arguments for {name} must be a JSON object."
        ui.show_tool_call(name, args)
        result = tools.run(name, args)
        ui.show_result(result)
        return result

    def answer_pending(self, text: str) -> None:
        """Give every tool call of the last assistant message a result, so the history stays valid."""
        last = max(i for i, m in enumerate(self.messages) if m["role"] != "tool")
        answered = {m["tool_call_id"] for m in self.messages[last + 1 :]}
        pending = [
            c["id"] for c in self.messages[last].get("tool_calls", []) if c["id"] not in answered
        ]
        self.messages += [{"role": "tool", "tool_call_id": i, "content": text} for i in pending]

    def repl(self) -> None:
        ui.info(f"Amas Code {__version__} · {self.config['model']} · /help lists commands")
        threading.Thread(target=providers.load_litellm, args=(0.2,), daemon=True).start()
        while True:
            try:
                line = ui.ask("› ").strip()
            except KeyboardInterrupt:
                continue
            except EOFError:
                return
            if line.startswith("/"):
                if self.command(line) == "quit":
                    return
            elif line:
                self.turn(line)

    def command(self, line: str):
        name, _, arg = line[1:].partition(" ")
        handler = getattr(self, f"cmd_{name}", None)
        if handler is None:
            ui.error(f"Unknown command /{name}; /help lists the commands.")
            return 1
        return handler(arg.strip())

    def cmd_help(self, arg: str):
        """List the commands."""
        names = sorted(n for n in dir(self) if n.startswith("cmd_"))
        ui.show_table([(f"/{n[4:]}", getattr(self, n).__doc__) for n in names])

    def cmd_quit(self, arg: str):
        """Leave Amas Code (Ctrl-D does too)."""
        return "quit"

    def cmd_undo(self, arg: str):
        """/undo [n]: roll back the agent's last n checkpoints; your own edits are kept."""
        return self.checkpoint_op("undo", arg)

    def cmd_redo(self, arg: str):
        """/redo [n]: re-apply what the last /undo rolled back."""
        return self.checkpoint_op("redo", arg)

    def cmd_checkpoint(self, arg: str):
        """/checkpoint [hash]: list the agent's checkpoints, or go back to one."""
        if arg:
            return self.checkpoint_op("restore", arg)
        rows = self.checkpoint.history()
        ui.show_table(rows, "checkpoint", "time", "message") if rows else ui.info(
            "No checkpoints yet."
        )

    def checkpoint_op(self, name: str, arg: str) -> int:
        try:
            ui.success(getattr(self.checkpoint, name)(arg if name == "restore" else int(arg or 0)))
            return 0
        except ValueError:
            ui.error(f"Expected a number, not {arg!r}.")
        except Refused as e:
            ui.error(str(e))
        return 1
