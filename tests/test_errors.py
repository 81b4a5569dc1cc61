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


def ast_bases() -> dict[str, list[str]]:
    """Every exception class of the package (`exception_classes`) -> the simple names of its bases."""
    bases = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases[f"{module}.{node.name}"] = [ast.unparse(base).split(".")[-1] for base in node.bases]
    return bases


def derives_by_name(name: str, bases: dict[str, list[str]]) -> bool:
    """`name` derives from `PettingLLMsError` by the names of its bases: for the classes of a module whose extra is
    not installed here (it cannot be imported), each base is `PettingLLMsError` or a class of the package that
    derives from it."""
    by_simple = {qualified.rpartition(".")[2]: qualified for qualified in bases}
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        for base in bases.get(current, []):
            if base == "PettingLLMsError":
                return True
            if base in by_simple and by_simple[base] not in seen:
                seen.add(by_simple[base])
                todo.append(by_simple[base])
    return False


def test_every_exception_of_the_package_is_a_pettingllms_error_or_says_why_not():
    names = exception_classes()
    assert "pettingllms.envs.sokoban.board.LevelFormatError" in names and len(names) > 15
    bases, outside = ast_bases(), []
    for name in names:
        module, _, cls = name.rpartition(".")
        try:
            derives = issubclass(getattr(importlib.import_module(module), cls), PettingLLMsError)
        except ModuleNotFoundError as missing:  # an extra's module (the `openenv` server, in its own venv)
            assert not missing.name.startswith("pettingllms"), missing
            derives = derives_by_name(name, bases)
        if not derives:
            outside.append(name)
    assert sorted(outside) == sorted(OUTSIDE)
    assert derives_by_name("pettingllms.integrations.openenv_server.SessionClosedError", bases)
