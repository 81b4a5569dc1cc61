"""Fork server that runs *inside* one bwrap sandbox; this is the only place model text is executed.

The host passes this file's source with ``python -I -c SOURCE CONFIG_JSON`` (stdlib only, never imported on
the host).  CONFIG: ``host_pid_namespace`` (the host's ``/proc/self/ns/pid`` link: the server refuses to start
in it), ``host_user_namespace`` (likewise, when ``uid`` is ``-1``: the server then zeroes the inotify and
fanotify counters of its own user namespace before anything else, see ``_zero_user_counters``), ``uid`` every
run is switched to (``-1``: stay the current user and drop all capabilities),
``preload`` module names, ``scratch`` (mount point of each run's tmpfs), ``scratch_bytes``/``shm_bytes`` (its
size and that of the run's ``/dev/shm``), ``seccomp`` (hex of the BPF filter every program runs under, or
null).  Protocol on the inherited fds 0 (requests) and 1 (replies): frames of a 4-byte big-endian length
followed by UTF-8 JSON.  The first reply is ``{"ready": true}`` once the preload modules are imported; then
every request ``{id, code, stdin, timeout, memory_mb, max_output, max_processes}`` gets exactly one reply
``{id, status, stdout, stderr, returncode, duration_s}``.

Processes, so that no run can see the server or an earlier run:
  * the *zygote* (this process) imports ``preload`` and forks the manager before any request exists.  It never
    reads a request: per run it receives one byte and six fds over a socketpair (SCM_RIGHTS), forks the run's
    init into a new pid namespace (as a normal user through a short-lived *leader* process, see
    ``_zygote``), hands the manager a pidfd of the init, closes the fds and reaps its child.  So every run
    starts as a copy of a process that has never held a byte of any run.
  * the *manager* reads requests from the host, writes each program (with its limits) and its stdin to two
    memfds, passes them and the output pipes to the zygote, collects the output until the run ends, kills the
    run on timeout or output overflow (``pidfd_send_signal`` to its init), and replies.  It never forks.
  * the run's *init* (pid 1 of the run's pid namespace) is in new mount and IPC namespaces (entered by itself
    as root, by the leader otherwise) with a size-capped tmpfs work dir and ``/dev/shm``; it mounts a fresh
    ``/proc`` (showing the run's processes only), forks the program, reaps orphans, and when the program exits
    reports its wait status on a pipe and exits - the kernel then kills every other process of the
    namespace.  The namespaces, tmpfs and SysV objects vanish with it: nothing is left to clean up, so there
    is no clean-up walk to break.
  * the *program* process: new session, rlimits, unprivileged uid (root) or no capabilities (normal user),
    no_new_privs, the seccomp filter, fds 0-3 only (stdin memfd, stdout, stderr, memory tag), then ``code``
    runs as ``__main__``.
The zygote, the manager and a leader are non-dumpable, and outside every run's pid namespace and ``/proc``: a
run can neither name nor signal nor trace them (nor its init, which ignores its signals as every pid 1 does).
A failure to set up one run makes that run ``"crashed"``; any other internal error ends the server, and the
host reports the run as ``"crashed"`` and starts a new server.
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
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import types

_MEMORY_TAG = b"M"  # written to fd 3 by the program when it died of MemoryError
_SETUP_FAILED = b"sandbox: run setup failed: "
_SET_UP = b"S"  # written by the program process on its setup pipe once everything but the program is done
_LIBC = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWPID = 0x00020000, 0x08000000, 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_RDONLY = 2, 4, 8, 1
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE, _MS_RELATIME = 32, 4096, 16384, 1 << 18, 1 << 21
_PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 4, 38, 22, 2
_RUN_FDS = 6  # program memfd, stdin memfd, stdout, stderr, memory tag, wait-status pipe
MAX_OPEN_FILES = 64
"""RLIMIT_NOFILE of a program's processes: few fds, so little unaccounted kernel memory in socket buffers."""
MAX_PENDING_SIGNALS = 64
"""RLIMIT_SIGPENDING of a program's processes.  The kernel counts queued signals per user in each user namespace
up to the host's, and checks the receiver's limit against that count: without it one run's ``sigqueue`` of
~96,000 blocked real-time signals failed every ``sigqueue`` of the host user (EAGAIN).  Signals the kernel or
``kill`` sends (SIGCHLD, SIGALRM, SIGINT, ...) are delivered past the limit."""
_USER_COUNTERS = "/proc/sys/user/"
_ZEROED_COUNTERS = (
    "max_inotify_instances",
    "max_inotify_watches",
    "max_fanotify_groups",
    "max_fanotify_marks",
)
_SINCE_5_13 = ("max_fanotify_groups", "max_fanotify_marks")  # older kernels allow no unprivileged fanotify


class _Caps(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    _check(
        _LIBC.mount(
            source and source.encode(), target.encode(), fstype and fstype.encode(), ctypes.c_ulong(flags),
            data and data.encode(),
        ),
        f"mount {target}",
    )  # fmt: skip


# ---------------------------------------------------------------- framing (manager <-> host)


def _read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv(fd):
    head = _read_exact(fd, 4)
    return None if head is None else json.loads(_read_exact(fd, struct.unpack(">I", head)[0]))


def _send(fd, obj):
    data = json.dumps(obj).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


# ---------------------------------------------------------------- the program process


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


def _read_all(fd):
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _drop_privileges(uid):
    """Switch to ``uid`` (root host) and clear every capability set, inheritable included."""
    if uid >= 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)  # from root to another uid: permitted, effective and ambient are cleared
    header, caps = _CapHeader(0x20080522, 0), (_Caps * 2)()  # _LINUX_CAPABILITY_VERSION_3, all zero
    _check(_LIBC.capset(ctypes.byref(header), caps), "capset")


def _program(program_fd, fds, config, fprog):
    """The forked program process: isolate, limit, drop privileges, run the program; never returns.

    ``fds`` become 0-4: stdin, stdout, stderr, memory tag, and a setup pipe on which it writes one byte once
    set up and which it closes before the program's code starts (so no program can claim a setup failure)."""
    try:
        req = json.loads(_read_all(program_fd))
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(len(fds), os.sysconf("SC_OPEN_MAX"))
        mem = req["memory_mb"] << 20
        limits = {
            resource.RLIMIT_AS: mem,
            resource.RLIMIT_DATA: mem,
            resource.RLIMIT_CORE: 0,
            resource.RLIMIT_CPU: math.ceil(req["timeout"]) + 1,
            resource.RLIMIT_FSIZE: 64 << 20,
            resource.RLIMIT_NOFILE: MAX_OPEN_FILES,
            resource.RLIMIT_NPROC: req["max_processes"],
            resource.RLIMIT_MSGQUEUE: 0,
            resource.RLIMIT_SIGPENDING: MAX_PENDING_SIGNALS,
        }
        for kind, value in limits.items():
            resource.setrlimit(kind, (value, value))
        if config["uid"] >= 0:  # root: the worker may have a memory cgroup (never without root)
            with open("/proc/self/oom_score_adj", "w") as adj:
                adj.write("1000")  # in a full worker cgroup the OOM killer ends the program, not the server
        _drop_privileges(config["uid"])
        _check(_LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        if fprog is not None:
            _check(_LIBC.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
        workdir = config["scratch"]
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
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", closefd=False)
        sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = sys.__stderr__ = open(
            2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1
        )
        os.write(4, _SET_UP)
        os.close(4)
    except BaseException as exc:  # noqa: BLE001  (the forked process must never return into the server)
        os.write(2, _SETUP_FAILED + repr(exc).encode() + b"\n")
        os._exit(125)
    os._exit(_execute(req["code"]))


# ---------------------------------------------------------------- the run's init


def _remount_readonly(path):
    """Make the mount at ``path`` read-only in this mount namespace, keeping its other (possibly locked) flags."""
    flags = os.statvfs(path).f_flag
    keep = flags & (os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC | os.ST_NOATIME | os.ST_NODIRATIME)
    if flags & os.ST_RELATIME:
        keep |= _MS_RELATIME
    _mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | keep)


def _isolate(config, namespaces):
    """Enter new ``namespaces`` (mount and IPC at least), make the sandbox's own tmpfs mounts read-only (a
    normal user owns them, and they are shared by all runs of the worker) and mount the run's private tmpfs
    dirs: the only writable places a run has."""
    _check(_LIBC.unshare(namespaces), "unshare")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    scratch, uid = config["scratch"], config["uid"]
    for path in ("/", "/dev") if scratch == "/tmp" else ("/", "/dev", "/tmp"):
        _remount_readonly(path)
    owner = f",uid={uid},gid={uid}" if uid >= 0 else ""
    scratch_options = f"size={config['scratch_bytes']},mode=0700{owner}"
    _mount("tmpfs", scratch, "tmpfs", _MS_NOSUID | _MS_NODEV, scratch_options)
    _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={config['shm_bytes']},mode=1777")


def _run_init(fds, config, fprog, isolate):
    """Pid 1 of the run's pid namespace: (``isolate``: enter its mount and IPC namespaces and mount its tmpfs
    dirs,) mount its ``/proc``, fork the program, report its wait status; never returns."""
    program_fd, stdin_fd, out_w, err_w, tag_w, status_w = fds
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1 ignores signals it has no handler for
        if isolate:
            _isolate(config, _CLONE_NEWNS | _CLONE_NEWIPC)
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        setup_r, setup_w = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(status_w)
            os.close(setup_r)
            _program(program_fd, (stdin_fd, out_w, err_w, tag_w, setup_w), config, fprog)
        for fd in (program_fd, stdin_fd, out_w, err_w, tag_w, setup_w):
            os.close(fd)
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == child:
                break
        set_up = os.read(setup_r, 1) == _SET_UP  # the program is dead and its setup pipe closed: no blocking
        os.write(status_w, struct.pack(">i?", status, set_up))
    except BaseException as exc:  # noqa: BLE001  (never return into the server's code)
        os.write(err_w, _SETUP_FAILED + repr(exc).encode() + b"\n")
        os._exit(1)
    os._exit(0)  # the kernel now kills every other process of the namespace


def _run_leader(ctl, fds, config, fprog):
    """Non-root path: enter the run's namespaces, fork its init, hand the manager a pidfd of the init (of
    itself when something failed), wait for the init; never returns."""
    try:
        _isolate(config, _CLONE_NEWPID | _CLONE_NEWNS | _CLONE_NEWIPC)
        init = os.fork()
        if init == 0:
            ctl.close()
            _run_init(fds, config, fprog, isolate=False)
    except BaseException as exc:  # noqa: BLE001  (report it as this run's stderr; the run is "crashed")
        os.write(fds[3], _SETUP_FAILED + repr(exc).encode() + b"\n")
        init = os.getpid()
    pidfd = os.pidfd_open(init)
    for fd in fds:
        os.close(fd)
    socket.send_fds(ctl, [b"P"], [pidfd])
    if init == os.getpid():
        os._exit(1)
    os.waitpid(init, 0)
    os._exit(0)


def _zygote(ctl, config, fprog):
    """Fork one run per message from the manager; return when the manager is gone.

    As root the zygote forks each run's init itself, into a new pid namespace it then leaves again with
    ``setns``.  As a normal user that ``setns`` is refused (bwrap's nested user namespace does not own the
    zygote's pid namespace), so a short-lived leader process creates the namespace instead: one fork more."""
    own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC) if config["uid"] >= 0 else None
    while True:
        msg, fds, _, _ = socket.recv_fds(ctl, 1, _RUN_FDS)
        if not msg or len(fds) != _RUN_FDS:
            return
        if own_pid_ns is None:
            child = os.fork()
            if child == 0:
                _run_leader(ctl, fds, config, fprog)
        else:
            _check(_LIBC.unshare(_CLONE_NEWPID), "unshare")
            child = os.fork()
            if child == 0:
                ctl.close()
                _run_init(fds, config, fprog, isolate=True)
            _check(_LIBC.setns(own_pid_ns, _CLONE_NEWPID), "setns")
            pidfd = os.pidfd_open(child)
            socket.send_fds(ctl, [b"P"], [pidfd])
            os.close(pidfd)
        for fd in fds:
            os.close(fd)
        os.waitpid(child, 0)


# ---------------------------------------------------------------- the manager


def _memfd(name, data):
    fd = os.memfd_create(name)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _collect(pipes, pidfd, deadline, cap):
    """Read output until the run's init exits, ``deadline`` passes or ``cap`` bytes are exceeded."""
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
    """After every process of the run is dead, read what is left in the pipes."""
    for fd, buf in bufs.items():
        while data := os.read(fd, 1 << 16):
            buf += data


def _status(verdict, wait_status, set_up, memory_tag):
    """(status, returncode) of a run; "crashed" when its init or the program's setup failed (the program's
    own exit code or output never says so)."""
    if verdict:
        return verdict, None
    if wait_status is None or not set_up:
        return "crashed", None
    if os.WIFSIGNALED(wait_status):
        sig = os.WTERMSIG(wait_status)
        return ("timeout" if sig == signal.SIGXCPU else "memory" if memory_tag else "killed"), -sig
    code = os.WEXITSTATUS(wait_status)
    if memory_tag:
        return "memory", code
    return ("ok" if code == 0 else "error"), code


def _serve(ctl, req):
    program = {key: req[key] for key in ("code", "timeout", "memory_mb", "max_processes")}
    run_fds = [
        _memfd("program", json.dumps(program).encode()),
        _memfd("stdin", req["stdin"].encode("utf-8", "replace")),
    ]
    (out_r, out_w), (err_r, err_w), (tag_r, tag_w), (status_r, status_w) = (os.pipe() for _ in range(4))
    run_fds += [out_w, err_w, tag_w, status_w]
    start = time.monotonic()
    socket.send_fds(ctl, [b"F"], run_fds)
    for fd in run_fds:
        os.close(fd)
    _, pidfds, _, _ = socket.recv_fds(ctl, 1, 1)
    if len(pidfds) != 1:
        raise RuntimeError("the zygote is gone")
    pidfd = pidfds[0]
    cap = req["max_output"]
    bufs, verdict = _collect((out_r, err_r), pidfd, start + req["timeout"], cap)
    duration = time.monotonic() - start
    if verdict:
        with contextlib.suppress(ProcessLookupError):  # it may have just exited and been reaped
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)  # the kernel then kills the run's whole namespace
    select.select([pidfd], [], [])
    _drain(bufs)
    memory_tag = os.read(tag_r, 1) == _MEMORY_TAG  # every writer is dead, so these cannot block
    raw_status = _read_exact(status_r, 5)
    for fd in (out_r, err_r, tag_r, status_r, pidfd):
        os.close(fd)
    out, err = bytes(bufs[out_r]), bytes(bufs[err_r])
    if len(out) + len(err) > cap:
        verdict = verdict or "output_limit"
        out = out[:cap]
        err = err[: cap - len(out)]
    wait_status, set_up = (None, False) if raw_status is None else struct.unpack(">i?", raw_status)
    status, code = _status(verdict, wait_status, set_up, memory_tag)
    return {
        "status": status,
        "returncode": code,
        "duration_s": duration,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
    }


def _manager(ctl, req_fd, rep_fd):
    _send(rep_fd, {"ready": True})
    while (req := _recv(req_fd)) is not None:
        _send(rep_fd, {"id": req["id"], **_serve(ctl, req)})


def _zero_user_counters(config):
    """Non-root host: allow no inotify or fanotify instance, watch or mark in the worker's user namespace.

    These kernel counters are kept per user in every user namespace up to the host's, where the host user's
    processes and every other worker share one allowance (128 inotify instances by default): a run holding them
    made the host's and other workers' ``inotify_init`` fail.  The server holds CAP_SYS_RESOURCE in its own user
    namespace only, so the writes change that namespace's limits; programs have no capability to raise them
    again.  No program needs file-change notification.  As root there is no user namespace, and each worker's
    run uid has its own per-user counts."""
    if config["uid"] >= 0:
        return
    if os.readlink("/proc/self/ns/user") == config["host_user_namespace"]:
        sys.exit("sandbox server: refusing to run as a normal user outside a private user namespace")
    for name in _ZEROED_COUNTERS:
        path = _USER_COUNTERS + name
        if name in _SINCE_5_13 and not os.path.exists(path):
            continue
        try:
            with open(path, "w") as counter:
                counter.write("0")
        except OSError as exc:
            sys.exit(
                f"sandbox server: cannot set {path} to 0 in its user namespace ({exc}); it needs a writable "
                "/proc/sys in the sandbox, as bubblewrap's --unshare-user gives a normal user"
            )


def main():
    config = json.loads(sys.argv[1])
    if os.readlink("/proc/self/ns/pid") == config["host_pid_namespace"] or os.getpid() == 1:
        sys.exit("sandbox server: refusing to run outside a private pid namespace")
    _zero_user_counters(config)
    _check(_LIBC.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")  # no /proc/<pid>/fd|mem, no ptrace
    req_fd, rep_fd = os.dup(0), os.dup(1)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # stray prints from preloaded modules cannot corrupt the protocol
    os.close(null)
    for name in config["preload"]:
        __import__(name)
    fprog = None
    if config["seccomp"] is not None:
        code = bytes.fromhex(config["seccomp"])
        filter_buffer = ctypes.create_string_buffer(code, len(code))  # a local of main(): alive in every fork
        fprog = _SockFprog(len(code) // 8, ctypes.cast(filter_buffer, ctypes.c_void_p))
    gc.freeze()
    zygote_end, manager_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if os.fork() == 0:
        zygote_end.close()
        try:
            _manager(manager_end, req_fd, rep_fd)
        except BaseException:  # noqa: BLE001  (log it for the host, which reports the run as crashed)
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    for fd in (req_fd, rep_fd):
        os.close(fd)
    manager_end.close()
    _zygote(zygote_end, config, fprog)


main()
