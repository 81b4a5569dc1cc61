"""A function of the package longer than 60 lines is an exception that says why, in a `# long function:`
comment right above its `def`."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "pettingllms"
LIMIT = 60


def test_every_function_over_60_lines_gives_its_reason():
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.end_lineno - node.lineno + 1 <= LIMIT:
                continue
            first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            above = lines[: first - 1]
            comment = []
            while above and above[-1].lstrip().startswith("#"):
                comment.insert(0, above.pop().strip())
            if not any(line.startswith("# long function:") for line in comment):
                unexplained.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert unexplained == []
