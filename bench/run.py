"""Amas Code benchmark: medians of several runs against a loopback scripted server, with the ratios
issue #8 sets as targets. Uses only the standard library and the project. Run: python bench/run.py [section ...]"""

import json
import os
import pty
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
from fake_llm import FakeLLM, text, tool  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
PY = sys.executable
ENV = {**os.environ, "OPENAI_API_KEY": "k", "AMAS_HOME": tempfile.mkdtemp()}

BARE = """
import json, os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
litellm.suppress_debug_info = True
tools = json.loads(sys.argv[2])
messages = [{"role": "system", "content": "x"}, {"role": "user", "content": "hi"}]
stream = litellm.completion(model="openai/fake", api_base=sys.argv[1], api_key="k", messages=messages,
    tools=tools, stream=True, stream_options={"include_usage": True}, max_retries=0)
chunks = [c for c in stream]
sys.stdout.write(litellm.stream_chunk_builder(chunks, messages=messages).choices[0].message.content)
"""


CPU: dict[str, list[float]] = {}


def run_child(cmd: list[str], cwd: str, label: str = "") -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process; its CPU seconds go to CPU[label]."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    assert status == 0, f"{cmd} failed"
    CPU.setdefault(label, []).append(usage.ru_utime + usage.ru_stime)
    return time.perf_counter() - start, usage.ru_maxrss / 1024


def median_pair(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def bench_version(cwd: str) -> list[tuple]:
    amas = median_pair([run_child([PY, "-m", "amas_code", "--version"], cwd) for _ in range(RUNS)])
    click = median_pair([run_child([PY, "-c", "import click"], cwd) for _ in range(RUNS)])
    return [("amas --version", amas, "python -c 'import click'", click)]


def bench_one_shot(llm: FakeLLM, cwd: str) -> list[tuple]:
    """amas 'hi' against a bare litellm script with the same litellm; with BENCH_FLOOR_PYTHON (a venv's
    python holding another release, e.g. the old litellm 1.105.3 / openai 2.54.0), that bare script too,
    interleaved in the same run so the ratio holds on a noisy machine."""
    from amas_code.tools import TOOLS

    floor_python = os.environ.get("BENCH_FLOOR_PYTHON")
    amas, bare, floor = [], [], []
    for _ in range(RUNS):
        llm.queue(text("hello there"), text("hello there"), text("hello there"))
        one_shot = [PY, "-m", "amas_code", "-m", "openai/fake", "--api-base", llm.url, "hi"]
        amas.append(run_child(one_shot, cwd, "amas"))
        bare.append(run_child([PY, "-c", BARE, llm.url, json.dumps(TOOLS)], cwd, "bare"))
        if floor_python:
            floor.append(run_child([floor_python, "-c", BARE, llm.url, json.dumps(TOOLS)], cwd))
    rows = [("amas 'hi' (one-shot)", median_pair(amas), "bare litellm script", median_pair(bare))]
    if floor:
        rows.append(
            (
                "amas 'hi' (one-shot)",
                median_pair(amas),
                "floor: bare, other litellm",
                median_pair(floor),
            )
        )
    return rows


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def time_to_prompt(cwd: str) -> tuple[float, float]:
    """Seconds until the REPL prompt is on a real (pseudo) terminal, and RSS at that moment."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execve(PY, [PY, "-m", "amas_code", "-m", "openai/fake"], ENV)
    start, seen = time.perf_counter(), b""
    while "›".encode() not in seen and time.perf_counter() - start < 10:
        if select.select([fd], [], [], 0.01)[0]:
            seen += os.read(fd, 4096)
    elapsed, rss = time.perf_counter() - start, rss_mib(pid)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return elapsed, rss


def bench_repl(cwd: str) -> list[tuple]:
    return [
        ("REPL prompt on screen", median_pair([time_to_prompt(cwd) for _ in range(RUNS)]), "", None)
    ]


def round_trips(llm: FakeLLM, n: int, use_agent: bool) -> float:
    """Seconds per model->read_file->model round trip, through the Agent or a raw litellm loop."""
    from amas_code import providers, tools, ui
    from amas_code.agent import Agent
    from amas_code.config import DEFAULT_CONFIG

    ui.console.file = open(os.devnull, "w")
    config = {
        **DEFAULT_CONFIG,
        "model": "openai/fake",
        "api_key": "k",
        "api_base": llm.url,
        "checkpoint_on_edit": False,
    }
    llm.queue(*[tool("read_file", {"path": f"big{i}.py"}, f"c{i}") for i in range(n)], text("done"))
    start = time.perf_counter()
    if use_agent:
        Agent(config).turn("read big.py")
    else:
        messages = [{"role": "user", "content": "read big.py"}]
        for _ in range(n + 1):
            message, _ = providers.complete(messages, tools.TOOLS, config)
            messages.append(message)
            for call in message.get("tool_calls", []):
                content = Path(json.loads(call["function"]["arguments"])["path"]).read_text()
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    return (time.perf_counter() - start) / (n + 1)


def bench_tools(llm: FakeLLM, cwd: str) -> list[tuple]:
    from amas_code import tools
    from amas_code.checkpoint import Checkpoint

    os.chdir(cwd)
    for i in range(12):
        Path(f"big{i}.py").write_text(
            "".join(f"line_{j} = {j}  # padding padding\n" for j in range(1600))
        )
    Path("big.py").write_text(Path("big0.py").read_text())
    round_trips(llm, 3, True)  # warm up litellm
    agent = statistics.median(round_trips(llm, 10, True) for _ in range(RUNS))
    raw = statistics.median(round_trips(llm, 10, False) for _ in range(RUNS))
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}
    tools.STATE["checkpoint"] = Checkpoint(".", enabled=False)
    read = timed(lambda: tools.read_file("big.py"))
    edit = (
        timed(
            lambda: (
                tools.edit_file("big.py", "line_7 = 7 ", "line_7 = 8 ")
                + tools.edit_file("big.py", "line_7 = 8 ", "line_7 = 7 ")
            )
        )
        / 2
    )
    return [
        ("per tool round trip (agent)", (agent, None), "raw litellm loop", (raw, None)),
        (f"read_file {Path('big.py').stat().st_size // 1000} KB", (read, None), "", None),
        ("edit_file (no commit)", (edit, None), "", None),
    ]


def timed(action, runs: int = 20) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bench_checkpoint(cwd: str) -> list[tuple]:
    from amas_code import tools
    from amas_code.checkpoint import Checkpoint

    repo = Path(cwd, "big-repo")
    (repo / "src").mkdir(parents=True)
    for i in range(10_000):
        (repo / "src" / f"f{i}.py").write_text(f"x = {i}\n")
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True)
    os.chdir(repo)
    tools.STATE["checkpoint"] = Checkpoint(".")
    tools.STATE["config"] = {**tools.STATE["config"], "auto_accept": True}  # a write, not a "no"
    counter = iter(range(10**6))
    save = timed(lambda: tools.write_file("src/f1.py", f"x = {next(counter)}\n"), runs=RUNS * 2)
    rows = [("checkpointed write, 10 000-file repo", (save, None), "", None)]
    # The snapshot before each shell command (#37): the first of a session seeds its own index from
    # the user's; then each is `git add -A` through that index. The baseline is the bare command.
    shutil.rmtree(".git/amas", ignore_errors=True)
    first = timed(lambda: Checkpoint(".").snapshot(), runs=1)
    again = timed(Checkpoint(".").snapshot, runs=RUNS * 2)
    shell = lambda: tools.shell_command("echo changed >> src/f2.py")  # noqa: E731
    ran = timed(shell, runs=RUNS * 2)
    tools.STATE["checkpoint"] = Checkpoint(
        ".", enabled=False
    )  # the same tool with no snapshot: checkpoints off
    bare = timed(shell, runs=RUNS * 2)
    rows += [("first snapshot of a session, 10 000 files", (first, None), "", None)]
    rows += [("snapshot, 10 000 files", (again, None), "", None)]
    return rows + [("shell command, 10 000 files", (ran, None), "no snapshot", (bare, None))]


def bench_init(cwd: str) -> list[tuple]:
    """`amas init` as a whole process over 1000 real source files (the standard library's)."""
    import sysconfig

    project = Path(cwd, "stdlib-1000")
    library = Path(sysconfig.get_paths()["stdlib"])
    for i, source in enumerate(sorted(library.rglob("*.py"))[:1000]):
        Path(project, f"{i:04}_{source.name}").parent.mkdir(parents=True, exist_ok=True)
        Path(project, f"{i:04}_{source.name}").write_bytes(source.read_bytes())
    init = median_pair(
        [run_child([PY, "-m", "amas_code", "init"], str(project)) for _ in range(RUNS)]
    )
    return [("amas init, 1000 stdlib files", init, "", None)]


FIRST_JUDGEMENT = """
import time
from amas_code import agent, tools
start = time.perf_counter()
tools.destructive("git status && rm -rf build")
print(time.perf_counter() - start)
"""


def bench_readers(cwd: str) -> list[tuple]:
    """The command judge (tree-sitter-bash and destructive.yaml) and the written-call reader
    (formats.yaml): the first judgement in a fresh process (it loads the grammar), then medians."""
    from amas_code import providers, tools

    done = subprocess.run(
        [PY, "-c", FIRST_JUDGEMENT], cwd=cwd, env=ENV, capture_output=True, text=True
    )
    first = float(done.stdout.split()[-1])
    judge = timed(lambda: tools.destructive("git status && rm -rf build"), runs=500)
    heredoc = "cat > big.txt <<'EOF'\n" + "rm -rf src; git reset --hard\n" * 36_000 + "EOF"
    words = "git commit -m '" + "word " * 200_000 + "'"
    prose = "An ordinary answer, with `code`, (parentheses), {braces} and <tags>. " * 300
    hostile = "<function=read_file><parameter=path>" * 1400 + "[" * 50_000
    calls = (  # 20 000 characters of prose and calls in four families, one of them cited
        "<think>"
        + "Which file first? " * 40
        + "</think>\n"
        + prose[:4000]
        + "\n<tool_call>\n<function=read_file>"
        "\n<parameter=path>\na.py\n</parameter>\n</function>\n</tool_call>\n"
        + prose[:4000]
        + '\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="shell_command">\n<｜DSML｜parameter name="command" '
        'string="true">pytest -q</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>\n'
        + prose[:4000]
        + '\n<|tool_call>call:read_file{path:<|"|>b.py<|"|>}<tool_call|>\n'
        + prose[:3000]
        + '\nThe docs show {"name": "fetch_url", "arguments": {"url": "https://x.example"}} as an example.\n'
        + prose[:3000]
        + '\n{"name": "list_files", "arguments": {"path": "."}}\n'
    )
    assert len(providers.written_calls(calls, tools.TYPES)) == 4 and 19_000 < len(calls) < 21_000
    return [
        ("judge: first command (loads the grammar)", (first, None), "", None),
        ("judge: one command line, median", (judge, None), "", None),
        (
            "judge: 1 MB here-document",
            (timed(lambda: tools.destructive(heredoc), 5), None),
            "",
            None,
        ),
        (
            "judge: 1 MB commit message",
            (timed(lambda: tools.destructive(words), 5), None),
            "",
            None,
        ),
        (
            "reader: 20 000-character answer",
            (timed(lambda: providers.written_calls(prose, tools.TYPES)), None),
            "",
            None,
        ),
        (
            "reader: 20 000 characters, 4 calls",
            (timed(lambda: providers.written_calls(calls, tools.TYPES)), None),
            "",
            None,
        ),
        (
            "reader: 100 KB of unclosed tags",
            (timed(lambda: providers.written_calls(hostile, tools.TYPES), 5), None),
            "",
            None,
        ),
    ]


BROWSE = """
import os, sys, threading
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path
server = HTTPServer(("127.0.0.1", 0), SimpleHTTPRequestHandler)
threading.Thread(target=server.serve_forever, daemon=True).start()
Path("page.html").write_text("<h1>Hello</h1><button>Go</button>")
from amas_code import tools
print(tools.run("browser_navigate", {"url": f"http://127.0.0.1:{server.server_port}/page.html"}))
def pss(pid):
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0
def ours(d):  # playwright starts Chromium in a session of its own: find it by its command line
    try:
        return int(d.name) == os.getpid() or any(w in (d / "cmdline").read_bytes() for w in (b"chrom", b"playwright"))
    except OSError:
        return False
pids = [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit() and ours(d)]
print(f"{sum(map(pss, pids)):.0f} {len(pids)}")
"""


def bench_browser(cwd: str) -> list[tuple]:
    """Memory with the browser open: PSS summed over amas, playwright's driver and Chromium's processes
    (no other Chromium may run meanwhile)."""
    done = subprocess.run([PY, "-c", BROWSE], cwd=cwd, env=ENV, capture_output=True, text=True)
    if "Opened" not in done.stdout:
        return [("browser open (no Chromium here)", (0.0, None), "", None)]
    total, processes = done.stdout.split()[-2:]
    return [(f"browser open: PSS of {processes} processes", (0.0, float(total)), "", None)]


def fmt(pair) -> str:
    if not pair:
        return ""
    secs, rss = pair
    shown = "" if not secs else f"{secs * 1000:.1f} ms" if secs < 1 else f"{secs:.2f} s"
    shown = f"{secs * 1e6:.0f} µs" if secs and secs < 0.001 else shown
    return shown + (f", {rss:.0f} MiB" if rss else "")


def main() -> None:
    llm, work = FakeLLM(), tempfile.mkdtemp()
    subprocess.run(["git", "init", "-q", work], check=True)
    sections = {
        "version": lambda: bench_version(work),
        "repl": lambda: bench_repl(work),
        "one-shot": lambda: bench_one_shot(llm, work),
        "init": lambda: bench_init(work),
        "browser": lambda: bench_browser(work),
        # In-process from here on: litellm loads into this process, and a child forked from it
        # reports the parent's size as its own peak RSS, so whole-process rows come first.
        "tools": lambda: bench_tools(llm, work),
        "readers": lambda: bench_readers(work),
        "checkpoint": lambda: bench_checkpoint(work),  # last: it changes directory
    }
    chosen = sys.argv[1:] or list(sections)  # e.g. `python bench/run.py init one-shot`
    rows = [row for name in chosen for row in sections[name]()]
    print(
        f"Amas Code benchmark · {time.strftime('%Y-%m-%d')} · {os.cpu_count()} cores · {RUNS} runs, medians"
    )
    print(f"{'measurement':40} {'amas':>18}   {'baseline':28} {'ratio':>6}")
    for name, ours, base_name, base in rows:
        ratio = f"{ours[0] / base[0]:.3f}" if base else ""
        extra = f"  (+{(ours[0] - base[0]) * 1000:.1f} ms)" if base and ours[0] < 1 else ""
        extra += f"  (RSS +{ours[1] - base[1]:.1f} MiB)" if base and base[1] else ""
        print(f"{name:40} {fmt(ours):>18}   {base_name:20} {fmt(base):>16} {ratio:>6}{extra}")
    cpu = {k: statistics.median(v) for k, v in CPU.items() if k}
    if "amas" in cpu:
        ratio = cpu["amas"] / cpu["bare"]
        print(
            f"one-shot CPU (user+sys): amas {cpu['amas']:.2f} s, bare {cpu['bare']:.2f} s, {ratio:.3f}"
        )
    budget = subprocess.run(
        [PY, str(ROOT / ".ci/budget.py"), str(ROOT / "amas_code")], capture_output=True, text=True
    )
    print(budget.stdout.splitlines()[0])
    llm.close()


if __name__ == "__main__":
    main()
