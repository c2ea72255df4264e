"""Issue #41's figures for one undo for every change, as ratios measured in one run: a snapshot
against `git status` on the same repository (10 000 and 100 000 tracked files), a checkpointed
edit against an unchecked one, and the bytes a snapshot adds. Run: python bench/undo.py [N ...]"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
RUNS = int(os.environ.get("BENCH_RUNS", "7"))


def timed(fn, runs: int = RUNS) -> float:
    """Median wall milliseconds of `fn`."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def make_repo(root: Path, files: int) -> None:
    """A committed repository of `files` small files in folders of 100, and one user edit."""
    run = lambda *a: subprocess.run(a, cwd=root, check=True, capture_output=True)  # noqa: E731
    run("git", "init", "-q", "-b", "main")
    for d in range(files // 100):
        (root / f"d{d}").mkdir()
        for f in range(100):
            (root / f"d{d}" / f"f{f}.py").write_text(f"print({d}, {f})\n" * 20)
    run("git", "add", "-A")
    run("git", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "init")
    (root / "d0" / "f0.py").write_text("the user's uncommitted edit\n")


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def measure(files: int) -> None:
    from amas_code import tools
    from amas_code.checkpoint import Checkpoint

    root = Path(tempfile.mkdtemp())
    make_repo(root, files)
    os.chdir(root)
    status = lambda: subprocess.run(["git", "status", "--porcelain"], capture_output=True)  # noqa: E731
    status_ms = timed(status)
    first_ever = timed(lambda: Checkpoint(".").snapshot(), runs=1)  # creates Amas's repository
    first = timed(lambda: Checkpoint(".").snapshot())  # a new session: the index seeded again
    cp = Checkpoint(".")
    cp.begin("bench")  # the turn an edit records into
    later = timed(cp.snapshot)
    tools.STATE.update(root=root, config={**tools.STATE["config"], "auto_accept": True})
    tools.STATE["checkpoint"] = cp
    ui_quiet()
    edit = timed(lambda: tools.write_file("d1/f1.py", f"print({time.time_ns()})\n"))
    tools.STATE["checkpoint"] = Checkpoint(".", enabled=False)
    bare = timed(lambda: tools.write_file("d1/f1.py", f"print({time.time_ns()})\n"))
    own = Path(".git/amas/repo")
    grown = size(own)
    (root / "d2" / "f2.py").write_bytes(os.urandom(50_000).hex().encode())  # 100 000 new bytes
    cp.snapshot()
    added = size(own) - grown
    for i in range(1000):  # new files among tracked ones, as a generator or a build writes them
        (root / f"d{i % (files // 100)}" / f"new{i}.txt").write_text(f"{i}\n")
    spread = timed(cp.snapshot, runs=1)  # once: then Amas's index holds them
    print(f"\n{files} tracked files (medians of {RUNS}, ms)")
    print(f"  git status {status_ms:.0f}")
    print(f"  first snapshot ever {first_ever:.0f} ({first_ever / status_ms:.2f} x git status)")
    print(f"  first snapshot of a session {first:.0f} ({first / status_ms:.2f} x git status)")
    print(f"  later snapshot {later:.0f} ({later / status_ms:.2f} x git status)")
    print(f"  checkpointed edit {edit:.0f}, unchecked {bare:.0f}: +{edit - bare:.0f} ms")
    print(f"  1000 new files among tracked ones: {spread:.0f} ({spread / status_ms:.2f} x git status)")
    print(f"  a 100 000-byte file changed: the snapshot added {added} bytes to Amas's repository")
    os.chdir("/")
    shutil.rmtree(root, ignore_errors=True)


def ui_quiet() -> None:
    """The diff each edit prints would be timed too: sent to /dev/null."""
    from amas_code import ui

    ui.console.file = open(os.devnull, "w")


if __name__ == "__main__":
    for n in map(int, sys.argv[1:] or ["10000", "100000"]):
        measure(n)
