"""The budget gate: amas_code/*.py holds at most 900 lines of code as cloc counts them (blank lines,
comments and docstrings do not count), functions <= 25 lines and <= 4 parameters, no print(),
nothing heavy imported at module level. Standard library only; `.ci/run` checks the ruff format."""

import ast
import io
import sys
import tokenize
from pathlib import Path

LIMIT, FUNCTION_LINES, PARAMS = 900, 25, 4
HEAVY = {"litellm", "playwright", "tree_sitter", "tree_sitter_language_pack", "openai"}
NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}


def docstring_lines(tree: ast.Module) -> set[int]:
    """Line numbers of module, class and function docstrings."""
    lines = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant):
                if isinstance(first.value.value, str):
                    lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def code_lines(source: str, tree: ast.Module) -> int:
    """Lines holding a token other than a comment, outside docstrings."""
    lines, skip = set(), docstring_lines(tree)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in NOT_CODE and token.type != tokenize.ENDMARKER:
            lines.update(n for n in range(token.start[0], token.end[0] + 1) if n not in skip)
    return len(lines)


def problems(path: Path, tree: ast.Module) -> list[str]:
    found = []
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
    code = physical = 0
    found = []
    for path in sorted(Path(package).glob("*.py")):
        source = path.read_text()
        tree = ast.parse(source)
        code, physical = code + code_lines(source, tree), physical + len(source.splitlines())
        found += problems(path, tree)
    if code > LIMIT:
        found.append(f"{code} lines of code: over the {LIMIT}-line budget")
    print(f"budget: {package}/*.py = {code} lines of code ({physical} with blank lines, comments and docstrings; limit {LIMIT})")
    print("\n".join(found) or "budget: functions, parameters, print() and imports all within limits")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "amas_code"))
