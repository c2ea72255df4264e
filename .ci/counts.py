"""Set README.md's counts to what the code and the data hold now, as tests/test_startup.py checks
them: the budget's lines of Python, and the YAML's lines of rules, of examples and in all.
Run from the repository's root: python .ci/counts.py"""

import ast
import re
import sys
from pathlib import Path

sys.path.insert(0, ".ci")
import budget  # noqa: E402

ROOT = Path("amas_code")


def data(*names: str, examples: bool = False) -> int:
    """Lines of data (no blank line, no comment): the rules, or the examples kept beside them."""
    count, open_list = 0, 0
    for name in names:
        rules = (ROOT / name).read_text().partition("\nexamples:\n")
        for line in rules[0].splitlines() + [f"ask: {line}" for line in rules[2].splitlines()]:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            example = open_list > 0 or text.startswith(("ask:", "run:", ": ask:"))
            if example:
                open_list = max(open_list + text.count("[") - text.count("]"), 0)
            count += example == examples
    return count


sources = [p.read_text() for p in sorted(ROOT.glob("*.py"))]
code = sum(budget.code_lines(s, ast.parse(s)) for s in sources)
physical = sum(len(s.splitlines()) for s in sources)
tables = ("destructive.yaml", "formats.yaml", "languages.yaml")
rules, kept = data(*tables), data(*tables, examples=True)
everything = data(*(p.name for p in ROOT.glob("*.yaml")))
lines = [line.strip() for y in ROOT.glob("*.yaml") for line in y.read_text().splitlines()]
withex = sum(1 for s in lines if s and not s.startswith("#"))
readme = Path("README.md").read_text()
for pattern, value in (
    (r"\*\*\d+ lines of code \(\d+ with blank lines", f"**{code} lines of code ({physical} with blank lines"),
    (r"beside(\s+)\d+(\s+)lines of rules kept as data", rf"beside\g<1>{rules}\g<2>lines of rules kept as data"),
    (r"and(\s+)\d+(\s+)lines of examples beside them", rf"and\g<1>{kept}\g<2>lines of examples beside them"),
    (r"\b\d+(\s+)lines of YAML,(\s+)\d+(\s+)with the examples", rf"{everything}\g<1>lines of YAML,\g<2>{withex}\g<3>with the examples"),
):
    readme = re.sub(pattern, value, readme)
Path("README.md").write_text(readme)
print(f"code {code} ({physical}), rules {rules}, examples {kept}, YAML {everything} ({withex} with examples)")
