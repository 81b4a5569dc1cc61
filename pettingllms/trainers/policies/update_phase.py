"""The update phase of a step: every policy's update, each followed by its own sync, side by side where they can be.

Every `PolicyHandle` names its `lane`: what it must not share in time with another policy. A policy in this process
has its device's lane (two updates on one GPU would compete for its memory and compute, on the CPU for its
cores); the LoRA adapters of one shared PEFT model share one lane (they switch its active adapter); a policy on Ray
has a lane of its own (its update worker is an actor with its own GPU). `update_and_sync` runs each lane in a
thread of its own: the policies of a lane one after another, each policy's sync right after its own update (its
rollout server gets the new weights while other lanes still train), lanes at the same time. With one lane
(everything on the CPU, or on one GPU) that is the serial order of `handles`.

Under a launcher (torchrun) every rank's collectives must come in one order, so the ranks update one policy after
another, in `handles`' order, and sync after all of them, whatever the lanes (`world.size > 1`).

A policy is synced when some rank trained it (`trained[name] > 0`): a policy without samples was not updated.

With `before_sync` (off-policy training: the next step's rollout still samples from the generators), every lane
updates first, then `before_sync()` waits for that rollout, then every trained policy is synced.

## The rollout that may overlap the update

One-step-off-policy rollouts (`off_policy_steps=1`): the next step's rollout runs while this step's update does
(`before_sync` above waits for it).

`TimedRollout` is a step's rollout with what was measured while it ran (its own counters, read from the engine
when it ended, so that a rollout running beside the trainer's bookkeeping never mixes its figures with another
step's) and `version`: how many update phases had been synced into the generators when it began. The trainer
trains step s on a rollout of version s (on-policy) or s - 1 (collected during step s - 1's update): the staleness
`s - version` never exceeds `off_policy_steps`.

`RolloutAhead` runs at most one such rollout in a thread of its own: `start(step, version)` begins step `step`'s,
`wait()` returns once it has ended (the trainer waits before syncing new weights into the generators it samples
from), `take(step)` hands it over (None when no rollout of that step was started), `close()` waits for a running
one and stops the thread.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pettingllms.parallel.world import SINGLE_PROCESS, World
from pettingllms.rollout.samples import Rollout


@dataclasses.dataclass(frozen=True)
class UpdatePhase:
    """What the phase did: each policy's update metrics, its update and sync seconds, and the phase's wall time."""

    metrics: dict[str, dict[str, float]]
    update_seconds: dict[str, float]
    sync_seconds: dict[str, float]
    wall_seconds: float


def lanes(handles: Mapping[str, Any]) -> dict[str, list[str]]:
    """Policy names by lane, in `handles`' order (module docstring)."""
    by_lane: dict[str, list[str]] = {}
    for name, handle in handles.items():
        by_lane.setdefault(handle.lane, []).append(name)
    return by_lane


def update_and_sync(
    handles: Mapping[str, Any],
    routed: Mapping[str, Sequence[Any]],
    trained: Callable[[], Mapping[str, int]] | Mapping[str, int],
    world: World = SINGLE_PROCESS,
    *,
    before_sync: Callable[[], None] | None = None,
) -> UpdatePhase:
    """Update every policy on its `routed` samples and sync the trained ones (module docstring). `trained`: how
    many samples each policy was trained on over every rank, or a function that asks the ranks (a collective, run
    after the updates under a launcher). `before_sync`: run after every update and before the first sync."""
    start = time.perf_counter()
    metrics: dict[str, dict[str, float]] = {}
    updates: dict[str, float] = {}
    syncs: dict[str, float] = {}

    def update(name: str) -> None:
        began = time.perf_counter()
        metrics[name] = handles[name].update(routed.get(name, []))
        updates[name] = time.perf_counter() - began

    def sync(name: str) -> None:
        began = time.perf_counter()
        handles[name].sync()
        syncs[name] = time.perf_counter() - began

    if world.size > 1:
        for name in handles:
            update(name)
        counts = trained() if callable(trained) else trained
        for name in handles:
            if counts[name]:
                sync(name)
    else:
        counts = trained() if callable(trained) else trained

        def lane(names: list[str]) -> None:
            for name in names:
                update(name)
                if counts[name] and before_sync is None:
                    sync(name)

        _side_by_side(lane, list(lanes(handles).values()))
        if before_sync is not None:
            before_sync()
            for name in handles:
                if counts[name]:
                    sync(name)
    ordered = {name: metrics[name] for name in handles}
    return UpdatePhase(ordered, updates, syncs, time.perf_counter() - start)


def _side_by_side(lane: Callable[[list[str]], None], groups: list[list[str]]) -> None:
    """Run `lane` on every group, each in a thread of its own (one group: in this thread)."""
    if len(groups) == 1:
        lane(groups[0])
        return
    with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="update-lane") as pool:
        for future in [pool.submit(lane, names) for names in groups]:
            future.result()  # an update's exception is raised here, after every lane has ended


@dataclasses.dataclass(frozen=True)
class TimedRollout:
    """A step's rollout (its own counters included), its wall seconds, and the number of synced update phases
    (`version`) of the weights it was sampled with."""

    rollout: Rollout
    version: int
    seconds: float


class RolloutAhead:
    """At most one rollout running beside the trainer (module docstring); `collect(step, version)` makes one."""

    def __init__(self, collect: Callable[[int, int], TimedRollout]):
        self.collect = collect
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollout-ahead")
        self.pending: tuple[int, Future[TimedRollout]] | None = None

    def start(self, step: int, version: int) -> None:
        if self.pending is not None:
            raise RuntimeError(f"a rollout of step {self.pending[0]} is still pending")
        self.pending = (step, self.executor.submit(self.collect, step, version))

    def wait(self) -> None:
        """Return once the pending rollout (if any) has ended; its error is raised here."""
        if self.pending is not None:
            self.pending[1].result()

    def take(self, step: int) -> TimedRollout | None:
        """The finished rollout of `step` (waiting for it), or None when none was started for `step`."""
        if self.pending is None or self.pending[0] != step:
            return None
        _, future = self.pending
        self.pending = None
        return future.result()

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.pending = None
