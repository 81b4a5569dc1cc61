"""Fork server that runs *inside* one bwrap sandbox; this is the only place model text is executed.

The host passes this file's source with ``python -I -c SOURCE CONFIG_JSON`` (stdlib only, never imported on
the host).  CONFIG: ``host_pid_namespace`` (the host's ``/proc/self/ns/pid`` link: the server refuses to start in it),
``uid`` every run is switched to (``-1``: stay the current user, host not root),
``preload`` module names, ``keep`` names under /tmp that hold binds and must survive the wipe.  Protocol on the inherited fds 0 (requests) and 1 (replies): frames
of a 4-byte big-endian length followed by UTF-8 JSON.  The first reply is ``{"ready": true}`` once the
preload modules are imported; then every request ``{code, stdin, timeout, memory_mb, max_output,
max_processes}`` gets exactly one reply ``{status, stdout, stderr, returncode, duration_s}``.

Per run: fresh work dir ``/tmp/runN`` (0700, owned by the run uid), a forked child that calls setsid,
applies rlimits, drops to the run uid, redirects fds 0-2 and closes every other fd (so it cannot
reach the protocol pipes), then execs the code.  Afterwards the server sends SIGKILL to every
process of the pid namespace except bwrap's init and itself (``kill(-1)``), reaps them all (it is
a child subreaper, so orphans come back to it), and deletes the work dir.  Any internal error
ends the server; the host reports that run as ``"crashed"`` and starts a new server.
"""

import atexit
import builtins
import contextlib
import ctypes
import gc
import json
import math
import os
import resource
import select
import shutil
import signal
import struct
import sys
import threading
import time
import types

_MEMORY_TAG = b"M"  # written to fd 3 by the child when the program died of MemoryError
_SETUP_FAILED = 125


def _recv(fd):
    head = _read_exact(fd, 4)
    return None if head is None else json.loads(_read_exact(fd, struct.unpack(">I", head)[0]))


def _read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _send(fd, obj):
    data = json.dumps(obj).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _exit_code(exc):
    """Map SystemExit like the interpreter does: None -> 0, int -> int, anything else printed, 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def _execute(code):
    """Run ``code`` as ``__main__`` with ``python`` exit semantics; returns the exit status."""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    sys.argv = ["<program>"]
    try:
        try:
            exec(compile(code, "<program>", "exec"), main.__dict__)
            status = 0
        except SystemExit as exc:
            status = _exit_code(exc)
        except BaseException as exc:  # noqa: BLE001  (report any uncaught exception like `python` does)
            if isinstance(exc, MemoryError):
                os.write(3, _MEMORY_TAG)
            exc.__traceback__ = exc.__traceback__.tb_next  # hide this frame, like `python` hides its own
            sys.excepthook(type(exc), exc, exc.__traceback__)
            status = 1
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except MemoryError:
        os.write(3, _MEMORY_TAG)
        status = 1
    return status


def _child(req, workdir, uid, fds):
    """Forked child: isolate, limit, drop privileges, run the program; never returns."""
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(len(fds), os.sysconf("SC_OPEN_MAX"))
        mem = req["memory_mb"] << 20
        cpu = math.ceil(req["timeout"]) + 1
        limits = {
            resource.RLIMIT_AS: mem,
            resource.RLIMIT_DATA: mem,
            resource.RLIMIT_CORE: 0,
            resource.RLIMIT_CPU: cpu,
            resource.RLIMIT_FSIZE: 64 << 20,
            resource.RLIMIT_NOFILE: 256,
            resource.RLIMIT_NPROC: req["max_processes"],
            resource.RLIMIT_MSGQUEUE: 0,
        }
        for kind, value in limits.items():
            resource.setrlimit(kind, (value, value))
        if uid >= 0:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        os.chdir(workdir)
        os.environ.clear()
        os.environ.update(
            PATH="/usr/local/bin:/usr/bin:/bin",
            HOME=workdir,
            TMPDIR=workdir,
            LANG="C.UTF-8",
            OPENBLAS_NUM_THREADS="1",
            OMP_NUM_THREADS="1",
        )
        sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", closefd=False)
        sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = sys.__stderr__ = open(
            2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1
        )
    except BaseException as exc:  # noqa: BLE001  (the forked child must never return into the server)
        os.write(2, f"sandbox: child setup failed: {exc!r}\n".encode())
        os._exit(_SETUP_FAILED)
    os._exit(_execute(req["code"]))


def _kill_all():
    """SIGKILL every process of this pid namespace except init and us, then reap all children."""
    reaped = {}
    while True:
        with contextlib.suppress(ProcessLookupError):  # ESRCH: nothing left to signal
            os.kill(-1, signal.SIGKILL)
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return reaped
        reaped[pid] = status


def _collect(pipes, pidfd, deadline, cap):
    """Read output until the child exits, ``deadline`` passes or ``cap`` bytes are exceeded."""
    bufs = {fd: bytearray() for fd in pipes}
    open_fds = set(pipes)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return bufs, "timeout"
        ready = select.select(list(open_fds) + [pidfd], [], [], remaining)[0]
        for fd in ready:
            if fd == pidfd:
                continue
            data = os.read(fd, 1 << 16)
            if not data:
                open_fds.discard(fd)
            bufs[fd] += data
            if sum(map(len, bufs.values())) > cap:
                return bufs, "output_limit"
        if pidfd in ready:
            return bufs, None


def _drain(bufs):
    """After every process is dead, read what is left in the pipes (at most one pipe buffer each)."""
    for fd, buf in bufs.items():
        while data := os.read(fd, 1 << 16):
            buf += data


def _wipe(fix_perms, keep):
    """Delete everything under the writable scratch dirs so nothing survives into the next run."""
    for top in ("/tmp", "/dev/shm"):
        for entry in os.scandir(top):
            if top == "/tmp" and entry.name in keep:
                continue
            if not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)
                continue
            if fix_perms:  # not root: the program may have chmod'ed its own dirs to 000
                os.chmod(entry.path, 0o700)
                for root, dirs, _ in os.walk(entry.path):
                    for name in dirs:
                        os.chmod(os.path.join(root, name), 0o700)
            shutil.rmtree(entry.path)


def _status(verdict, wait_status, memory_tag, stderr):
    if verdict:
        return verdict, None
    if os.WIFSIGNALED(wait_status):
        sig = os.WTERMSIG(wait_status)
        return ("timeout" if sig == signal.SIGXCPU else "memory" if memory_tag else "killed"), -sig
    code = os.WEXITSTATUS(wait_status)
    if memory_tag:
        return "memory", code
    if code == _SETUP_FAILED and stderr.startswith(b"sandbox: child setup failed"):
        return "crashed", code
    return ("ok" if code == 0 else "error"), code


def _serve(req, uid, keep, seq):
    workdir = f"/tmp/run{seq}"
    os.mkdir(workdir, 0o700)
    if uid >= 0:
        os.chown(workdir, uid, uid)
    stdin_fd = os.memfd_create("stdin")
    os.write(stdin_fd, req["stdin"].encode("utf-8", "replace"))  # lone surrogates become "?"
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    (out_r, out_w), (err_r, err_w), (tag_r, tag_w) = os.pipe(), os.pipe(), os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(req, workdir, uid, (stdin_fd, out_w, err_w, tag_w))
    for fd in (stdin_fd, out_w, err_w, tag_w):
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    cap = req["max_output"]
    bufs, verdict = _collect((out_r, err_r), pidfd, start + req["timeout"], cap)
    duration = time.monotonic() - start
    reaped = _kill_all()
    _drain(bufs)
    memory_tag = os.read(tag_r, 1) == _MEMORY_TAG  # every writer is dead, so this cannot block
    for fd in (out_r, err_r, tag_r, pidfd):
        os.close(fd)
    _wipe(uid < 0, keep)
    out, err = bytes(bufs[out_r]), bytes(bufs[err_r])
    if len(out) + len(err) > cap:
        verdict = verdict or "output_limit"
        out = out[:cap]
        err = err[: cap - len(out)]
    status, code = _status(verdict, reaped[pid], memory_tag, err)
    return {
        "status": status,
        "returncode": code,
        "duration_s": duration,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
    }


def main():
    config = json.loads(sys.argv[1])
    # kill(-1) below would kill every process of the host if this ran outside a private pid namespace.
    if os.readlink("/proc/self/ns/pid") == config["host_pid_namespace"] or os.getpid() == 1:
        sys.exit("sandbox server: refusing to run outside a private pid namespace")
    uid, keep = config["uid"], set(config["keep"])
    req_fd, rep_fd = os.dup(0), os.dup(1)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # stray prints from preloaded modules cannot corrupt the protocol
    for name in config["preload"]:
        __import__(name)
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans are reparented to us
    gc.freeze()
    _send(rep_fd, {"ready": True})
    seq = 0
    while (req := _recv(req_fd)) is not None:
        _send(rep_fd, _serve(req, uid, keep, seq))
        seq += 1


main()
