"""The seccomp-BPF filter every sandboxed program runs under, assembled here in pure Python.

``program()`` returns the filter as packed ``struct sock_filter`` instructions (the host passes it to the
server, which installs it in each program's process right before the program's code starts; the server's
own processes are not filtered, since they need ``unshare``/``setns``/``mount`` to build each run).

Contract of the filter: a syscall from a foreign ABI (x32 on x86_64, or any other audit arch) kills the
process; the calls in ``DENIED`` (and ``modify_ldt`` on x86_64) fail with EPERM; ``clone`` with any namespace
flag fails with EPERM; ``clone3`` fails with ENOSYS (its flags sit behind a pointer BPF cannot read; libc then
falls back to ``clone``, whose flags it can); ``socket``/``socketpair`` of a family other than
``SOCKET_FAMILIES`` (AF_UNIX) fail with EAFNOSUPPORT: no IP socket of any type, stream, datagram or raw (a
loopback TCP connection held 3-4 MiB of host memory that no cgroup v1 limit and no non-root host charges, and
a closed one's TIME_WAIT entry in ``/proc/net/tcp`` carried data to the worker's next run), no AF_PACKET or
netlink, no AF_VSOCK (it reaches a VM's hypervisor whatever the network namespace); ``setsockopt`` of a socket
buffer size (``SO_SNDBUF``, ``SO_RCVBUF`` and their ``FORCE`` forms) fails with EPERM (buffers are kernel memory
no memory limit charges); everything else is allowed.  ``setsid`` is denied because
every new session gets its own scheduler autogroup: a program of 16 sessions took 16/17 of the CPU from the runs
of other workers, which then timed out.  Supported: x86_64 and aarch64; elsewhere
``program()`` returns None and runs are not filtered (the module docstring of the package says so).
"""

from __future__ import annotations

import platform
import struct

DENIED = (
    # another process's memory or state
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise",
    # the kernel keyring (host-wide per uid, survives the run)
    "keyctl", "add_key", "request_key",
    # namespaces and mounts
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    # memory that RLIMIT_AS does not charge, and SysV IPC
    "memfd_create", "memfd_secret", "shmget", "msgget",
    # large kernel attack surface no program needs
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "open_by_handle_at",
    "name_to_handle_at", "lookup_dcookie",
    # a new session is a new scheduler autogroup: a fork of sessions would starve other workers' runs
    "setsid",
)  # fmt: skip
SOCKET_FAMILIES = {"AF_UNIX": 1}
"""The address families a program may open: local sockets only (``socketpair``, ``multiprocessing``, asyncio's
self-pipe).  No program of this project needs IP: code problems use stdin/stdout or function calls, judges and
tool programs pipes and printed answers."""
_SOL_SOCKET = 1
_BUFFER_OPTIONS = (7, 8, 32, 33)  # SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE

_NEW_SYSCALLS = {  # numbered alike on every architecture since Linux 5.1
    "pidfd_getfd": 438, "process_madvise": 440, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "memfd_secret": 447,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "quotactl_fd": 443, "clone3": 435,
}  # fmt: skip
_X86_64 = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "keyctl": 250, "add_key": 248,
    "request_key": 249, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "memfd_create": 319, "shmget": 29, "msgget": 68, "bpf": 321, "perf_event_open": 298,
    "userfaultfd": 323, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "quotactl": 179,
    "syslog": 103, "open_by_handle_at": 304, "name_to_handle_at": 303, "lookup_dcookie": 212, "clone": 56,
    "setsid": 112, "modify_ldt": 154, "socket": 41, "socketpair": 53, "setsockopt": 54,
}  # fmt: skip
_AARCH64 = {
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "keyctl": 219, "add_key": 217,
    "request_key": 218, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
    "chroot": 51, "memfd_create": 279, "shmget": 194, "msgget": 186, "bpf": 280, "perf_event_open": 241,
    "userfaultfd": 282, "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
    "delete_module": 106, "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89, "quotactl": 60,
    "syslog": 116, "open_by_handle_at": 265, "name_to_handle_at": 264, "lookup_dcookie": 18, "clone": 220,
    "setsid": 157, "socket": 198, "socketpair": 199, "setsockopt": 208,
}  # fmt: skip
_ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}

NAMESPACE_FLAGS = 0x7E020080
"""CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME."""
_X32_BIT = 0x40000000
_EPERM, _ENOSYS, _EAFNOSUPPORT = 1, 38, 97
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_NR, _ARCH, _ARG0_LOW, _ARG1_LOW, _ARG2_LOW = 0, 4, 16, 24, 32  # offsets in struct seccomp_data (u64 args)


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _when(number: int, body: list[bytes]) -> list[bytes]:
    """Run ``body`` (which ends in a return) for syscall ``number``; other syscalls skip it."""
    return [_insn(_JEQ, number, jf=len(body)), *body]


def _families() -> list[bytes]:
    """Allow a ``SOCKET_FAMILIES`` domain (arg 0), else fail with EAFNOSUPPORT."""
    families = list(SOCKET_FAMILIES.values())
    checks = [_insn(_JEQ, family, jt=len(families) - i) for i, family in enumerate(families)]
    return [_insn(_LD_W_ABS, _ARG0_LOW), *checks, _insn(_RET, _ERRNO | _EAFNOSUPPORT), _insn(_RET, _ALLOW)]


def _buffer_sizes() -> list[bytes]:
    """Fail ``setsockopt(fd, SOL_SOCKET, <a buffer size>, ...)`` with EPERM, allow every other option."""
    options = [
        _insn(_JEQ, option, jt=len(_BUFFER_OPTIONS) - i - 1) for i, option in enumerate(_BUFFER_OPTIONS)
    ]
    options[-1] = _insn(_JEQ, _BUFFER_OPTIONS[-1], jf=1)
    return [
        _insn(_LD_W_ABS, _ARG1_LOW),
        _insn(_JEQ, _SOL_SOCKET, jf=len(options) + 2),
        _insn(_LD_W_ABS, _ARG2_LOW),
        *options,
        _insn(_RET, _ERRNO | _EPERM),
        _insn(_RET, _ALLOW),
    ]


def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one), or None where the architecture is not supported."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, numbers = arch
    numbers = {**numbers, **_NEW_SYSCALLS}
    deny = _insn(_RET, _ERRNO | _EPERM)
    out = [
        _insn(_LD_W_ABS, _ARCH),
        _insn(_JEQ, audit_arch, jt=1),
        _insn(_RET, _KILL_PROCESS),
        _insn(_LD_W_ABS, _NR),
    ]
    if audit_arch == _ARCHES["x86_64"][0]:
        out += [_insn(_JGE, _X32_BIT, jf=1), _insn(_RET, _KILL_PROCESS)]
    for name in DENIED + (("modify_ldt",) if "modify_ldt" in numbers else ()):
        out += [_insn(_JEQ, numbers[name], jf=1), deny]
    out += [_insn(_JEQ, numbers["clone3"], jf=1), _insn(_RET, _ERRNO | _ENOSYS)]
    for name in ("socket", "socketpair"):
        out += _when(numbers[name], _families())
    out += _when(numbers["setsockopt"], _buffer_sizes())
    out += [
        _insn(_JEQ, numbers["clone"], jf=3),
        _insn(_LD_W_ABS, _ARG0_LOW),
        _insn(_JSET, NAMESPACE_FLAGS, jf=1),
        deny,
        _insn(_RET, _ALLOW),
    ]
    return b"".join(out)
