import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

sys.path.insert(0, str(Path(__file__).parent))
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from fake_llm import FakeLLM  # noqa: E402

from amas_code import tools, ui  # noqa: E402
from amas_code.checkpoint import Checkpoint  # noqa: E402
from amas_code.config import DEFAULT_CONFIG  # noqa: E402


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Each test runs in its own project directory, with a home that is not the real one."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("AMAS_HOME", str(home))
    monkeypatch.setenv("HOME", str(home))  # ~/.amas_history, the REPL's input history
    monkeypatch.chdir(project)
    monkeypatch.setattr(ui, "INTERACTIVE", False)
    off = Checkpoint(project, enabled=False)  # as with checkpoint_on_edit: false
    tools.STATE.update(config=dict(DEFAULT_CONFIG), checkpoint=off, root=project)
    for key in ("OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    yield project


@pytest.fixture
def llm():
    server = FakeLLM()
    yield server
    server.close()


@pytest.fixture
def config(llm):
    return {
        **DEFAULT_CONFIG,
        "model": "openai/fake",
        "api_key": "sk-test-secret",
        "api_base": llm.url,
    }


@contextmanager
def terminal(*lines: str):
    """A real prompt_toolkit session fed from a pipe, as if the user typed `lines`."""
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text("".join(line + "\n" for line in lines))
        pipe.close()  # the end of input, as Ctrl-D: nothing can wait for input forever
        ui.INTERACTIVE = True
        try:
            yield pipe
        finally:
            ui.INTERACTIVE = False


def git_init(path: Path) -> Path:
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.name", "T"],
        ["config", "user.email", "t@t"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True)
    return path


def git(path: Path, *args: str, input: bytes | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, input=input)
    return done.stdout.decode(errors="replace")


def branch_head(path: Path) -> str:
    """The commit HEAD names, '' before the first commit."""
    run = ["git", "rev-parse", "-q", "--verify", "HEAD"]
    return subprocess.run(run, cwd=path, capture_output=True, text=True, check=False).stdout


def own_git(path: Path, *args: str) -> str:
    """git in Amas's own repository of snapshots (.git/amas/repo), where the `[amas]` commits
    live, beside the user's branch and never on it."""
    env = {**os.environ, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(path / ".git" / "objects")}
    own = ["git", "--git-dir", str(path / ".git" / "amas" / "repo"), *args]
    return subprocess.run(own, cwd=path, env=env, check=True, capture_output=True, text=True).stdout


def own_subjects(path: Path) -> list[str]:
    """The `[amas]` snapshots of the agent's changes in Amas's own repository, newest first."""
    log = own_git(path, "log", "--format=%s", "refs/amas/keep").splitlines()
    return [s for s in log if s.startswith("[amas] ") and not s.startswith("[amas] before /")]


def amas(
    *args: str, env: dict | None = None, cwd=None, stdin: str = ""
) -> subprocess.CompletedProcess:
    """The real command in a subprocess, with no terminal attached."""
    full_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    cmd = [sys.executable, "-m", "amas_code", *args]
    return subprocess.run(
        cmd, env=full_env, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=120
    )


def interrupt_when(path: str) -> None:
    """Ctrl-C (SIGINT to this process) once `path` exists, as when a command the agent runs has
    started: never after a fixed delay, which races litellm's import."""

    def interrupt():
        while not os.path.exists(path):
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
