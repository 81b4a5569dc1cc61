"""Telling a model folder from a Hugging Face id before anything is loaded, so that a typo is one clear error
instead of minutes of hub retries (offline) or a hub error about repo-id characters."""

from __future__ import annotations

import re
from pathlib import Path

from pettingllms.core.errors import ConfigError

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
"""A Hugging Face model id: `owner/name`."""


def check_model_reference(name: str, field: str, others: str = "") -> None:
    """Raise `ConfigError` naming `field` unless `name` is an existing folder or has the form of a Hugging Face
    id (`owner/name`, e.g. `Qwen/Qwen3-1.7B`) whose owner is not a folder here (`runs/typo` is a mistyped path).
    `others` lists the field's other accepted values for the message."""
    path = Path(name).expanduser()
    if path.exists():
        return
    if _HUB_ID.match(name) and path.parent.is_dir():
        raise ConfigError(f"{field}={name!r}: no such folder in {str(path.parent)!r}")
    if _HUB_ID.match(name):
        return
    accepted = f"{others}, " if others else ""
    raise ConfigError(
        f"{field}={name!r} is neither an existing folder nor a Hugging Face id (owner/name); accepted: "
        f"{accepted}a model folder, or a hub id such as 'Qwen/Qwen3-1.7B'"
    )
