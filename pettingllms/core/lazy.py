"""Names a package exports without importing their modules until first use (PEP 562's module `__getattr__`), so
that importing a light package does not load torch or TRL behind a name the caller never touches."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package` that serves each name of `exports` (name -> the full name of the
    module that defines it, e.g. `{"ATGRPOTrainer": "pettingllms.trainers.at_grpo"}`) from its module, imported on
    first use; any other name raises `AttributeError` as a missing attribute would."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name]), name)

    return __getattr__
