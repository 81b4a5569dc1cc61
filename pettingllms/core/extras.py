"""Naming the extra to install when a command needs libraries the light core install does not have."""

from __future__ import annotations

import importlib.util

from pettingllms.core.errors import DependencyNotInstalled

EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "transformers", "trl", "peft", "datasets", "matplotlib", "tqdm"),
    "eval": ("evaluate", "matplotlib", "tqdm"),
    "openenv": ("openenv", "uvicorn"),
    "comlrl": ("comlrl", "torch", "transformers", "datasets"),
}
"""Each extra of `pyproject.toml` a command needs -> the modules it provides (import names)."""


def require_extra(extra: str, command: str) -> None:
    """Raise `DependencyNotInstalled` naming `command`, the extra and the missing modules unless every module of
    `EXTRAS[extra]` can be imported."""
    missing = [module for module in EXTRAS[extra] if importlib.util.find_spec(module) is None]
    if missing:
        raise DependencyNotInstalled(
            f"{command} needs the '{extra}' extra (missing: {', '.join(missing)}): pip install 'pettingllms[{extra}]'"
        )
