"""Checks that a command can write where it will write, made before its first episode or model load, so that an
output that cannot be written is one `ConfigError` naming the path and why, not a traceback after the work.

`check_writable_file(path, what)`: a file can be written at `path` (it is not a folder; its folder exists or can be
made). `check_writable_folder(path, what)`: `path` is a folder files can be written into, or can be made one. A
folder that does not exist yet is judged by its nearest existing ancestor, which must be a folder this process can
write into: that is tested by creating (and removing) an empty file there, which is what holds for every user,
root included (root passes every permission bit, not a read-only file system).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from pettingllms.core.errors import ConfigError


def check_writable_file(path: Path, what: str) -> None:
    """Raise `ConfigError` ("`what` PATH: why") unless a file can be written at `path`."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{what} {path}: is a folder; name a file")
    check_writable_folder(path.parent, f"{what} {path}: its folder")


def check_writable_folder(path: Path, what: str) -> None:
    """Raise `ConfigError` ("`what` PATH: why") unless files can be written into the folder `path` (made first
    where it does not exist yet)."""
    path = Path(path).expanduser()
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        where = "is a file" if existing == path else f"its parent {existing} is a file"
        raise ConfigError(f"{what} {path}: {where}, so no folder can be made there")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        inside = "" if existing == path else f" (its nearest existing folder {existing})"
        raise ConfigError(f"{what} {path}: cannot write into it{inside}: {reason}") from None
