"""A process that has imported litellm once and forks a fresh `python -m amas_code` from there for
each CLI test: the 2-3 s import (most of what a CLI test cost) is paid once per test worker, not once
per command. Each run is still a process of its own, with its own stdin, stdout, stderr, working
directory, environment and exit code; only the interpreter's start and litellm's import are shared.

amas_code itself is never imported here: each forked process imports it as `python -m` would.
Tests that need an interpreter of their own (what a start imports, PYTHON* variables) start one
(conftest.amas() does when its env names a PYTHON* variable, or when AMAS_TEST_EXEC=1).

Protocol, on a Unix socket whose path is argv[1]: a test connects and sends its three file
descriptors (stdin, stdout, stderr) with a JSON request {"args", "env", "cwd"}; a runner forked for it
forks the command, answers its pid in one line, then its wait status in one line once it ends.
The zygote ends when its standard input (a pipe from the test worker) closes."""

import atexit
import contextlib
import fcntl
import gc
import json
import os
import selectors
import signal
import socket
import sys
import termios
import threading
import traceback

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # as providers.py sets it
import importlib  # noqa: E402

# litellm and openai, and what their first streamed reply imports (openai's resources, the HTTP
# stack): the import each `amas` start pays, here once. Nothing is called: no client, no socket.
FIRST_REPLY = ("litellm", "openai", "openai.resources", "httpcore", "h11", "jiter")
# and the libraries Amas's own modules import (amas_code itself is imported by each run, fresh)
LIBRARIES = (
    "click",
    "yaml",
    "rich.console",
    "rich.markdown",
    "prompt_toolkit",
    "git",
    "markdown_it",
)
for name in (*FIRST_REPLY, "litellm._service_logger", *LIBRARIES):
    importlib.import_module(name)


def receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    while not data.endswith(b"\n"):
        data += conn.recv(1 << 20)
    return json.loads(data), fds


def serve(path: str) -> tuple[dict, list[int]]:
    """Forks a runner per connection; returns only in a forked command, with its request."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # runners are reaped by the kernel
    events = selectors.DefaultSelector()
    events.register(listener, selectors.EVENT_READ)
    events.register(sys.stdin, selectors.EVENT_READ)
    print("ready", flush=True)
    while True:
        for key, _ in events.select():
            if key.fileobj is sys.stdin:  # the test worker is gone
                os._exit(0)
            conn, _ = listener.accept()
            if os.fork():
                conn.close()
                continue
            # the runner
            events.close()
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            request, fds = receive(conn)
            pid = os.fork()
            if pid == 0:
                conn.close()
                return request, fds
            for fd in fds:
                os.close(fd)
            conn.sendall(f"{pid}\n".encode())
            _, status = os.waitpid(pid, 0)
            conn.sendall(f"{status}\n".encode())
            os._exit(0)


def start(request: dict, fds: list[int]) -> None:
    """Become `python -m amas_code ARGS` in `cwd` with `env` and the given stdin, stdout, stderr."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    if os.isatty(0):  # a terminal given as stdin is the command's own, as a shell gives it
        own_terminal()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["-m", *request["args"]]  # runpy sets argv[0] to the module's file, as -m does
    sys.path[0] = os.getcwd()  # as `python -m` puts the working directory first
    import runpy

    runpy.run_module("amas_code", run_name="__main__", alter_sys=True)


def own_terminal() -> None:
    """Make stdin, a terminal, this process's controlling terminal in a session of its own: Ctrl-C
    typed there is then SIGINT to its process group, as in a terminal window."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def end(code: int = 0, interrupted: bool = False) -> None:
    """Exit as the interpreter does (non-daemon threads joined, atexit handlers run, output
    flushed, an uncaught Ctrl-C reported as death by SIGINT), without tearing down the thousands
    of modules inherited from the zygote: that touched every page shared with it (about 1 s)."""
    threading._shutdown()  # what the interpreter runs first on its way out
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


if __name__ == "__main__":
    gc.freeze()  # the zygote's objects are never collected in a fork: its pages stay shared
    request = serve(sys.argv[1])
    try:
        start(*request)
    except SystemExit as e:  # as Python reads sys.exit()'s argument
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
        end(1 if e.code is not None and not isinstance(e.code, int) else e.code or 0)
    except KeyboardInterrupt:
        traceback.print_exc()
        end(interrupted=True)
    except BaseException:
        traceback.print_exc()
        end(1)
    end(0)
