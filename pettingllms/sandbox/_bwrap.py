"""Build the bubblewrap command line that starts one fork server (see ``_server.py``).

Contract of the sandbox it describes: new network, pid, ipc, uts and cgroup namespaces; empty
environment plus a few fixed variables; read-only binds of the system dirs the interpreter needs
(``/usr``, the ``/bin``, ``/lib*`` links or dirs, ``/etc/ld.so.cache``, ``/etc/alternatives``) and of
``sys.base_prefix`` / ``sys.prefix`` only (no home, no project dir, no rest of ``/etc``); fresh
``/proc``, minimal ``/dev``, and a private size-capped tmpfs ``/tmp`` (mode 0755, mounted before the
prefix binds so a venv that lives under ``/tmp`` stays visible).

As root, bwrap creates no user namespace; the server keeps only the capabilities it needs to
manage runs (``_ROOT_CAPS``) and drops every run to an unprivileged uid.  As a normal user, bwrap
uses an unprivileged user namespace with further user namespaces disabled, and runs stay the user.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

TMP_BYTES = 256 << 20
"""Size cap of the sandbox's /tmp (all work dirs of one server together)."""

_ROOT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_KILL", "CAP_DAC_OVERRIDE")
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


def _prefix_binds() -> list[str]:
    """Interpreter prefixes to bind, outermost first, skipping ones already inside another bind."""
    chosen: list[str] = []
    for prefix in sorted({os.path.normpath(sys.base_prefix), os.path.normpath(sys.prefix)}, key=len):
        if not any(Path(prefix).is_relative_to(done) for done in ["/usr", *chosen]):
            chosen.append(prefix)
    return chosen


def tmp_keep(binds: list[str]) -> list[str]:
    """Top-level names under /tmp that lead to binds (the server must not wipe them)."""
    return sorted({Path(b).relative_to("/tmp").parts[0] for b in binds if Path(b).is_relative_to("/tmp")})


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
        argv += ["--unshare-user", "--disable-userns"]
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
    argv += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "0755",
        "--size",
        str(TMP_BYTES),
        "--tmpfs",
        "/tmp",
    ]
    binds = _prefix_binds()
    made = {"/", "/tmp"}
    for prefix in binds:
        for parent in reversed(Path(prefix).parents):  # bwrap would create missing parents as 0700
            if str(parent) not in made:
                made.add(str(parent))
                argv += ["--perms", "0755", "--dir", str(parent)]
        argv += ["--ro-bind", prefix, prefix]
    for key, value in _ENV.items():
        argv += ["--setenv", key, value]
    source = (Path(__file__).parent / "_server.py").read_text(encoding="utf-8")
    config = {
        "uid": uid,
        "preload": list(preload),
        "keep": tmp_keep(binds),
        "host_pid_namespace": os.readlink("/proc/self/ns/pid"),
    }
    return argv + ["--chdir", "/tmp", sys.executable, "-I", "-c", source, json.dumps(config)]
