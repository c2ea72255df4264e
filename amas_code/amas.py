"""The `amas` command (kept light: heavy modules load after the arguments are parsed)."""

import sys

import click

from amas_code import __version__

CHECKPOINT_COMMANDS = ("undo", "redo", "checkpoint")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("task", nargs=-1)
@click.option(
    "-m", "--model", help="Model as litellm names it: openai/gpt-4o-mini, ollama/qwen2.5-coder…"
)
@click.option(
    "-y", "--yes", is_flag=True, default=None, help="Apply changes and run commands without asking."
)
@click.option(
    "--api-base", help="URL of an OpenAI-compatible or local server (Ollama, llama.cpp, vLLM)."
)
@click.version_option(__version__, "-V", "--version", prog_name="amas")
def main(task: tuple[str, ...], model: str | None, yes: bool | None, api_base: str | None) -> None:
    """Amas Code, an AI coding agent for your terminal.

    \b
    amas "TASK"          run one task, then exit
    amas                 open the REPL (/help lists its commands)
    amas undo [N]        roll back the agent's last N checkpoints
    amas redo            re-apply what the last undo rolled back
    amas checkpoint [H]  list checkpoints, or go back to checkpoint H
    """
    from amas_code import config as settings
    from amas_code.agent import Agent

    try:
        config = settings.load(".", {"model": model, "auto_accept": yes, "api_base": api_base})
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    agent = Agent(config)
    if task and task[0] in CHECKPOINT_COMMANDS:
        sys.exit(agent.command("/" + " ".join(task)) or 0)
    if task:
        sys.exit(agent.turn(" ".join(task)))
    agent.repl()
