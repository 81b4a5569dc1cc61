"""Importing the files of `scripts/` (not a package) in tests."""

import importlib.util
from pathlib import Path


def load_script(name: str):
    """Import `scripts/<name>.py` as a module."""
    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
