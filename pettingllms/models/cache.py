"""Build a cache folder once, atomically: a half-built folder is never seen at its final path.

`build_once(target, marker, write)` returns `target` when `target/marker` exists; otherwise `write(staging)` fills
a fresh temporary folder beside `target` (the marker file last), which is then renamed to `target`. Two processes
building the same folder at once both succeed: the second finds the first's complete folder and drops its own.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def build_once(target: Path, marker: str, write: Callable[[Path], None]) -> Path:
    """`target`, built first by `write(staging)` unless `target/marker` exists (module docstring).

    `write` must create `staging/marker` once everything else is written. A leftover `target` without the marker
    (an interrupted build of an older version of this code) is replaced.
    """
    if (target / marker).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        write(staging)
        if not (staging / marker).is_file():
            raise RuntimeError(f"the build of {target} wrote no {marker}; its writer must write it last")
        if not (target / marker).is_file():
            shutil.rmtree(target, ignore_errors=True)
            try:
                staging.rename(target)
            except OSError:
                if not (target / marker).is_file():  # not a concurrent build that finished first
                    raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
