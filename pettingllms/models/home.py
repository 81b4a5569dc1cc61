"""The PettingLLMs home folder, where built models and other caches live.

`pettingllms_home()` is `$PETTINGLLMS_HOME` when that variable is set and non-empty, else
`~/.cache/pettingllms`. Nothing in the package writes to a fixed absolute path; every cache goes under this
folder (models under `models/`). The folder is not created here: writers create what they need.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV_VAR = "PETTINGLLMS_HOME"
DEFAULT_HOME = Path("~") / ".cache" / "pettingllms"


def pettingllms_home() -> Path:
    """The home folder: `$PETTINGLLMS_HOME` (user-expanded, made absolute), or `~/.cache/pettingllms`."""
    value = os.environ.get(HOME_ENV_VAR, "").strip()
    return Path(value).expanduser().resolve() if value else DEFAULT_HOME.expanduser().resolve()


def models_dir() -> Path:
    """Where built models are cached: `<home>/models`."""
    return pettingllms_home() / "models"
