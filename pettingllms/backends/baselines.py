"""The reference baselines, as `StatePolicy`s that read the environment's state: random and oracle.

- `RandomPolicy`: `env.unwrapped.random_answer(agent, rng)`, a uniformly random answer in the agent's format
  (random moves, placements, integers), from one seeded `numpy.random.Generator` (one per request seed when the
  engine gives them); the floor of a leaderboard.
- `OraclePolicy`: `env.unwrapped.solution(agent)`, the env's solver or reference answer; the ceiling.

Both produce text only (no token ids): they serve evaluation, not training.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pettingllms.backends.base import Generation, NumpySeeded, request_generators


class RandomPolicy(NumpySeeded):
    """Random answers in each agent's format (see the module docstring); same seed, same answers."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def generate_from_state(
        self, envs: Sequence[Any], agent: str, n: int, seeds: Sequence[int] | None = None
    ) -> list[list[Generation]]:
        """`n` random answers per env, from the policy's generator or, with `seeds`, one generator per env."""
        generators = request_generators(self.rng, seeds, len(envs))
        return [
            [Generation(env.unwrapped.random_answer(agent, rng)) for _ in range(n)]
            for env, rng in zip(envs, generators, strict=True)
        ]


class OraclePolicy:
    """The env's own solution for the acting agent (see the module docstring); deterministic."""

    def generate_from_state(self, envs: Sequence[Any], agent: str, n: int) -> list[list[Generation]]:
        return [[Generation(env.unwrapped.solution(agent)) for _ in range(n)] for env in envs]
