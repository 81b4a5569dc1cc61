"""One-step-off-policy rollouts (`off_policy_steps=1`): the next step's rollout runs while this step's update does.

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
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from pettingllms.rollout.samples import Rollout


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
