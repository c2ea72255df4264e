"""The `amas` command (kept light: heavy modules load after the arguments are parsed)."""

import signal
import sys

import click

from amas_code import __version__


# A closed terminal or `kill` ends Amas as Ctrl-C would: a running command's group is killed and the
# history written, instead of leaving the command running with no timeout.
for sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, lambda number, frame: sys.exit(128 + number))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("task", nargs=-1)
@click.option("-m", "--model", help="Model as litellm names it, e.g. openai/gpt-4o-mini.")
@click.option("-y", "--yes", is_flag=True, default=None, help="Apply changes without asking.")
@click.option("--yolo", is_flag=True, default=None, help="--yes, and destructive commands too.")
@click.option("--api-base", help="URL of an OpenAI-compatible or local server (Ollama, vLLM).")
@click.version_option(__version__, "-V", "--version", prog_name="amas")
def main(task: tuple[str, ...], yes: bool | None, yolo: bool | None, **options: str) -> None:
    """Amas Code, an AI coding agent for your terminal.

    \b
    amas "TASK"          run one task, then exit
    amas                 open the REPL (/help lists its commands)
    amas undo [N]        take back the agent's last N turns (edits and commands)
    amas redo [N]        put back what the last undo took back
    amas checkpoint      list the agent's turns that changed files, newest first
    amas init            map the project's code into .amas/map.md for the model
    """
    from amas_code import config as settings
    from amas_code.agent import Agent

    try:
        agent = Agent(settings.load(".", {**options, "auto_accept": yes or yolo, "yolo": yolo}))
    except ValueError as e:  # a setting of the wrong type, broken YAML, amas run inside .git
        raise click.ClickException(str(e)) from None
    if task:
        command = task[0] in ("undo", "redo", "checkpoint", "init")  # a slash command of the REPL
        sys.exit(agent.command("/" + " ".join(task)) if command else agent.turn(" ".join(task)))
    agent.repl()
