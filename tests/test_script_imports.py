"""Every name that a script or an example imports from this package exists, including the imports inside
functions, which run only deep into a long study (a moved `parse` once stopped the miniature after its warm
start, 10 minutes in)."""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(
    [
        *(ROOT / "scripts").glob("*.py"),
        *(ROOT / "scripts" / "research").glob("*.py"),
        *(ROOT / "examples").glob("*.py"),
    ]
)
PACKAGES = ("pettingllms", "research")
"""The package, and the studies' library beside the scripts (scripts/research/, on pytest's `pythonpath`)."""


def package_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every `from pettingllms... import name` or `from research... import name` in `path`, at
    any depth."""
    return [
        (node.module, alias.name)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES
        for alias in node.names
    ]


def test_the_scripts_import_from_the_package():
    assert all(package_imports(path) for path in FILES if path.parent.name == "scripts")


@pytest.mark.parametrize("path", FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_imported_name_exists(path):
    missing = []
    for module, name in package_imports(path):
        imported = importlib.import_module(module)
        if not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")  # a submodule
            except ModuleNotFoundError:
                missing.append(f"from {module} import {name}")
    assert missing == []
