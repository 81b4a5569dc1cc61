"""Host side of the sandbox: a thread-safe pool of pre-started bwrap fork servers.

Each worker slot owns one server process (``_bwrap.server_argv``) and, when the host runs as root, a run uid
leased host-wide (``_uids``: unique across every process on this host) so that RLIMIT_NPROC bounds each
worker separately, and where it can a memory cgroup (``_cgroup``) whose limit is the idle worker's usage,
measured once when its server is ready, plus the run's budget (a worker whose idle usage drifts
``DRIFT_BYTES`` past that baseline is restarted in a recreated cgroup).  A run is one length-prefixed JSON
request/reply on the server's stdin/stdout; every request carries a fresh random id that its reply must echo.
A server that closes its pipe (died), does not reply within ``timeout + HOST_MARGIN_S``, or answers with another
id is killed, that run is reported as ``"crashed"`` and a fresh server is started; any other exception while a request is in flight (e.g.
KeyboardInterrupt) also kills and replaces the server before it propagates, so a reply can never be read as
the answer to a later request.  Limits are validated on the host before anything is sent.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import secrets
import select
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from pettingllms.sandbox import _bwrap, _cgroup, _uids
from pettingllms.sandbox.fair_slots import FairSlots

HOST_MARGIN_S = 5.0
"""Extra seconds the host waits for a reply beyond the run's own timeout."""
START_TIMEOUT_S = 60.0
"""Seconds a new server may take to import its preload modules and report ready."""
STATUSES = ("ok", "error", "timeout", "memory", "output_limit", "killed", "crashed")
MAX_TIMEOUT_S = 3600.0
"""Largest ``timeout`` a run may ask for (seconds)."""
MIN_MEMORY_MB, MAX_MEMORY_MB = 16, 1 << 20
"""Smallest and largest ``memory_mb`` a run may ask for."""
DRIFT_BYTES = 32 << 20
"""How far a worker's idle memory usage may rise above its baseline (what earlier runs left charged to its
cgroup: dentries, page cache) before the worker is restarted in a recreated cgroup.  Benign runs stay within
5 MiB (HumanEval programs, code-v0 judges, 1 MB outputs); far below the smallest budget (``MIN_MEMORY_MB`` plus
the tmpfs caps, 160 MiB), so a limit is never set below the usage."""

# bwrap --die-with-parent ties a server to the *thread* that spawned it, so every server is spawned
# from this one long-lived thread rather than from short-lived pool threads.
_LAUNCHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-launcher")


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot start a sandbox on this machine."""


@dataclass(frozen=True)
class SandboxResult:
    """Outcome of one program; ``status`` is one of ``STATUSES`` (see the package docstring)."""

    status: str
    stdout: str
    stderr: str
    returncode: int | None
    duration_s: float
    queued_s: float = 0.0
    """Seconds the program waited for a free worker before it started (``Sandbox.run``)."""

    @property
    def ok(self) -> bool:
        """True exactly when the program exited cleanly with status 0."""
        return self.status == "ok"


@dataclass(frozen=True)
class Program:
    """One program for ``run_batch``; ``None`` limits fall back to the batch's / sandbox's defaults."""

    code: str
    stdin: str = ""
    timeout: float | None = None
    memory_mb: int | None = None


def check_limits(timeout: object, memory_mb: object) -> tuple[float, int]:
    """``(timeout, memory_mb)`` as float and int when both are valid, else ValueError: a finite real
    ``0 < timeout <= MAX_TIMEOUT_S`` and an integral ``MIN_MEMORY_MB <= memory_mb <= MAX_MEMORY_MB`` (bools are
    neither)."""
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise ValueError(f"timeout must be a number of seconds, got {timeout!r}")
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT_S):
        raise ValueError(f"timeout must be finite, > 0 and <= {MAX_TIMEOUT_S:g} s, got {timeout!r}")
    if isinstance(memory_mb, bool) or not isinstance(memory_mb, numbers.Integral):
        raise ValueError(f"memory_mb must be an integer, got {memory_mb!r}")
    if not MIN_MEMORY_MB <= memory_mb <= MAX_MEMORY_MB:
        raise ValueError(f"memory_mb must be in [{MIN_MEMORY_MB}, {MAX_MEMORY_MB}], got {memory_mb!r}")
    return float(timeout), int(memory_mb)


class _StaleReply(Exception):
    """The server answered with another request's id."""


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    """Read exactly ``n`` bytes; TimeoutError past ``deadline``, EOFError if the pipe closes."""
    buf = bytearray()
    while len(buf) < n:
        if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise TimeoutError
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


class _Server:
    """One running fork server; ``request`` returns its reply or raises (EOFError: it died, TimeoutError: no reply
    in time, OSError: broken pipe, _StaleReply: a reply to another request)."""

    def __init__(self, argv: list[str]):
        self._log = tempfile.TemporaryFile()
        self.proc = _LAUNCHER.submit(
            subprocess.Popen, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, bufsize=0
        ).result()
        self.ready = False

    def _read_frame(self, deadline: float) -> dict:
        fd = self.proc.stdout.fileno()
        size = struct.unpack(">I", _read_exact(fd, 4, deadline))[0]
        return json.loads(_read_exact(fd, size, deadline))

    def wait_ready(self) -> None:
        """Block until the server reports ready; SandboxUnavailable (server killed) if it never does."""
        try:
            self._read_frame(time.monotonic() + START_TIMEOUT_S)
        except (EOFError, TimeoutError) as exc:
            self.kill()
            raise SandboxUnavailable(
                f"sandbox server failed to start ({type(exc).__name__}): "
                f"{self.log_tail()!r}; is bubblewrap usable? "
                "(apt-get install bubblewrap)"
            ) from exc
        self.ready = True

    def send(self, req: dict) -> None:
        """Write one request frame (starting the server's wait for readiness first if needed)."""
        if not self.ready:
            self.wait_ready()
        data = json.dumps(req).encode()
        self.proc.stdin.write(struct.pack(">I", len(data)) + data)

    def request(self, req: dict, deadline: float) -> dict:
        """Send ``req`` and return its reply without the id; _StaleReply when the reply has another id."""
        self.send(req)
        reply = self._read_frame(deadline)
        if reply.pop("id", None) != req["id"]:
            raise _StaleReply
        return reply

    def log_tail(self, limit: int = 2000) -> str:
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-limit:]

    def kill(self, grace: float = 0.0) -> None:
        """Stop the server: close its stdin, wait ``grace`` seconds for a clean exit, then SIGKILL."""
        self.proc.stdin.close()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self._log.close()


class _Slot:
    """A worker position in the pool: a run uid (``-1``: not root), its memory cgroup (None where there is none),
    the idle worker's usage in it (``baseline``, measured once, when the first server in that cgroup is ready)
    and the server currently serving it."""

    def __init__(self, bwrap: str, uid: int, preload: tuple[str, ...]):
        self.uid = uid
        self.log = ""
        self.argv = _bwrap.server_argv(bwrap, uid, preload)
        self.cgroup = _cgroup.MemoryCgroup.create(f"pettingllms-sandbox-{uid}") if uid >= 0 else None
        if self.cgroup is not None:
            self.argv = self.cgroup.wrap(self.argv)
        self.baseline: int | None = None
        self.server: _Server | None = _Server(self.argv)

    def wait_ready(self) -> None:
        """Block until the server is ready (see ``_Server.wait_ready``); the first time in this cgroup, measure
        the idle worker's usage: the fixed baseline of every later run's limit."""
        if not self.server.ready:
            self.server.wait_ready()
        if self.cgroup is not None and self.baseline is None:
            self.baseline = self.cgroup.usage()

    def run(self, req: dict) -> SandboxResult:
        """One request; a dead or silent server yields "crashed" and is replaced by a fresh one."""
        if self.server is None:
            self.server = _Server(self.argv)
        start = time.monotonic()
        try:
            oom_kills = self._limit_memory(req["memory_mb"])
            reply = self.server.request(
                {"id": secrets.token_hex(8), **req}, start + req["timeout"] + HOST_MARGIN_S
            )
        except SandboxUnavailable:
            self.server = None  # the replacement could not start; try again on the next request
            raise
        except (EOFError, TimeoutError, OSError, _StaleReply) as exc:
            why = {TimeoutError: "did not answer in time", _StaleReply: "answered another request"}
            note = f"sandbox server {why.get(type(exc), 'died')} ({type(exc).__name__}); restarted\n"
            self._restart()
            return SandboxResult("crashed", "", note + self.log, None, time.monotonic() - start)
        except BaseException:
            self._restart()  # a reply may still be on its way: it must never answer a later request
            raise
        result = SandboxResult(**reply)
        if self.cgroup is not None and self.cgroup.oom_kills() > oom_kills:
            result = replace(result, status="memory")
        return result

    def _limit_memory(self, memory_mb: int) -> int:
        """Set the worker cgroup's limit for the next run to the baseline plus its budget, first recreating the
        worker when its idle usage has drifted more than ``DRIFT_BYTES`` past the baseline; returns the
        cgroup's OOM-kill count so far (0: no cgroup)."""
        if self.cgroup is None:
            return 0
        self.wait_ready()  # a restarted server's usage is compared once it is idle
        if self.cgroup.usage() > self.baseline + DRIFT_BYTES:
            self._recreate()
        self.cgroup.set_limit(self.baseline + (memory_mb << 20) + _bwrap.SCRATCH_BYTES + _bwrap.SHM_BYTES)
        return self.cgroup.oom_kills()

    def _recreate(self) -> None:
        """A fresh server in a fresh cgroup (nothing charged) and a new baseline; the old baseline stays when the
        cgroup cannot be recreated (RuntimeError), so no limit ever rises."""
        self.server.kill()
        self.server = None
        self.cgroup.recreate()
        self.baseline = None
        self.server = _Server(self.argv)
        self.wait_ready()

    def _restart(self) -> None:
        """Replace the server (keeping its log tail for the "crashed" result); the cgroup and baseline stay."""
        if self.server is not None:
            self.log = self.server.log_tail()
            self.server.kill()
        self.server = _Server(self.argv)


class Lease:
    """Programs run one after another on a `Sandbox` as one owner's (``Sandbox.lease``): the first waits for a
    worker in turn, each next one gives the worker back and waits in turn again as one step, so the owner keeps it
    while it is the one to serve; leaving the context gives it back. Not for use by several threads at once."""

    def __init__(self, sandbox: Sandbox, owner: Hashable):
        self._sandbox, self._owner, self._slot = sandbox, owner, None

    def run(self, program: Program) -> SandboxResult:
        """Run ``program`` (limits checked first); its result's ``queued_s`` is how long it waited for a worker."""
        request = self._sandbox._request(program)
        free = self._sandbox._free
        if self._slot is None:
            self._slot, waited = free.acquire(self._owner)
        else:
            self._slot, waited = free.reacquire(self._slot)
        return replace(self._slot.run(request), queued_s=waited)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._slot is not None:
            self._sandbox._free.release(self._slot)
            self._slot = None


class Sandbox:
    """A pool of ``workers`` pre-started sandbox servers; thread-safe; use as a context manager.

    Every run gets a fresh interpreter state (forked from a server that has ``preload`` imported),
    a private empty work dir, ``timeout`` seconds of wall time, ``memory_mb`` MiB of address space
    per process (RLIMIT_AS, which includes the ~100 MiB of the preloaded interpreter), at most
    ``max_processes`` processes per worker, and ``max_output_bytes`` of stdout+stderr together.
    Only ``preload`` and its dependencies are importable besides the stdlib (see ``_visible``).
    Raises SandboxUnavailable when bwrap is missing or a server cannot start, ValueError on invalid
    limits (see ``check_limits``).
    """

    def __init__(
        self,
        workers: int = 1,
        *,
        preload: tuple[str, ...] = ("numpy", "sympy"),
        default_timeout: float = 5.0,
        default_memory_mb: int = 1024,
        max_output_bytes: int = 1_000_000,
        max_processes: int = 16,
    ):
        if workers < 1 or max_output_bytes < 0 or max_processes < 1:
            raise ValueError("workers and max_processes must be positive, max_output_bytes not negative")
        check_limits(default_timeout, default_memory_mb)
        bwrap = _bwrap.find_bwrap()
        if bwrap is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
        self.workers = workers
        self.default_timeout = default_timeout
        self.default_memory_mb = default_memory_mb
        self.max_output_bytes = max_output_bytes
        self.max_processes = max_processes
        self._slots: list[_Slot] = []
        self._leases: list[_uids.UidLease] = []
        self._closed = False
        try:
            for _ in range(workers):
                uid = -1
                if os.geteuid() == 0:
                    self._leases.append(_uids.lease())
                    uid = self._leases[-1].uid
                self._slots.append(_Slot(bwrap, uid, tuple(preload)))
            for slot in self._slots:
                slot.wait_ready()
        except BaseException:
            self._shutdown()
            raise
        self._free = FairSlots(list(self._slots))

    def run(
        self,
        code: str,
        *,
        stdin: str = "",
        timeout: float | None = None,
        memory_mb: int | None = None,
        owner: Hashable | None = None,
    ) -> SandboxResult:
        """Run ``code`` as ``__main__`` with ``stdin`` on a free worker, handed to ``owner`` fairly among the
        owners waiting (``fair_slots``; None: the calling thread); the result's ``queued_s`` says how long it
        waited for one."""
        with self.lease(owner) as lease:
            return lease.run(Program(code, stdin, timeout, memory_mb))

    def lease(self, owner: Hashable | None = None) -> Lease:
        """A `Lease`: programs run one after another as ``owner``'s (None: the calling thread), keeping a worker
        between them while ``owner`` is the one to serve (``FairSlots.reacquire``); use as a context manager."""
        return Lease(self, threading.get_ident() if owner is None else owner)

    def _request(self, program: Program) -> dict:
        """The server request of ``program``, its limits checked (defaults filled in)."""
        if not isinstance(program.code, str) or not isinstance(program.stdin, str):
            raise TypeError("code and stdin must be str")
        timeout, memory_mb = check_limits(
            self.default_timeout if program.timeout is None else program.timeout,
            self.default_memory_mb if program.memory_mb is None else program.memory_mb,
        )
        return {
            "code": program.code,
            "stdin": program.stdin,
            "timeout": timeout,
            "memory_mb": memory_mb,
            "max_output": self.max_output_bytes,
            "max_processes": self.max_processes,
        }

    def run_batch(
        self,
        programs: Sequence[str | Program],
        *,
        timeout: float | None = None,
        memory_mb: int | None = None,
        owner: Hashable | None = None,
    ) -> list[SandboxResult]:
        """Run ``programs`` in parallel across the workers, each queued as ``owner``'s (None: the calling
        thread; see ``run``); results come back in input order."""
        owner = threading.get_ident() if owner is None else owner
        items = [p if isinstance(p, Program) else Program(p) for p in programs]

        def limits(p: Program) -> tuple[float, int]:
            return check_limits(
                next(x for x in (p.timeout, timeout, self.default_timeout) if x is not None),
                next(x for x in (p.memory_mb, memory_mb, self.default_memory_mb) if x is not None),
            )

        checked = [replace(p, timeout=t, memory_mb=m) for p, (t, m) in zip(items, map(limits, items))]
        results: list[SandboxResult | None] = [None] * len(
            checked
        )  # every limit is valid before any program runs
        indices, taking = iter(range(len(checked))), threading.Lock()

        def drain() -> None:  # one lease per thread: it keeps its worker while the owner is the one to serve
            with self.lease(owner) as lease:
                while True:
                    with taking:
                        index = next(indices, None)
                    if index is None:
                        return
                    results[index] = lease.run(checked[index])

        threads = min(self.workers, len(checked))
        if threads <= 1:
            drain()
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                for done in [pool.submit(drain) for _ in range(threads)]:
                    done.result()
        return results

    def close(self) -> None:
        """Wait for runs in progress, stop every server and give back the uids; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._free.close()
        self._shutdown()

    def _shutdown(self) -> None:
        for slot in self._slots:
            if slot.server is not None:
                slot.server.kill(grace=1.0)
            if slot.cgroup is not None:
                slot.cgroup.remove()
        for lease in self._leases:
            lease.release()
        self._slots, self._leases = [], []

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __deepcopy__(self, memo: dict) -> Sandbox:
        return self  # a shared resource: copying an env that holds a sandbox must not copy it

    def __reduce__(self):
        # pickled into another process (an env shipped to an EnvPool worker), it becomes that process's default
        # sandbox: worker processes and their pid namespaces cannot travel
        return (_default_sandbox_here, ())

    def __copy__(self) -> Sandbox:
        return self


def _default_sandbox_here() -> Sandbox:
    """The default sandbox of the process that unpickles a `Sandbox`."""
    from pettingllms.sandbox import default_sandbox

    return default_sandbox()
