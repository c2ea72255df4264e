"""README.md's counts, as tests/test_startup.py checks them: the budget's lines of Python, and the
YAML's lines of rules, of examples and in all. Run from the repository's root to set them in README:
python .ci/counts.py"""

import ast
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import budget  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent / "amas_code"
TABLES = ("destructive.yaml", "formats.yaml", "languages.yaml")


def data(*names: str, examples: bool = False) -> int:
    """Lines of data (no blank line, no comment): the rules, or the examples kept beside them
    (`ask:`, `run:` and what their lists hold; formats.yaml's `examples:`)."""
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


def figures() -> dict:
    """Every count README states, by name."""
    sources = [p.read_text() for p in sorted(ROOT.glob("*.py"))]
    lines = [line.strip() for y in ROOT.glob("*.yaml") for line in y.read_text().splitlines()]
    return {
        "code": sum(budget.code_lines(s, ast.parse(s)) for s in sources),
        "physical": sum(len(s.splitlines()) for s in sources),
        "rules": data(*TABLES),
        "examples": data(*TABLES, examples=True),
        "yaml": data(*(p.name for p in ROOT.glob("*.yaml"))),
        "with_examples": sum(1 for s in lines if s and not s.startswith("#")),
    }


if __name__ == "__main__":
    f = figures()
    readme = Path("README.md").read_text()
    for pattern, value in (
        (r"\*\*\d+ lines of code \(\d+ with blank", f"**{f['code']} lines of code ({f['physical']} with blank"),
        (r"beside(\s+)\d+(\s+)lines of rules", rf"beside\g<1>{f['rules']}\g<2>lines of rules"),
        (r"and(\s+)\d+(\s+)lines of examples beside", rf"and\g<1>{f['examples']}\g<2>lines of examples beside"),
        (r"\b\d+(\s+)lines of YAML,(\s+)\d+(\s+)with the", rf"{f['yaml']}\g<1>lines of YAML,\g<2>{f['with_examples']}\g<3>with the"),
    ):
        readme = re.sub(pattern, value, readme)
    Path("README.md").write_text(readme)
    print(f)
