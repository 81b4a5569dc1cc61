"""The contract of an env pool, which the rollout engine steps its candidate copies through: `StepPool`.
`EnvPool` (worker processes) and `RayEnvPool` (Ray actors) implement it; the engine knows pools only by it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pettingllms.core.protocol import RolloutEnv


class StepPool(Protocol):
    """Where candidate copies are stepped outside this process: `step_all` returns, in job order, each
    `(env, action)` job's env after `env.step(action)`, the same env stepping it here would give."""

    def step_all(self, jobs: Sequence[tuple[RolloutEnv, str]]) -> list[RolloutEnv]: ...
