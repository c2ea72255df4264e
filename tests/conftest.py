import atexit
import fcntl
import json
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import termios
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


# The slowest tests (10-40 s on a busy 2-core machine, none of them waiting: they do the work their
# promise needs), marked `slow` and run first, so that with two workers none is left running alone
# at the end. `-m "not slow"` leaves them out of a quick loop.
SLOW = {
    "test_a_command_that_changed_12000_files_is_undone",
    "test_a_line_nested_beyond_what_can_be_judged_asks_and_never_crashes",
    "test_python_top_level_definitions_match_ast_on_the_standard_library",
    "test_browser_fills_a_form_clicks_and_reads_the_answer",
    "test_every_entry_of_the_judge_s_data_is_guarded_by_a_case",
    "test_hostile_text_stays_bounded",
    "test_endless_output_is_read_as_it_comes_and_only_head_and_tail_kept",
}


def pytest_collection_modifyitems(items):
    for item in items:
        if getattr(item, "originalname", item.name) in SLOW:
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: slow ones first


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Each test runs in its own project directory, with a home that is not the real one."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("AMAS_HOME", str(home))
    monkeypatch.setenv("HOME", str(home))  # ~/.amas_history, the REPL's input history
    monkeypatch.chdir(project)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)  # outside git, snapshots go to ~/.cache
    monkeypatch.setattr(ui, "INTERACTIVE", False)
    # a tool called outside an agent's turn (as a test does) records into one turn, as a turn would
    monkeypatch.setattr(Checkpoint, "turn", {"id": 0, "time": "", "request": ""}, raising=False)
    off = Checkpoint(project, enabled=False)  # as with checkpoint_on_edit: false
    tools.STATE.update(config=dict(DEFAULT_CONFIG), checkpoint=off, root=project)
    for key in ("OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    yield project


@pytest.fixture(scope="module")
def llm_server():
    """One scripted model per test module: its tests share the port, never the replies."""
    server = FakeLLM()
    yield server
    server.close()


@pytest.fixture
def llm(llm_server):
    llm_server.reset()
    yield llm_server
    llm_server.reset()


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
    leader, follower = pty.openpty()  # stdin a terminal, as ui takes it to be: typed-ahead keys flush
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text("".join(line + "\n" for line in lines))
        pipe.close()  # the end of input, as Ctrl-D: nothing can wait for input forever
        ui.INTERACTIVE, stdin, sys.stdin = True, sys.stdin, open(follower, closefd=False)
        try:
            yield pipe
        finally:
            ui.INTERACTIVE, sys.stdin = False, stdin
            os.close(leader)
            os.close(follower)


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


ZYGOTE: dict = {}  # this worker's zygote (tests/zygote.py): its process and socket
WORKER_ENV = dict(os.environ)  # as the worker started: no test's home, no test's variables


def zygote() -> str:
    """The socket of this test worker's zygote, started on first use and ended with the worker."""
    if "proc" not in ZYGOTE or ZYGOTE["proc"].poll() is not None:
        where = tempfile.mkdtemp(prefix="amas-zygote-")
        path = os.path.join(where, "socket")
        script = str(Path(__file__).with_name("zygote.py"))
        run = [sys.executable, script, path]
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
        proc = subprocess.Popen(run, cwd=where, env=WORKER_ENV, **pipes)
        assert proc.stdout.readline() == b"ready\n"
        ZYGOTE.update(proc=proc, path=path)
        atexit.register(shutil.rmtree, where, True)
    return ZYGOTE["path"]


class Forked:
    """`python -m amas_code ARGS` forked from the zygote, which imported litellm already; what a
    test uses of subprocess.Popen: pid, poll(), wait(), send_signal(), kill(), returncode."""

    def __init__(self, args: list, env: dict, cwd, fds: tuple):
        self.args, self.returncode, self.conn = args, None, socket.socket(socket.AF_UNIX)
        self.conn.connect(zygote())
        request = {"args": args[3:], "env": env, "cwd": os.path.abspath(cwd or os.getcwd())}
        socket.send_fds(self.conn, [(json.dumps(request) + "\n").encode()], fds)
        self.lines = self.conn.makefile("rb")
        self.pid = int(self.lines.readline())

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.conn.settimeout(timeout)
            try:
                status = self.lines.readline()
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout) from None
            self.returncode = os.waitstatus_to_exitcode(int(status))
            self.conn.close()
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.conn], [], [], 0)[0]:
            self.wait()
        return self.returncode

    def send_signal(self, number: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, number)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def own_terminal() -> None:
    """In a new command, after setsid: stdin, a terminal, becomes its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def start(*args: str, env: dict | None = None, cwd=None, stdin=None, stdout=None, stderr=None):
    """The real command started, as subprocess.Popen starts it (`env` whole, as Popen takes it;
    stdin, stdout, stderr file descriptors, this process's own by default): forked from the
    zygote, or a new interpreter when `env` names a PYTHON* variable of its own or
    AMAS_TEST_EXEC=1 is set. A terminal given as stdin becomes its controlling terminal, in a
    session of its own, as a shell makes it: Ctrl-C typed there reaches it as SIGINT."""
    env = dict(os.environ if env is None else env)
    cmd = [sys.executable, "-m", "amas_code", *args]
    python = {k: v for k, v in env.items() if k.startswith("PYTHON") and os.environ.get(k) != v}
    if python or os.environ.get("AMAS_TEST_EXEC") == "1":
        tty = isinstance(stdin, int) and os.isatty(stdin)  # its own terminal, as zygote.py gives
        own = {"start_new_session": tty, "preexec_fn": own_terminal if tty else None}
        return subprocess.Popen(
            cmd, env=env, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr, **own
        )
    given = (stdin, stdout, stderr)
    fds = [i if f is None else f if isinstance(f, int) else f.fileno() for i, f in enumerate(given)]
    return Forked(cmd, env, cwd, fds)


def amas(
    *args: str, env: dict | None = None, cwd=None, stdin: str = ""
) -> subprocess.CompletedProcess:
    """The real command in a process of its own, with no terminal attached (see start())."""
    full_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    files = tempfile.TemporaryFile(), tempfile.TemporaryFile(), tempfile.TemporaryFile()
    with files[0] as inp, files[1] as out, files[2] as err:
        inp.write(stdin.encode())
        inp.seek(0)
        proc = start(*args, env=full_env, cwd=cwd, stdin=inp, stdout=out, stderr=err)
        try:
            code = proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        out.seek(0)
        err.seek(0)
        # as text=True reads them: universal newlines
        text = [f.read().decode().replace("\r\n", "\n").replace("\r", "\n") for f in (out, err)]
        return subprocess.CompletedProcess(proc.args, code, *text)


def older_than_the_margin(*paths: str) -> None:
    """Until the file system's clock is more than the snapshot's margin (2 s, checkpoint.py) past
    the change times of `paths`: then a snapshot taken after this sees them as the user's, older
    than it, never as a command's. Waits on that clock (a file stamped now), not a fixed delay."""
    newest = max(os.lstat(p).st_ctime_ns for p in paths)
    clock = Path(tempfile.mkdtemp()) / "now"
    while True:
        clock.write_bytes(b"")
        if clock.stat().st_mtime_ns > newest + 2_200_000_000:
            break
        time.sleep(0.05)
    shutil.rmtree(clock.parent)


def interrupt_when(path: str) -> None:
    """Ctrl-C (SIGINT to this process) once `path` exists, as when a command the agent runs has
    started: never after a fixed delay, which races litellm's import."""

    def interrupt():
        while not os.path.exists(path):
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
