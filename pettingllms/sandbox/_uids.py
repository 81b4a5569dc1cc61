"""Host-wide leases of run uids (root only), so no two workers of any process on this host share one.

A uid ``UID_BASE + k`` is leased by holding an exclusive ``flock`` on ``LOCK_DIR/<uid>``; the kernel drops
the lock when the holder closes the file or dies, so a crashed process never leaks its uids.  Leases are
per open file: two ``Sandbox`` objects in one process, or a process and its forked child, never get the
same uid while the first lease is held.
"""

from __future__ import annotations

import fcntl
import os

UID_BASE = 61000
UID_COUNT = 4096
LOCK_DIR = "/run/pettingllms-sandbox-uids"


class UidLease:
    """One leased uid; ``release()`` (idempotent) gives it back."""

    def __init__(self, uid: int, fd: int):
        self.uid = uid
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def lease() -> UidLease:
    """The lowest uid no one on this host holds; RuntimeError when all ``UID_COUNT`` are taken."""
    os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
    for uid in range(UID_BASE, UID_BASE + UID_COUNT):
        fd = os.open(os.path.join(LOCK_DIR, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise RuntimeError(f"all {UID_COUNT} sandbox run uids are leased")
