"""File manifests: the sha256 and size of every file in a folder, written last and verified on load.

`write(folder)` hashes every file under `folder` (flushing each to disk) and writes `manifest.json` beside them;
`problem(folder)` re-hashes and returns what is wrong, naming the file, or None when the folder is intact: a folder
is intact when it holds exactly the files its manifest promised, byte for byte. What is wrong: the manifest missing,
unreadable or naming a path outside the folder (absolute, or with a `..` part); a listed file missing, or of
another size or sha256; a file the manifest does not list (weights beside a manifest that lists only `state.json`
are not vouched for); a link anywhere in the folder, or the folder itself a link (a link can lead outside it).

This detects what crashes and disks do (truncated, half-written or missing files, an empty folder); it is not a
signature: someone who edits a file and its manifest entry is not detected.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

MANIFEST = "manifest.json"
FORMAT = "pettingllms-manifest/1"
_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """The hex sha256 of the file at `path`, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _files(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and p.relative_to(folder).as_posix() != MANIFEST
    )


def write(folder: Path) -> dict[str, dict[str, int | str]]:
    """Flush every file under `folder` to disk, then write `folder/manifest.json` (flushed too); return its
    entries (relative path -> {"sha256", "bytes"})."""
    entries: dict[str, dict[str, int | str]] = {}
    for path in _files(folder):
        with path.open("rb") as handle:
            os.fsync(handle.fileno())
        entries[path.relative_to(folder).as_posix()] = {
            "sha256": sha256_file(path),
            "bytes": path.stat().st_size,
        }
    with (folder / MANIFEST).open("w") as handle:
        json.dump({"format": FORMAT, "files": entries}, handle, indent=1, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    return entries


def read(folder: Path) -> dict[str, dict[str, int | str]]:
    """The entries of `folder/manifest.json`; raises ValueError (with the reason) when it is missing or malformed."""
    path = folder / MANIFEST
    if not path.is_file():
        raise ValueError(f"{path} is missing (written before manifests existed, or cut short)")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON ({error})") from error
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        raise ValueError(f"{path} is not a {FORMAT} manifest")
    return data["files"]


def problem(folder: Path) -> str | None:
    """What is wrong with `folder` against its manifest (naming the file), or None when it is intact."""
    if folder.is_symlink():
        return f"{folder} is a link (a checkpoint must be a folder of its own)"
    try:
        entries = read(folder)
    except ValueError as error:
        return str(error)
    if not entries:
        return f"{folder / MANIFEST} lists no files"
    outside = [name for name in entries if not _inside(name)]
    if outside:
        return f"{folder / MANIFEST} names {outside[0]!r}, not a path inside the folder"
    links = sorted(p for p in folder.rglob("*") if p.is_symlink())
    if links:
        return f"{links[0]} is a link (a checkpoint holds its own files)"
    unlisted = [p for p in _files(folder) if p.relative_to(folder).as_posix() not in entries]
    if unlisted:
        return f"{unlisted[0]} is not in the manifest (a file the checkpoint did not write)"
    for name, entry in sorted(entries.items()):
        path = folder / name
        if not path.is_file():
            return f"{path} is missing"
        size = path.stat().st_size
        if size != entry.get("bytes"):
            return f"{path} has {size} bytes, the manifest says {entry.get('bytes')} (truncated or changed)"
        if sha256_file(path) != entry.get("sha256"):
            return f"{path} does not match its sha256 in the manifest (corrupt or changed)"
    return None


def _inside(name: str) -> bool:
    """Whether a manifest entry names a file inside the folder: relative, no `..`, no empty or `.` parts."""
    parts = name.split("/")
    return (
        bool(name)
        and not name.startswith("/")
        and "\\" not in name
        and all(p not in ("", ".", "..") for p in parts)
    )
