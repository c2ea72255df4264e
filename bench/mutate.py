"""Mutation score of the modules that keep the user's work safe (issue #26): checkpoint.py, the
sandbox and judge functions of tools.py, and config.py. Standard library only; not part of CI.

Each mutant is one small change made with `ast` (a flipped comparison, `and`/`or` swapped, a negated
condition, a list element or call argument dropped, a statement deleted, a number moved by one,
True/False swapped). The repository (amas_code/, tests/, pyproject.toml) is copied to a temporary
directory first and only the copy is ever mutated. One traced run of the test suite records which
tests execute each line (in-process and in the `amas` subprocesses they start); each mutant then runs
`python -m pytest -x -q` on the tests that execute its lines, fastest first, with a timeout. A mutant
is caught when a test fails or times out. Equivalent mutants, named in EQUIVALENT with the reason,
are left out of the score.

Run (about an hour on two cores; nice it so other work goes on):
    nice -n 19 python bench/mutate.py [--module checkpoint|tools|config] [--limit N] [--jobs 1]
"""

import argparse
import ast
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# module -> the top-level functions to mutate (None: the whole module but its imports)
TARGETS = {
    "checkpoint": None,
    "tools": ["confine", "inside", "change_file", "destructive", "judge", "run"],
    "config": None,
}
# (module, function, mutation as printed) -> why no test can tell the mutant from the original.
# Named for the code of 4c00e86 (the measurement of issue #26); a mutant is equivalent only when no
# input a user can give tells it apart.
STORE = "Path(self.repo.git_dir, 'amas', 'checkpoints.json')"
EQUIVALENT: dict[tuple[str, str, str], str] = {
    ("checkpoint", "Checkpoint.__init__", f"drop argument `'amas'` from `{STORE}`"): (
        "where in .git the undo stacks are kept: any file name there works the same"
    ),
    ("checkpoint", "Checkpoint.__init__", f"drop argument `'checkpoints.json'` from `{STORE}`"): (
        "where in .git the undo stacks are kept: any file name there works the same"
    ),
    ("checkpoint", "Checkpoint.before", "delete `return None` (#2)"): (
        "the last statement of the function: falling off the end returns None too"
    ),
    (
        "checkpoint",
        "Checkpoint._step",
        "drop argument `missing_ok=True` from `target.unlink(missing_ok=True)`",
    ): "_check() has just hashed the file as the checkpoint's bytes, so it exists",
    ("checkpoint", "Checkpoint._step", "`True` -> `False` (#2)"): (
        "missing_ok=False: _check() has just hashed the file, so it exists"
    ),
    (
        "checkpoint",
        "Checkpoint.undo",
        "`0` -> `1`",
    ): "the default n: `n or 1` makes it 1 either way",
    ("checkpoint", "Checkpoint._hash", "`False` -> `True`"): (
        "hashing with -w also stores the blob: one more object in .git, nothing a user sees"
    ),
    ("checkpoint", "Checkpoint._index", "`2` -> `3`"): (
        "update-index --index-info also reads `mode sha stage`, and the stage is 0: undo refuses "
        "paths with conflict stages"
    ),
    (
        "checkpoint",
        "Checkpoint.store",
        "drop argument `indent=1` from `json.dumps(state, indent=1)`",
    ): ("the layout of the JSON state file"),
    ("checkpoint", "Checkpoint.store", "`1` -> `2`"): "the layout of the JSON state file",
    ("checkpoint", "Checkpoint.store", "`1` -> `0`"): "the layout of the JSON state file",
    ("checkpoint", "Checkpoint.store", "drop `'after'` from `('before', 'after')`"): (
        "each `after` blob is in its checkpoint commit, kept by the branch (undo stack) or by "
        "the keep ref's parents (redo stack)"
    ),
    ("config", "load", "drop `config` from `[user, project, config]`"): (
        "redact() also reads the final config's own secret-named keys, which this layer repeats"
    ),
}

TRACER = r"""
import atexit, json, os, sys, threading
_dir, _targets, _hits = os.environ["MUTATE_TRACE"], set(os.environ["MUTATE_FILES"].split(os.pathsep)), {}
def _local(frame, event, arg):
    if event == "line":
        _hits.setdefault(os.environ.get("MUTATE_TEST", ""), set()).add(
            (frame.f_code.co_filename, frame.f_lineno))
    return _local
def _global(frame, event, arg):
    if frame.f_code.co_filename in _targets:
        _local(frame, "line", None)
        return _local
    return None
def _dump():
    data = {t: sorted(h) for t, h in _hits.items()}
    with open(os.path.join(_dir, f"{os.getpid()}.json"), "w") as f:
        json.dump(data, f)
sys.settrace(_global)
threading.settrace(_global)
atexit.register(_dump)
"""
PLUGIN = r"""
import json, os, time, pytest
_times = {}
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    os.environ["MUTATE_TEST"], start = item.nodeid, time.monotonic()
    yield
    os.environ["MUTATE_TEST"], _times[item.nodeid] = "", time.monotonic() - start
_failed = set()
def pytest_runtest_logreport(report):
    if report.failed:
        _failed.add(report.nodeid)
def pytest_sessionfinish(session, exitstatus):
    with open(os.path.join(os.environ["MUTATE_TRACE"], "times.json"), "w") as f:
        json.dump({t: s for t, s in _times.items() if t not in _failed}, f)
"""

FLIP = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


def mutations(node: ast.AST):
    """(replacement node, description) for each mutation of this node."""
    src = ast.unparse(node) if not isinstance(node, ast.stmt) else ""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            new = copy.deepcopy(node)
            new.ops[i] = FLIP[type(op)]()
            yield new, None
    elif isinstance(node, ast.BoolOp):
        yield ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values), None
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield node.operand, None
    elif isinstance(node, (ast.IfExp, ast.If, ast.While)):
        test = node.test
        simple = isinstance(test, ast.Compare) and len(test.ops) == 1
        if not simple and not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
            new = copy.copy(node)
            new.test = ast.UnaryOp(ast.Not(), test)
            yield new, f"negate `{ast.unparse(test)}`"
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        yield ast.Constant(not node.value), None
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        yield ast.Constant(node.value + 1), None
        yield ast.Constant(node.value - 1), None
    elif isinstance(node, (ast.List, ast.Set)) or (
        isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts)
    ):
        if isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            for i, elt in enumerate(node.elts):
                new = copy.copy(node)
                new.elts = node.elts[:i] + node.elts[i + 1 :]
                yield new, f"drop `{ast.unparse(elt)}` from `{src}`"
    elif isinstance(node, ast.Call):
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "split"
            and not node.args
            and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)
        ):
            words = func.value.value.split()
            for i, word in enumerate(words):
                new = copy.deepcopy(node)
                new.func.value.value = " ".join(words[:i] + words[i + 1 :])
                yield new, f"drop {word!r} from `{src}`"
        for i, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred) or (
                isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            ):
                new = copy.copy(node)
                new.args = node.args[:i] + node.args[i + 1 :]
                yield new, f"drop argument `{ast.unparse(arg)}` from `{src}`"
        for i, kw in enumerate(node.keywords):
            new = copy.copy(node)
            new.keywords = node.keywords[:i] + node.keywords[i + 1 :]
            yield new, f"drop argument `{ast.unparse(kw)}` from `{src}`"
    if (
        isinstance(node, ast.stmt)
        and not isinstance(
            node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Pass)
        )
        and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    ):  # docstring
        first = ast.unparse(node).splitlines()[0]
        yield ast.Pass(), f"delete `{first}`"


def candidates(tree: ast.Module, module: str):
    """(path to the node, replacement, description, first line, last line, function)."""
    wanted = TARGETS[module]

    def visit(node, path, qual, chosen):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            qual = f"{qual}.{node.name}" if qual else node.name
            chosen = chosen or (wanted is not None and qual in wanted)
        if chosen and path and not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for new, text in mutations(node):
                if text is None:
                    before, after = ast.unparse(node), ast.unparse(new)
                    text = f"`{before}` -> `{after}`"
                yield path, new, text, node.lineno, node.end_lineno, qual or "<module>"
        for field, value in ast.iter_fields(node):
            if isinstance(node, ast.JoinedStr):
                return  # f-string internals: the wording of messages
            items = value if isinstance(value, list) else [value]
            for i, child in enumerate(items):
                if isinstance(child, ast.AST):
                    step = (field, i if isinstance(value, list) else None)
                    yield from visit(child, path + [step], qual, chosen)

    yield from visit(tree, [], "", wanted is None)


def replaced(tree: ast.Module, path: list, new: ast.AST) -> str:
    tree = copy.deepcopy(tree)
    node = tree
    for field, index in path[:-1]:
        node = getattr(node, field) if index is None else getattr(node, field)[index]
    field, index = path[-1]
    if index is None:
        setattr(node, field, new)
    else:
        getattr(node, field)[index] = new
    return ast.unparse(ast.fix_missing_locations(tree))


def make_mutants(copy_root: Path, modules: list[str]) -> list[dict]:
    found, seen = [], set()
    for module in modules:
        file = copy_root / "amas_code" / f"{module}.py"
        tree = ast.parse(file.read_text())
        original = ast.unparse(tree)
        assert ast.dump(ast.parse(original)) == ast.dump(tree), f"{file}: unparse changed it"
        missing = set(TARGETS[module] or []) - {
            n.name for n in tree.body if isinstance(n, ast.FunctionDef)
        }
        if missing:
            print(f"warning: {module}.py has no function {', '.join(sorted(missing))}")
        for path, new, text, first, last, qual in candidates(tree, module):
            try:
                source = replaced(tree, path, new)
                compile(source, str(file), "exec")
            except (SyntaxError, ValueError):
                continue
            if source == original or source in seen:
                continue
            seen.add(source)
            repeat = sum(m["mutation"] == text and m["function"] == qual for m in found)
            text += f" (#{repeat + 1})" if repeat else ""
            found.append(
                {
                    "module": module,
                    "line": first,
                    "last": last,
                    "function": qual,
                    "mutation": text,
                    "source": source,
                }
            )
    return found


def copy_repo(dest: Path, rev: str | None, extra: list[str]) -> Path:
    """amas_code/, tests/ and pyproject.toml, from the work tree or (read-only) from a git revision."""
    dest.mkdir(parents=True)
    if rev:
        parts = ["amas_code", "tests", "pyproject.toml"]
        archive = subprocess.run(
            ["git", "archive", rev, *parts], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        for name in extra:
            shutil.copy(ROOT / name, dest / name)
        return dest
    ignore = shutil.ignore_patterns("__pycache__", ".hypothesis", ".pytest_cache")
    shutil.copytree(ROOT / "amas_code", dest / "amas_code", ignore=ignore)
    shutil.copytree(ROOT / "tests", dest / "tests", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", dest)
    return dest


def pytest_cmd(*args: str) -> list[str]:
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:warnings"]
    return [*base, "--hypothesis-seed=0", *args]


def run(cmd: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int | None, str]:
    """Exit code (None: timed out, the whole process group killed) and output."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out = proc.communicate(timeout=timeout)[0]
        return proc.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return None, proc.communicate()[0].decode(errors="replace")


def trace(copy_root: Path, modules: list[str], tests: list[str]) -> tuple[dict, dict]:
    """One run of the tests, traced: {(module, line): {test ids}} and {test id: seconds}."""
    tracer, out = copy_root / ".tracer", copy_root / ".trace"
    tracer.mkdir()
    out.mkdir()
    (tracer / "sitecustomize.py").write_text(TRACER)
    (tracer / "mutate_plugin.py").write_text(PLUGIN)
    files = {str(copy_root / "amas_code" / f"{m}.py"): m for m in modules}
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tracer), str(copy_root)]),
        "MUTATE_TRACE": str(out),
        "MUTATE_FILES": os.pathsep.join(files),
    }
    code, output = run(pytest_cmd("-p", "mutate_plugin", *tests), copy_root, env, 3600)
    failed = [ln for ln in output.splitlines() if ln.startswith(("FAILED", "ERROR"))]
    if code not in (0, 1) or not (out / "times.json").exists():
        sys.exit(f"the traced test run broke:\n{output[-3000:]}")
    for line in failed:  # they would catch every mutant: left out, and said
        print(f"warning: fails unmutated, left out: {line}")
    hits: dict = {}
    times = json.loads((out / "times.json").read_text())
    for dump in out.glob("[0-9]*.json"):
        for test, lines in json.loads(dump.read_text()).items():
            for file, line in lines:
                if test in times or not test:
                    hits.setdefault((files[file], line), set()).add(test)
    every = set(times)
    for (module, line), ids in hits.items():
        if "" in ids:  # run at import: any test of that module could notice
            ids.discard("")
            ids |= {t for (m, _), s in hits.items() if m == module for t in s} & every
    shutil.rmtree(tracer)
    shutil.rmtree(out)
    return hits, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", choices=list(TARGETS))
    parser.add_argument("--limit", type=int, default=0, help="at most N mutants per module")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--tests", nargs="*", default=["tests"], help="test files or folders")
    parser.add_argument("--skip-test", action="append", default=[], help="leave a test file out")
    parser.add_argument("--rev", help="take the code and tests from this git revision")
    parser.add_argument("--add", action="append", default=[], help="with --rev: add this file")
    parser.add_argument("--list", action="store_true", help="only list the mutants")
    parser.add_argument(
        "--survivors", help="a --json file of an earlier run: only its survivors are run again"
    )
    parser.add_argument(
        "--recheck",
        action="append",
        default=[],
        help="with --survivors: also run again the "
        "mutants an earlier run counted as caught by a test whose name holds this text",
    )
    parser.add_argument("--json", help="write every mutant's result to this file")
    parser.add_argument(
        "--unreliable", action="append", default=[], help="leave out this test (id without [param])"
    )
    parser.add_argument("--report", help="only print the table of an earlier run's --json file")
    args = parser.parse_args()
    if args.report:
        return report(json.loads(Path(args.report).read_text()), args.module or list(TARGETS))
    modules = args.module or list(TARGETS)
    work = Path(tempfile.mkdtemp(prefix="amas-mutate-"))
    try:
        measure(args, modules, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(args, modules: list[str], work: Path) -> None:
    start = time.monotonic()
    copies = [copy_repo(work / f"copy{i}", args.rev, args.add) for i in range(args.jobs)]
    for skipped in args.skip_test:
        for c in copies:
            (c / "tests" / Path(skipped).name).unlink(missing_ok=True)
    if args.list:
        for m in make_mutants(copies[0], modules):
            print(where(m))
        return
    tests = [str(Path(t)) for t in args.tests]
    hits, times = trace(copies[0], modules, tests)
    print(f"traced {len(times)} tests in {time.monotonic() - start:.0f}s", flush=True)
    mutants = make_mutants(copies[0], modules)
    if args.limit:
        mutants = [
            m for mod in modules for m in [x for x in mutants if x["module"] == mod][: args.limit]
        ]
    kept = []
    if args.survivors:  # tests were only added since that run: only its survivors can change
        before = numbered(json.loads(Path(args.survivors).read_text()))
        alive = {
            r["n"]
            for r in before
            if r["status"] in ("survived", "uncovered")
            or any(text in str(r.get("by")) for text in args.recheck)
        }
        kept = [r for r in before if r["n"] not in alive and r["module"] in modules]
        mutants = [m for m in numbered(mutants) if m["n"] in alive]
        print(f"{len(kept)} mutants caught in {args.survivors}; running its survivors")
    print(f"{len(mutants)} mutants", flush=True)
    free = list(copies)

    new_files = tuple(f"tests/{Path(a).name}::" for a in args.add)
    unreliable = set(args.unreliable)

    def check(mutant: dict) -> dict:
        root = free.pop()
        try:
            ids = set()
            for line in range(mutant["line"], mutant["last"] + 1):
                ids |= hits.get((mutant["module"], line), set())
            # the older tests first, fastest first: the first failure also says whether they catch it
            ids = [t for t in ids if t.split("[")[0] not in unreliable]
            ids = sorted(ids, key=lambda t: (t.startswith(new_files), times.get(t, 0), t))
            if not ids:
                return {**mutant, "status": "uncovered"}
            file = root / "amas_code" / f"{mutant['module']}.py"
            original = file.read_text()
            file.write_text(mutant["source"])
            env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
            try:
                while True:
                    limit = 60 + 3 * sum(times.get(t, 1) for t in ids)
                    code, output = run(pytest_cmd("-x", *ids), root, env, limit)
                    lines = [ln for ln in output.splitlines() if ln.startswith(("FAILED", "ERROR"))]
                    by = max((t for t in ids for ln in lines[:1] if t in ln), key=len, default="")
                    if code != 1 or not by or by == ids[0]:
                        break
                    # A test that fails only after others ran is not the mutant's doing: without it.
                    if run(pytest_cmd(by), root, env, limit)[0] == 1:
                        break
                    unreliable.add(by.split("[")[0])  # and its other parameters: from now on
                    print(f"warning: fails only after other tests, left out: {by}", flush=True)
                    ids = [t for t in ids if t.split("[")[0] not in unreliable]
            finally:
                file.write_text(original)
            status = "timeout" if code is None else "caught" if code else "survived"
            new = by.startswith(new_files)
            return {**mutant, "status": status, "tests": len(ids), "by": by, "new": new}
        finally:
            free.append(root)

    results = list(kept)
    with ThreadPoolExecutor(args.jobs) as pool:
        for n, result in enumerate(pool.map(check, mutants), 1):
            results.append(result)
            if result["status"] in ("survived", "uncovered"):
                mark = "equivalent" if key(result) in EQUIVALENT else result["status"].upper()
                print(f"[{n}/{len(mutants)}] {mark}: {where(result)}", flush=True)
            elif n % 25 == 0:
                print(f"[{n}/{len(mutants)}] {time.monotonic() - start:.0f}s", flush=True)
    report(results, modules)
    print(f"took {(time.monotonic() - start) / 60:.0f} min")
    if args.json:
        slim = [{k: v for k, v in r.items() if k != "source"} for r in results]
        Path(args.json).write_text(json.dumps(slim, indent=1))


def numbered(mutants: list[dict]) -> list[dict]:
    """Each mutant with a name that is the same in every run of the same code: where and what."""
    seen: dict = {}
    for m in mutants:
        name = (m["module"], m["line"], m["function"], m["mutation"])
        seen[name] = seen.get(name, 0) + 1
        m["n"] = (*name, seen[name])
    return mutants


def key(r: dict) -> tuple:
    return r["module"], r["function"], r["mutation"]


def where(r: dict) -> str:
    return f"{r['module']}.py:{r['line']} {r['function']}: {r['mutation']}"


def report(results: list[dict], modules: list[str]) -> None:
    """The score per module; with --add, also what the other tests alone catch."""
    print("\n| module | mutants | equivalent | caught | score | without the added tests |")
    print("|---|---|---|---|---|---|")
    for module in modules:
        mine = [r for r in results if r["module"] == module]
        caught = [r for r in mine if r["status"] in ("caught", "timeout")]
        old = [r for r in caught if not r.get("new")]
        equivalent = [r for r in mine if r not in caught and key(r) in EQUIVALENT]
        counted = len(mine) - len(equivalent)
        score, before = (f"{100 * len(c) / max(counted, 1):.1f}%" for c in (caught, old))
        print(
            f"| {module}.py | {len(mine)} | {len(equivalent)} | {len(caught)} | {score} "
            f"| {len(old)}, {before} |"
        )
    survivors = [r for r in results if r["status"] in ("survived", "uncovered")]
    if survivors:
        print("\nSurvivors:")
        for r in survivors:
            why = f"  [equivalent: {EQUIVALENT[key(r)]}]" if key(r) in EQUIVALENT else ""
            print(f"  {where(r)}{' (no test runs it)' if r['status'] == 'uncovered' else ''}{why}")


if __name__ == "__main__":
    main()
