"""What a rollout returns: `Sample`s (one sampled completion each, with its reward and group), the committed
episodes' `EpisodeResult`s, and the `Rollout` that holds both. No torch here."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from pettingllms.backends.base import Generation
from pettingllms.rollout.scheduler import ScheduleStats

ROW_FIELDS = (
    "group_id",
    "instance",
    "episode",
    "turn",
    "agent",
    "policy",
    "prompt",
    "completion",
    "reward",
    "reward_team",
    "reward_local",
    "advantage",
    "error",
    "parse_error",
    "program",
    "committed",
)
"""The fields of a sample's rollout-dump row (`Sample.to_row`), after the row's `step` (the dump adds
`episode_success`: whether the committed episode the sample belongs to solved its instance)."""


@dataclasses.dataclass
class Sample:
    """One sampled completion with its reward; `advantage` is filled by `compute_advantages`.

    `group_id` is the key of the group the sample is compared within (`pettingllms.rollout.grouping.group_key`);
    `instance` is the index of its instance in the rollout's seeds; `episode` is set by the trajectory baseline,
    whose group members are whole episodes: the index of the sample's episode in its rollout (None for the
    candidates of a tree group, whose members are single samples).
    """

    group_id: str
    instance: int
    turn: int
    agent: str
    policy: str
    prompt: str
    completion: str
    reward: float
    reward_team: float
    reward_local: float
    generation: Generation
    committed: bool = True
    advantage: float = 0.0
    error: str | None = None
    """Why the completion could not be used, fully or partly (`infos[agent]["error"]`), else None."""
    parse_error: bool = False
    """Nothing in the completion was usable (`infos[agent]["parse_error"]`)."""
    program: str | None = None
    """What the completion's program did, where the env reports it (`infos[agent]["program"]`, a tool agent's:
    "solves", "fails", or "absent" for a direct answer); None where the env reports none."""
    episode: int | None = None
    step_reward: float | None = None
    """The team's reward of the committed step this sample is (the acting agent's reward plus what the step paid or
    settled to the others); None for the candidates that were not committed. A trajectory's rewards sum its steps'."""

    def to_row(self, step: int) -> dict[str, Any]:
        """The JSON-ready row of a rollout dump: the training step, then `ROW_FIELDS`."""
        return {"step": step, **{name: getattr(self, name) for name in ROW_FIELDS}}


@dataclasses.dataclass(frozen=True)
class EpisodeResult:
    """How one (committed) episode ended; `returns` holds each agent's return: the env's rewards of its committed
    steps plus the local rewards other agents' steps paid or settled to it (not a candidate's score, whose turn
    credit is a greedy probe's)."""

    instance: int
    success: bool
    turns: int
    """Turns in which the team acted: a success in the first turn is 1, a truncated episode `max_turns`."""
    returns: Mapping[str, float]
    progress: float | None = None
    """The ended episode's progression score, 0 to 100 (`env.unwrapped.progress()`); None for an env without one."""


@dataclasses.dataclass
class Rollout:
    """Every sample of a rollout, how each committed episode ended, and what producing it took: seconds spent
    stepping environments (candidates and probes included), the greedy turn-credit completions it generated (never
    trained on), and its schedule's wall time with each server's calls, items and busy time."""

    samples: list[Sample]
    episodes: list[EpisodeResult]
    env_seconds: float = 0.0
    probe_completions: int = 0
    schedule: ScheduleStats = dataclasses.field(default_factory=ScheduleStats)

    @property
    def success_rate(self) -> float:
        return float(np.mean([e.success for e in self.episodes])) if self.episodes else 0.0


def dump_rows(rollout: Rollout, step: int) -> list[dict[str, Any]]:
    """Every sample's `to_row`, with `episode_success`: the success of its episode (`Sample.episode`, the
    trajectory baseline's) or, for a tree group's candidates, of its instance's committed episode."""
    by_instance = {result.instance: result.success for result in rollout.episodes}
    rows = []
    for sample in rollout.samples:
        success = (
            rollout.episodes[sample.episode].success
            if sample.episode is not None
            else by_instance.get(sample.instance)
        )
        rows.append({**sample.to_row(step), "episode_success": success})
    return rows
