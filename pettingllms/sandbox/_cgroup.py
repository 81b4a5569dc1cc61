"""A memory cgroup per worker (root only, where the host's cgroup tree is writable), bounding each run as a whole.

Everything a run's processes charge - anonymous memory, tmpfs and page cache, and kernel memory such as pipe
buffers, page tables and dentries (socket buffers are not charged) - is charged to its worker's cgroup, which
holds one run at a time.  The host measures the idle worker's usage once, when its server is ready (the
*baseline*), and before each run sets the limit to that baseline plus the run's budget, so a run can use at
most that budget in total, whatever it forks; past it the kernel's OOM killer ends a process of the run
(programs raise their own ``oom_score_adj`` so they go before the server), and the host reports ``"memory"``.
What runs leave charged to the cgroup (dentries of paths they looked up, page cache of files they read: the
kernel keeps both until it needs the memory) never raises the limit; once the idle usage has drifted past a
bound (``server_pool.DRIFT_BYTES``) the host kills the worker and recreates its cgroup (``recreate``), which
starts with nothing charged.

Supported: cgroup v1 with the ``memory`` controller mounted at ``/sys/fs/cgroup/memory``, and cgroup v2 where
the process's own cgroup already delegates ``memory`` to its children.  ``MemoryCgroup.create`` returns None
elsewhere (not root, read-only tree, no delegation); runs are then bounded per process only (see the package
docstring).  A cgroup is named after its worker's run uid, which is leased host-wide, so a stale one left by a
killed process is simply reused.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

_V1_ROOT = Path("/sys/fs/cgroup/memory")
_V2_ROOT = Path("/sys/fs/cgroup")


def _own_path(controller: str) -> str | None:
    """This process's cgroup path for ``controller`` (``""``: the v2 unified hierarchy), from /proc/self/cgroup."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path.lstrip("/")
    return None


class MemoryCgroup:
    """One worker's memory cgroup; the server is started inside it through ``wrap``."""

    def __init__(self, path: Path, v1: bool):
        self.path = path
        self._usage, self._limit, self._events = (
            ("memory.usage_in_bytes", "memory.limit_in_bytes", "memory.oom_control")
            if v1
            else ("memory.current", "memory.max", "memory.events")
        )

    @classmethod
    def create(cls, name: str) -> MemoryCgroup | None:
        """The cgroup ``name`` under this process's own memory cgroup, or None where that is not possible."""
        if os.geteuid() != 0:
            return None
        v1_path = _own_path("memory")
        if v1_path is not None and (_V1_ROOT / "memory.limit_in_bytes").exists():
            parent, v1 = _V1_ROOT / v1_path, True
        elif (v2_path := _own_path("")) is not None and "memory" in _read(
            _V2_ROOT / v2_path / "cgroup.subtree_control"
        ):
            parent, v1 = _V2_ROOT / v2_path, False
        else:
            return None
        try:
            (parent / name).mkdir(exist_ok=True)
        except OSError:
            return None
        return cls(parent / name, v1)

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into this cgroup (so every descendant starts in it)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *argv]

    def usage(self) -> int:
        """Bytes charged to the cgroup now."""
        return int((self.path / self._usage).read_text())

    def set_limit(self, limit_bytes: int) -> None:
        """Cap the bytes charged to the cgroup at ``limit_bytes`` (the caller keeps it above the current usage:
        below it, cgroup v1 refuses the write once reclaim fails, and v2 OOM-kills)."""
        (self.path / self._limit).write_text(str(limit_bytes))

    def oom_kills(self) -> int:
        """How many processes the OOM killer has ended in this cgroup so far."""
        for line in _read(self.path / self._events).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def recreate(self) -> None:
        """Kill every process in the cgroup, delete it and make it anew: empty, nothing charged, no limit, no OOM
        kills counted.  RuntimeError when processes stay in it for a second (the old cgroup is then left)."""
        pids: list[str] = []
        for _ in range(100):
            pids = _read(self.path / "cgroup.procs").split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):  # it may have exited since the read
                    os.kill(int(pid), signal.SIGKILL)
            if not pids and _rmdir(self.path):
                self.path.mkdir()
                return
            time.sleep(0.01)
        raise RuntimeError(
            f"cannot recreate the sandbox memory cgroup {self.path}: processes {pids} stay in it after SIGKILL; "
            "end them (or close the Sandbox) and retry"
        )

    def remove(self) -> bool:
        """Delete the cgroup once its processes are gone (they may take a moment to exit); leave it if not.
        True when it is gone."""
        for _ in range(50):
            if _rmdir(self.path):
                return True
            time.sleep(0.02)
        return False


def _rmdir(path: Path) -> bool:
    """Delete the empty dir ``path`` (True also when it is already gone); False while the kernel refuses, as it
    does for a cgroup that still has processes."""
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _read(path: Path) -> str:
    """The file's text, or "" where it does not exist or cannot be read (an optional cgroup file)."""
    try:
        return path.read_text()
    except OSError:
        return ""
