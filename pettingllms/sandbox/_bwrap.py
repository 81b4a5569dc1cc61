"""Build the bubblewrap command line that starts one fork server (see ``_server.py``).

Contract of the sandbox it describes: new network, pid, ipc, uts and cgroup namespaces; empty environment
plus a few fixed variables; read-only binds of the system dirs the interpreter needs (``/usr``, the ``/bin``,
``/lib*`` links or dirs, ``/etc/ld.so.cache``, ``/etc/alternatives``) and of what ``_visible`` selects (the
interpreter, the stdlib, the preloaded packages and their dependencies; no home, no project dir, no rest of
``/etc``, no other package of the venv); fresh ``/proc``, minimal ``/dev``, a small read-only-for-runs
tmpfs ``/tmp`` mounted before the binds (so binds under ``/tmp`` stay visible).

As root, bwrap creates no user namespace; the server keeps only the capabilities it needs to build each run
(``_ROOT_CAPS``: namespaces and mounts, switching uid) and every run drops to an unprivileged uid with none.
As a normal user, bwrap uses an unprivileged user namespace (further user namespaces disabled) in which the
server holds capabilities, and every run drops all of them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from pettingllms.sandbox import _seccomp, _visible

SCRATCH_BYTES = 128 << 20
"""Size cap of each run's private tmpfs work dir (its cwd, HOME and TMPDIR)."""
SHM_BYTES = 16 << 20
"""Size cap of each run's private ``/dev/shm``."""

_ROOT_CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID")
_SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/alternatives")
_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def find_bwrap() -> str | None:
    """Path of the ``bwrap`` executable, or None when it is not installed."""
    return shutil.which("bwrap")


def _scratch(dests: list[str]) -> str:
    """Mount point of each run's tmpfs: ``/tmp`` unless a bind lives under it (it would be hidden)."""
    return "/tmp/.run" if any(Path(d).is_relative_to("/tmp") for d in dests) else "/tmp"


def _mount_args(pairs: tuple[tuple[str, str], ...], masks: list[str]) -> list[str]:
    """Binds and masks in path order, with every missing parent created 0755 (bwrap would make it 0700)."""
    entries = sorted([(dest, src) for src, dest in pairs] + [(mask, None) for mask in masks])
    bound = {dest: src is not None for dest, src in entries}
    made = {"/", "/tmp", "/usr"}
    argv: list[str] = []
    for dest, src in entries:
        for parent in map(str, reversed(Path(dest).parents)):
            covering = max((d for d in bound if Path(parent).is_relative_to(d)), key=len, default=None)
            if parent in made or (covering is not None and bound[covering]):
                continue
            made.add(parent)
            argv += ["--perms", "0755", "--dir", parent]
        made.add(dest)
        argv += ["--ro-bind", src, dest] if src is not None else ["--perms", "0755", "--tmpfs", dest]
    return argv


def server_argv(bwrap: str, uid: int, preload: tuple[str, ...]) -> list[str]:
    """Full argv for one fork server whose runs switch to ``uid`` (``-1``: stay the current user)."""
    argv = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    if os.geteuid() == 0:
        argv += ["--cap-drop", "ALL"]
        for cap in _ROOT_CAPS:
            argv += ["--cap-add", cap]
    else:
        argv += ["--unshare-user", "--disable-userns", "--cap-add", "ALL"]
    argv += ["--ro-bind", "/usr", "/usr"]
    for name in _SYSTEM_DIRS:
        path = "/" + name
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for path in _SYSTEM_FILES:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "0755", "--size", str(1 << 20), "--tmpfs", "/tmp"]
    pairs = _visible.binds(tuple(preload))
    scratch = _scratch([dest for _, dest in pairs])
    if scratch != "/tmp":
        argv += ["--perms", "0755", "--dir", scratch]
    argv += _mount_args(pairs, _visible.masks())
    for key, value in _ENV.items():
        argv += ["--setenv", key, value]
    source = (Path(__file__).parent / "_server.py").read_text(encoding="utf-8")
    seccomp = _seccomp.program()
    config = {
        "uid": uid,
        "preload": list(preload),
        "scratch": scratch,
        "scratch_bytes": SCRATCH_BYTES,
        "shm_bytes": SHM_BYTES,
        "seccomp": seccomp.hex() if seccomp is not None else None,
        "host_pid_namespace": os.readlink("/proc/self/ns/pid"),
        "host_user_namespace": os.readlink("/proc/self/ns/user"),
    }
    return argv + ["--chdir", "/", sys.executable, "-I", "-c", source, json.dumps(config)]
