"""Telling a model folder from a Hugging Face id before anything is loaded, so that a typo is one clear error
instead of minutes of hub retries (offline) or a hub error about repo-id characters; and turning a hub id into
the local folder every backend loads (`resolve_model`: the HF backend, vLLM and Ray actors alike)."""

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


def resolve_model(name: str | Path) -> Path:
    """The local folder holding the model `name`: `name` itself when it is a folder, else the snapshot of the
    Hugging Face id `name` from the local hub cache, or downloaded into it once (`huggingface_hub`). Raises
    `ConfigError` in one line naming the id when it is neither cached nor downloadable (no network, no such
    repository, gated) or is neither a folder nor an id."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    check_model_reference(str(name), "model")
    from huggingface_hub import snapshot_download
    from huggingface_hub.constants import HF_HUB_CACHE
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return Path(snapshot_download(str(name), local_files_only=True))
    except OSError:
        pass  # not cached yet: download it
    try:
        return Path(snapshot_download(str(name)))
    except (OSError, HfHubHTTPError) as error:
        reason = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise ConfigError(
            f"model {str(name)!r}: no such folder here ({path.resolve()}), and no such model in the local Hugging "
            f"Face cache ({HF_HUB_CACHE}), which could not fetch it ({reason}); pass an existing folder, or "
            f"download it where the hub is reachable (huggingface-cli download {name}); the built-in 'tiny', "
            "'qwen3-test' and 'smollm2' need no download"
        ) from error
