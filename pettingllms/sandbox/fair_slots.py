"""Free sandbox workers handed out fairly across owners, so that one owner's programs cannot starve another's.

A `FairSlots` holds a sandbox's free workers. `acquire(owner)` waits for one. When several requests wait, the next
free worker goes to the waiting owner that has held workers for the fewest seconds (least attained service; the
oldest request first among equals, and an owner's own requests in order). An owner that starts waiting after a
pause is credited with at least the floor, the least service of the owners running now (a newcomer: just below
it), so a long-idle owner does not take every worker until it has caught up, and a newcomer goes ahead of the
owners that have had their turn, not behind their whole queue.

So an owner whose programs are quick is served ahead of owners whose programs loop: each of its programs waits
only until the next worker frees, at most one program's time limit (every worker runs a program of at most its
limit), however many looping programs the others have queued. Requests are not preempted: a program keeps its
worker until it ends.

An owner is any hashable: `pettingllms.envs.program_runs` passes one per environment (a served session's env, one
episode's env in an evaluation), and a caller that names none is its own thread. The service of at most
`REMEMBERED` owners is kept (the least recently active are forgotten; one that comes back starts from the floor).
`close()` makes every waiting and later `acquire` raise `RuntimeError` and returns once the slots handed out are
back.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Hashable
from typing import Generic, TypeVar

Slot = TypeVar("Slot")
REMEMBERED = 4096
NEWCOMER_LEAD_S = 1e-6
"""A newcomer starts this much below the floor: ahead of the owners that have held workers as long as the one
running least (they have had their turn), behind every owner waiting that has held them less."""


class FairSlots(Generic[Slot]):
    """The free slots of a pool, handed out fairly across owners (module docstring); thread-safe."""

    def __init__(self, slots: list[Slot]):
        self._free, self._count = list(slots), len(slots)
        self._waiting: dict[Hashable, collections.deque[int]] = {}  # owner -> its waiting tickets, in order
        self._running: collections.Counter[Hashable] = collections.Counter()
        self._held: dict[int, tuple[Hashable, float]] = {}  # id(slot) -> (owner, when it was handed out)
        self._service: collections.OrderedDict[Hashable, float] = collections.OrderedDict()  # seconds held
        self._tickets = itertools.count()
        self._changed = threading.Condition()
        self._closed = False

    def acquire(self, owner: Hashable) -> tuple[Slot, float]:
        """A free slot for `owner`, once it is this request's turn, and the seconds it waited for it."""
        with self._changed:
            return self._acquire(owner)

    def reacquire(self, slot: Slot) -> tuple[Slot, float]:
        """Give back `slot` and wait for a slot in turn for the same owner, as one step: no other request can
        take the slot in between unless it is that request's turn (an owner running programs one after another
        keeps its worker while it has held workers least)."""
        with self._changed:
            owner = self._give_back(slot)
            return self._acquire(owner)

    def _acquire(self, owner: Hashable) -> tuple[Slot, float]:
        """`acquire`, with the lock held."""
        started = time.perf_counter()
        if owner not in self._waiting and not self._running[owner]:  # starts waiting: at least the floor
            before, floor = self._service.get(owner), self._floor() - NEWCOMER_LEAD_S
            self._service[owner] = floor if before is None else max(before, floor)
        self._service.move_to_end(owner)
        while len(self._service) > REMEMBERED:
            self._service.popitem(last=False)
        ticket = next(self._tickets)
        self._waiting.setdefault(owner, collections.deque()).append(ticket)
        while not self._closed and not (self._free and self._next() == ticket):
            self._changed.wait()
        queue = self._waiting[owner]
        queue.remove(ticket)
        if not queue:
            del self._waiting[owner]
        if self._closed:
            self._changed.notify_all()
            raise RuntimeError("Sandbox is closed")
        slot = self._free.pop()
        self._running[owner] += 1
        self._held[id(slot)] = (owner, time.perf_counter())
        self._changed.notify_all()  # the next request in turn may take another free slot
        return slot, time.perf_counter() - started

    def release(self, slot: Slot) -> None:
        """Give `slot` back to the pool; its owner is charged the seconds it held it."""
        with self._changed:
            self._give_back(slot)

    def _give_back(self, slot: Slot) -> Hashable:
        """`release`, with the lock held; returns the slot's owner."""
        owner, since = self._held.pop(id(slot))
        self._running[owner] -= 1
        if not self._running[owner]:
            del self._running[owner]
        self._service[owner] = self._service.get(owner, 0.0) + time.perf_counter() - since
        self._free.append(slot)
        self._changed.notify_all()
        return owner

    def waiting(self) -> int:
        """How many requests wait for a slot now."""
        with self._changed:
            return sum(len(queue) for queue in self._waiting.values())

    def close(self) -> None:
        """Refuse every waiting and later request (`acquire` raises RuntimeError), then wait until every slot
        handed out is given back (the runs in progress end)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            while len(self._free) < self._count:
                self._changed.wait()

    def _floor(self) -> float:
        """The least service of the owners running now, else of those waiting (0 when none is)."""
        active = self._running or self._waiting
        return min((self._service.get(owner, 0.0) for owner in active), default=0.0)

    def _next(self) -> int | None:
        """The ticket whose turn it is: the oldest of the waiting owner with the least service."""
        if not self._waiting:
            return None
        owner = min(self._waiting, key=lambda o: (self._service.get(o, 0.0), self._waiting[o][0]))
        return self._waiting[owner][0]
