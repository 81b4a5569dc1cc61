"""A run folder (`output_dir`) belongs to one run: a lock with the owner's pid, and no old run's files mixed in.

`RunLock.acquire(folder)` creates `folder/run.lock` (atomically, holding the pid and host). A lock of a live
process refuses with `RunFolderError`; a lock of a process that no longer exists (on this host) is taken over
with a message; a lock of another host cannot be checked and refuses (delete it if that run is over).
`release()` removes the lock if it is still ours.

`prepare(folder, resume=..., overwrite=...)`, called with the lock held, decides what an old run's files mean:
- a `checkpoints/step_N.tmp` folder is a checkpoint whose writing was killed: removed, with a message;
- a folder holding an old run (`RunLayout.RUN_FILES`: checkpoints, metrics, rollout dumps) refuses a fresh run unless
  `overwrite` (its run files are deleted, nothing else in the folder) or `resume`.

`changed_settings(saved, current)` names the settings of a resumed run that differ from the saved ones, except
those in `FREE_ON_RESUME` (how long to run, how often to save, how many env workers, what to log: none of them
changes a step's result).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pettingllms.core.errors import PettingLLMsError
from pettingllms.runs.layout import RunLayout

FREE_ON_RESUME = frozenset(
    {
        "output_dir",
        "resume",
        "resume_with_changes",
        "overwrite_output_dir",
        "max_steps",
        "max_completions",
        "save_steps",
        "save_strategy",
        "save_total_limit",
        "env_workers",
        "ray_address",
        "ray_placement_timeout",
        "ray_recover_s",
        "dump_rollouts",
        "report_to",
        "logging_steps",
        "logging_strategy",
        "logging_first_step",
        "log_level",
        "log_level_replica",
        "disable_tqdm",
        "run_name",
        "project",
    }
)
"""Settings a resumed run may change without `resume_with_changes` (they do not change any step's result)."""


class RunFolderError(PettingLLMsError):
    """The run folder is in use by another run, or holds an old run this one may not continue or replace."""


@dataclasses.dataclass
class RunLock:
    """The lock of one run on its folder (see the module docstring)."""

    path: Path
    token: str

    @classmethod
    def acquire(cls, folder: Path, log: Callable[[str], None] = print) -> RunLock:
        """Lock `folder` for this process, taking over a lock whose process is gone; raise `RunFolderError`
        when another live run (or one this host cannot check) holds it."""
        path = RunLayout(folder).lock
        token = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "id": os.urandom(8).hex()})
        for _ in range(2):  # a second try after taking over a stale lock
            try:
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                _take_over_if_stale(path, log)
                continue
            with os.fdopen(descriptor, "w") as handle:
                handle.write(token)
            return cls(path, token)
        raise RunFolderError(
            f"{path}: another run took the lock of {folder} at the same time; wait for it to end"
        )

    def release(self) -> None:
        """Remove the lock if it still holds this run's token (idempotent)."""
        try:
            if self.path.read_text() == self.token:
                self.path.unlink()
        except FileNotFoundError:
            return


def _take_over_if_stale(path: Path, log: Callable[[str], None]) -> None:
    """Remove the lock at `path` if its process is gone; raise `RunFolderError` if it may still run."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return  # released meanwhile
    try:
        owner = json.loads(text)
        pid, host = int(owner["pid"]), str(owner["host"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        log(f"{path}: unreadable lock ({text[:80]!r}), left by a run killed while taking it; taking it over")
        path.unlink(missing_ok=True)
        return
    if host != socket.gethostname():
        raise RunFolderError(
            f"{path.parent} is locked by process {pid} on host {host!r} ({path}); if no run uses this folder any "
            f"more, delete {path}"
        )
    if _alive(pid):
        what = "this process (an earlier trainer not closed?)" if pid == os.getpid() else f"process {pid}"
        raise RunFolderError(
            f"{path.parent} is in use by another run: {what} holds {path}; wait for it to end, or give this run "
            "another --output_dir"
        )
    log(f"{path}: the run of process {pid} that held it is gone (killed?); taking the folder over")
    path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def prepare(folder: Path, *, resume: bool, overwrite: bool, log: Callable[[str], None] = print) -> None:
    """Make `folder` ready for a run (see the module docstring); the caller holds its lock."""
    run = RunLayout(folder)
    for staging in run.unfinished_checkpoints():
        log(
            f"{staging}: a checkpoint that was being written when the run was killed; removing it (the run "
            "continues from the newest intact checkpoint, if any)"
        )
        shutil.rmtree(staging)
    old = [name for name in run.OLD_RUN_MARKERS if _holds_something(folder / name)]
    if overwrite:
        removed = [name for name in run.RUN_FILES if (folder / name).exists()]
        for name in removed:
            target = folder / name
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink()
        if removed:
            log(f"--overwrite_output_dir: removed the old run's {', '.join(removed)} from {folder}")
        return
    if old and not resume:
        raise RunFolderError(
            f"{folder} holds an earlier run ({', '.join(old)}); continue it with --resume true, start over with "
            "--overwrite_output_dir true (deletes that run's files), or choose another --output_dir"
        )


def _holds_something(path: Path) -> bool:
    return path.is_file() or (path.is_dir() and any(path.iterdir()))


def changed_settings(saved: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """{name: (saved, current)} for every setting both name whose value differs, except `FREE_ON_RESUME`.

    `current` is compared as JSON would store it (tuples as lists); settings only one side knows (a newer or
    older pettingllms) are not compared."""
    current = json.loads(json.dumps(dict(current), default=str))
    return {
        name: (saved[name], current[name])
        for name in sorted(saved.keys() & current.keys())
        if name not in FREE_ON_RESUME and saved[name] != current[name]
    }
