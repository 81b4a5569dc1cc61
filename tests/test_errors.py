"""Every exception class the package defines derives from `PettingLLMsError` (so `except PettingLLMsError` catches
what the package raises on purpose), but those listed in `OUTSIDE`, each with the reason it stands apart."""

import ast
import importlib
from pathlib import Path

from pettingllms.core.errors import PettingLLMsError

PACKAGE = Path(__file__).resolve().parents[1] / "pettingllms"
OUTSIDE = {
    "pettingllms.sandbox.server_pool.SandboxUnavailable": "the sandbox is a leaf: it imports nothing of the project",
    "pettingllms.sandbox.server_pool._StaleReply": "caught in its module",
    "pettingllms.data.code.judge_harness.Unsupported": "runs inside the sandbox, in the judge's harness",
    "pettingllms.data.code.judge_harness.CandidateFailed": "runs inside the sandbox, in the judge's harness",
    "pettingllms.data.code.judge_harness.CandidateRaised": "runs inside the sandbox, in the judge's harness",
    "pettingllms.data.code.judge_candidate.Unsupported": "runs inside the sandbox, in the candidate's process",
    "pettingllms.data.code.schema.SkippedRow": "a loader's signal to skip a row, caught by the loaders",
    "pettingllms.warmstart.math_programs.UnknownProblem": "a text that is not a generated problem, caught by its callers",
}


def exception_classes() -> list[str]:
    """The qualified names of the classes defined in the package whose base names an exception."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base).split(".")[-1] for base in node.bases]
                if any(
                    b.endswith(("Error", "Exception", "Unavailable")) or b == "BaseException" for b in bases
                ):
                    found.append(f"{module}.{node.name}")
    return found


def test_every_exception_of_the_package_is_a_pettingllms_error_or_says_why_not():
    names = exception_classes()
    assert "pettingllms.envs.sokoban.board.LevelFormatError" in names and len(names) > 15
    outside = []
    for name in names:
        module, _, cls = name.rpartition(".")
        if not issubclass(getattr(importlib.import_module(module), cls), PettingLLMsError):
            outside.append(name)
    assert sorted(outside) == sorted(OUTSIDE)
