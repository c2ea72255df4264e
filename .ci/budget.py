"""The budget gate: amas_code/*.py <= 900 lines after `ruff format --line-length 100`, functions
<= 25 lines and <= 4 parameters, no print(), nothing heavy imported at module level."""

import ast
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT, FUNCTION_LINES, PARAMS = 900, 25, 4
HEAVY = {"litellm", "playwright", "tree_sitter", "tree_sitter_language_pack", "openai"}


def problems(path: Path) -> list[str]:
    tree, found = ast.parse(path.read_text()), []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"{path.name}:{node.lineno} imports {n} at module level" for n in names if n.split(".")[0] in HEAVY]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            params = [a.arg for a in node.args.args + node.args.kwonlyargs if a.arg not in ("self", "cls")]
            if length > FUNCTION_LINES or len(params) > PARAMS:
                found.append(f"{path.name}:{node.lineno} {node.name}(): {length} lines, {len(params)} params")
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print":
            found.append(f"{path.name}:{node.lineno} print(): route output through ui")
    return found


def main(package: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for source in Path(package).glob("*.py"):
            shutil.copy(source, tmp)
        subprocess.run([sys.executable, "-m", "ruff", "format", "-q", "--isolated", "--line-length", "100", tmp], check=True)
        files = sorted(Path(tmp).glob("*.py"))
        total = sum(len(f.read_text().splitlines()) for f in files)
        found = [p for f in files for p in problems(f)]
    if total > LIMIT:
        found.append(f"{total} lines after ruff format: over the {LIMIT}-line budget")
    print(f"budget: {package}/*.py = {total} lines after ruff format (limit {LIMIT})")
    print("\n".join(found) or "budget: functions, parameters, print() and imports all within limits")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "amas_code"))
