"""Every example in the docstrings of the package and of the studies' shared modules (`scripts/research`) runs and
prints what it says (a docstring is a contract)."""

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "pettingllms"
MODULES = sorted(
    ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    for path in PACKAGE.rglob("*.py")
    if ">>> " in path.read_text()
)
RESEARCH = sorted(
    f"research.{path.stem}"
    for path in (PACKAGE.parent / "scripts" / "research").glob("*.py")
    if ">>> " in path.read_text()
)


def test_the_package_has_docstring_examples():
    assert "pettingllms.envs.code.env" in MODULES and "pettingllms.data.code.build_bundled" in MODULES
    assert "research.markdown" in RESEARCH and "research.stats" in RESEARCH


@pytest.mark.parametrize("module", MODULES + RESEARCH)
def test_docstring_examples_hold(module):
    failed, attempted = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert failed == 0
