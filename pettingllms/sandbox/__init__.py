"""Run model-written Python in a real sandbox: bubblewrap + a pre-forked interpreter per worker.

Each worker is one long-lived ``bwrap ... python -I -c <server>`` process that has ``preload``
imported once and forks a fresh child per program, so a run costs a fork rather than a new sandbox.

Covered, per run:
  * filesystem: the host is read-only and mostly invisible: only ``/usr``, the ``/bin`` and ``/lib*``
    links, ``/etc/ld.so.cache`` and the interpreter's prefixes (``sys.base_prefix``, ``sys.prefix``)
    are bound; home, the project dir and the rest of ``/etc`` are absent.  ``/tmp`` is a private
    tmpfs (256 MiB); each run gets a fresh empty work dir (its cwd and HOME), and after the run
    everything written under ``/tmp`` and ``/dev/shm`` is deleted.
  * network: a new, empty network namespace (loopback only, not the host's).
  * processes: a new pid namespace per worker; after every run every process the run started
    (double-forked, setsid'ed or not) is SIGKILLed and reaped.  RLIMIT_NPROC caps processes.
  * environment: empty apart from PATH, HOME, TMPDIR, LANG and the BLAS thread variables.
  * identity: as root, each run drops to an unprivileged uid (61000 + k, one per worker, all
    supplementary groups dropped) with no capabilities and ``no_new_privs``, so it can neither
    signal nor ptrace the server; as a normal user runs keep that user's uid inside an
    unprivileged user namespace, and RLIMIT_NPROC then counts all of that user's processes.
  * limits: wall-clock ``timeout`` (and RLIMIT_CPU as a backstop), RLIMIT_AS = ``memory_mb`` per
    process (including ~100 MiB of the preloaded interpreter), RLIMIT_FSIZE 64 MiB, no core
    files, and ``max_output_bytes`` of stdout+stderr together.

Not covered: no seccomp filter, so the whole syscall surface of the kernel is reachable (and a
run may create user namespaces if the host allows them when bwrap ran as root); the timeout is
wall-clock only (CPU time beyond it is cut by the kill, not accounted separately); ``/usr`` and
the interpreter prefixes are readable, as is kernel information in ``/proc`` and ``/sys``-like
views; SysV IPC objects live as long as their worker; memory is limited per process, not per run.

Statuses: "ok" (exit 0), "error" (nonzero exit or uncaught exception, traceback on stderr),
"timeout", "memory" (MemoryError / address-space limit), "output_limit" (output truncated to the
cap), "killed" (a signal other than our timeout), "crashed" (the server itself died or stopped
answering; it is restarted for the next run).
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Sequence

from pettingllms.sandbox.pool import Program, Sandbox, SandboxResult, SandboxUnavailable

__all__ = [
    "Program",
    "Sandbox",
    "SandboxResult",
    "SandboxUnavailable",
    "default_sandbox",
    "run_batch",
    "run_python",
]

_default: Sandbox | None = None
_default_lock = threading.Lock()


def default_sandbox() -> Sandbox:
    """The process-wide shared Sandbox (one worker per CPU, at most 4), created on first use and
    closed at interpreter exit; raises SandboxUnavailable when bwrap is unusable."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Sandbox(workers=max(1, min(4, os.cpu_count() or 1)))
            atexit.register(_default.close)
        return _default


def run_python(code: str, *, stdin: str = "", timeout: float = 5.0, memory_mb: int = 1024) -> SandboxResult:
    """Run one program in the default sandbox (see ``Sandbox.run``)."""
    return default_sandbox().run(code, stdin=stdin, timeout=timeout, memory_mb=memory_mb)


def run_batch(
    programs: Sequence[str | Program],
    *,
    workers: int | None = None,
    timeout: float | None = None,
    memory_mb: int | None = None,
) -> list[SandboxResult]:
    """Run ``programs`` in parallel, results in input order.  ``workers=None`` uses the default
    sandbox; otherwise a temporary Sandbox with that many workers is started and closed."""
    if workers is None:
        return default_sandbox().run_batch(programs, timeout=timeout, memory_mb=memory_mb)
    with Sandbox(workers=workers) as sandbox:
        return sandbox.run_batch(programs, timeout=timeout, memory_mb=memory_mb)
