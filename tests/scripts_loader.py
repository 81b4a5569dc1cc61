"""Importing the files of `scripts/` and `benchmarks/` (not packages) in tests."""

import importlib.util
import sys
from pathlib import Path


def load_script(name: str, folder: str = "scripts"):
    """Import `<folder>/<name>.py` (`scripts/` by default, or `benchmarks/`) as a module, registered in `sys.modules`
    as `name` while and after it runs (as an import would: dataclasses look their module up there)."""
    path = Path(__file__).resolve().parents[1] / folder / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
