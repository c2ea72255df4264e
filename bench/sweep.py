"""Sweep litellm (and openai) releases: import + first streamed completion against the loopback scripted
server, as a whole process, each release in its own venv outside the repo, runs interleaved so the ratios
hold on a noisy machine. Standard library only.

Run: python bench/sweep.py litellm==1.105.3 "litellm==1.105.3 openai==2.24.0" litellm==1.83.14 ...
The first spec is the baseline of the ratio column. Venvs live in $AMAS_SWEEP_DIR (~/.cache/amas-sweep)."""

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import BARE, ENV, RUNS, FakeLLM, run_child, text  # noqa: E402

HOME = Path(os.environ.get("AMAS_SWEEP_DIR", Path.home() / ".cache" / "amas-sweep"))
TOOLS = json.dumps([{"type": "function", "function": {"name": "read_file", "parameters": {}}}])


def venv(spec: str) -> Path | None:
    """A venv holding exactly `spec` (e.g. "litellm==1.83.14 openai==2.24.0"), made once; None when
    pip cannot install it here."""
    where = HOME / spec.replace(" ", "_").replace("==", "-")
    python = where / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", *spec.split()]
        if subprocess.run(pip, capture_output=True).returncode:
            shutil.rmtree(where)
            print(f"{spec}: pip cannot install it here; left out", file=sys.stderr)
            return None
    return python


def installed(python: Path, name: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({name!r}))"
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True).stdout.strip()


def main(specs: list[str]) -> None:
    pythons = {spec: python for spec in specs if (python := venv(spec))}
    specs = list(pythons)
    llm, samples = FakeLLM(), {spec: [] for spec in specs}
    for _ in range(RUNS):
        for spec, python in pythons.items():  # interleaved: machine noise hits every release alike
            llm.queue(text("hello there"))
            samples[spec].append(run_child([str(python), "-c", BARE, llm.url, TOOLS], str(HOME)))
    llm.close()
    base = statistics.median(s[0] for s in samples[specs[0]])
    print(
        f"litellm sweep · {time.strftime('%Y-%m-%d')} · {os.cpu_count()} cores · {RUNS} runs, medians"
    )
    print(
        f"{'litellm':>9} {'openai':>8}  {'import + 1st reply':>18}  {'ratio':>6}  {'peak RSS':>9}"
    )
    for spec, python in pythons.items():
        wall = statistics.median(s[0] for s in samples[spec])
        rss = statistics.median(s[1] for s in samples[spec])
        versions = installed(python, "litellm"), installed(python, "openai")
        print(
            f"{versions[0]:>9} {versions[1]:>8}  {wall:>16.2f} s  {wall / base:>6.3f}  {rss:>5.0f} MiB"
        )


if __name__ == "__main__":
    ENV.update(OPENAI_API_KEY="k")
    main(sys.argv[1:])
