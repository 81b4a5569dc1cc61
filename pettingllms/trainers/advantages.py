"""Group-relative advantages (SPEC section 2), as TRL's GRPO computes them, over arbitrary group keys.

Options beside TRL's `scale_rewards`, each a trainer setting:

- `group_baseline` (CoMLRL's `advantage_mode`): what a member's reward is centred on, its group's mean (TRL's,
  the default), the mean of the group's *other* members (`"rloo"`, leave-one-out: `G / (G - 1)` times the mean-centred
  reward, so the baseline does not hold the member's own reward), or the group's best reward (`"max"`: every member
  but the best gets a negative advantage). The scaling (`scale_rewards`) applies after it.

- `per_agent` (Dr. MAS, Feng et al., 2026, arXiv 2602.08847): a sample is centred and scaled by the statistics of
  its own agent's members of its group, and with `scale_rewards="batch"` by its agent's batch standard deviation,
  so that agents whose rewards live on different scales (a tool agent's proposals, a plan agent's moves) each get
  unit-scale advantages. AT-GRPO's own groups hold one agent, so there it changes only the batch scale; it changes
  the groupings that pool agents (`turn`, `trajectory`).
- `turn_baseline`, for `trajectory_turn` samples (K independent episodes grouped by turn index, MT-GRPO): with
  `"return_to_go"` (the default) a sample's reward is its return-to-go and the baseline is the mean return-to-go of
  the group's episodes that reached that turn, a baseline that no action of the episode changes; `"summed"` is the
  construction verl issue 7244 warns about: each turn's own reward normalised per turn index, then summed over the
  episode's remaining turns. Its baseline has one term per turn the episode went on to play, so it depends on when
  the episode stopped: when the policy decides the length, every decision to take another turn gets a hidden bonus
  of minus the mean intermediate reward. Kept to measure the bias against (`summed_turn_advantages`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from pettingllms.rollout.samples import Sample

EPSILON = 1e-4
"""Added to the group's standard deviation, as in TRL."""


SCALE_REWARDS = ("group", "batch", "none")
"""TRL's `scale_rewards`: divide the centred rewards by the group's std, by the whole batch's, or by nothing."""


TURN_BASELINES = ("return_to_go", "summed")

GROUP_BASELINES = ("mean", "rloo", "max")
"""What a group's rewards are centred on (`group_baseline`, module docstring)."""


def statistics_key(sample: Sample, per_agent: bool = False) -> str:
    """The key of the members whose rewards centre and scale `sample`: its group, or (`per_agent`) its agent's
    members of its group."""
    return f"{sample.group_id}|{sample.agent}" if per_agent else sample.group_id


def compute_advantages(
    samples: Sequence[Sample],
    *,
    scale_rewards: str = "group",
    per_agent: bool = False,
    members: str | None = None,
    baseline: str = "mean",
) -> dict[str, float]:
    """Set `sample.advantage = (r - mean) / (std + eps)` within each group, where `mean` is the group's mean (or the
    other members' mean, or the group's best reward: `baseline`, module docstring) and
    `std` the group's standard deviation (`scale_rewards="group"`), that of every member's reward in `samples`
    (`"batch"`, TRL's batch scaling: one scale for the step), or no division at all (`"none"`); return each
    group's reward standard deviation.

    A group's members are what the grouping's `members` says (`pettingllms.rollout.grouping.Grouping.members`;
    None: the episode of a sample that carries one, else the sample): its candidates, or its episodes, when the
    statistics count each episode's return once, however many steps it took, and every step gets its episode's
    advantage (averaging over samples would weigh a long failed episode more than a short success and pull the
    baseline toward failures). The standard deviation is the unbiased one (TRL's `torch.std`); a
    group of one member, or one whose rewards are all equal, gets advantage 0 for every sample (no signal).
    `per_agent` (Dr. MAS, module docstring) computes all of it per agent within each group; the returned standard
    deviations are then keyed by `statistics_key(sample, per_agent=True)`.

    >>> from pettingllms.backends.base import Generation
    >>> group = [Sample("g", 0, 0, "a", "p", "", "", r, 0.0, r, Generation("")) for r in (1.0, 0.0)]
    >>> stds = compute_advantages(group)
    >>> [round(s.advantage, 3) for s in group]
    [0.707, -0.707]
    """
    groups: dict[str, dict[object, list[Sample]]] = defaultdict(lambda: defaultdict(list))
    for position, sample in enumerate(samples):
        groups[statistics_key(sample, per_agent)][_member(sample, position, members)].append(sample)
    if scale_rewards not in SCALE_REWARDS:
        raise ValueError(f"scale_rewards={scale_rewards!r} is not one of {list(SCALE_REWARDS)}")
    if baseline not in GROUP_BASELINES:
        raise ValueError(f"baseline={baseline!r} is not one of {list(GROUP_BASELINES)}")
    rewards_of = {
        group_id: np.array([_member_reward(group_id, steps) for steps in members.values()], dtype=np.float64)
        for group_id, members in groups.items()
    }
    batch_stds = _batch_stds(groups, rewards_of, per_agent)
    stds = {}
    for group_id, members in groups.items():
        rewards = rewards_of[group_id]
        std = float(rewards.std(ddof=1)) if len(rewards) > 1 else 0.0
        centred = _centred(rewards, baseline)
        batch_std = batch_stds[next(iter(members.values()))[0].agent if per_agent else ""]
        scale = {"group": std + EPSILON, "batch": batch_std + EPSILON, "none": 1.0}[scale_rewards]
        advantages = centred / scale
        if std == 0.0:
            advantages = np.zeros_like(rewards)
        for steps, advantage in zip(members.values(), advantages, strict=True):
            for sample in steps:
                sample.advantage = float(advantage)
        stds[group_id] = std
    return stds


def _centred(rewards: np.ndarray, baseline: str) -> np.ndarray:
    """`rewards` minus their baseline (`GROUP_BASELINES`); a group of one member is centred on itself."""
    if baseline == "max":
        return rewards - rewards.max()
    centred = rewards - rewards.mean()
    if baseline == "rloo" and len(rewards) > 1:  # r - (sum - r) / (G - 1) = G / (G - 1) * (r - mean)
        return centred * (len(rewards) / (len(rewards) - 1))
    return centred


def _member(sample: Sample, position: int, members: str | None) -> tuple[str, int]:
    """The member of its group that `sample` (at `position` in the batch) belongs to (`compute_advantages`)."""
    by_episode = sample.episode is not None if members is None else members == "episodes"
    if by_episode and sample.episode is None:
        raise ValueError(
            f"group {sample.group_id}: its grouping counts episodes as members, but a sample carries no episode "
            "(tree samples are members one by one)"
        )
    return ("episode", sample.episode) if by_episode else ("sample", position)


def _batch_stds(
    groups: dict[str, dict[object, list[Sample]]], rewards_of: dict[str, np.ndarray], per_agent: bool
) -> dict[str, float]:
    """The batch standard deviation of every member's reward ("" -> the step's), or (`per_agent`) one per agent."""
    pooled: dict[str, list[np.ndarray]] = defaultdict(list)
    for group_id, members in groups.items():
        pooled[next(iter(members.values()))[0].agent if per_agent else ""].append(rewards_of[group_id])
    stds = {}
    for key, parts in pooled.items():
        every = np.concatenate(parts)
        stds[key] = float(every.std(ddof=1)) if len(every) > 1 else 0.0
    return stds if stds else {"": 0.0}


def summed_turn_advantages(samples: Sequence[Sample], *, scale_rewards: str = "group") -> dict[str, float]:
    """The naive turn-indexed estimator (module docstring, `turn_baseline="summed"`), for `trajectory_turn`
    samples: each step's own reward (`step_reward`) is normalised within its turn-index group, and a sample's
    advantage is the sum of its episode's normalised step rewards from its step on. Returns each group's standard
    deviation of step rewards, as `compute_advantages` does."""
    steps = [dataclasses.replace(sample, reward=_step_reward(sample)) for sample in samples]
    stds = compute_advantages(steps, scale_rewards=scale_rewards)
    by_episode: dict[int, list[int]] = defaultdict(list)
    for position, sample in enumerate(samples):
        by_episode[sample.episode].append(position)
    for positions in by_episode.values():  # in play order: a step's later steps follow it
        remaining = 0.0
        for position in reversed(positions):
            remaining += steps[position].advantage
            samples[position].advantage = remaining
    return stds


def _step_reward(sample: Sample) -> float:
    if sample.step_reward is None or sample.episode is None:
        raise ValueError(
            f"group {sample.group_id}: turn_baseline='summed' needs trajectory_turn samples (an episode and the "
            "reward of each step)"
        )
    return sample.step_reward


def _member_reward(group_id: str, steps: Sequence[Sample]) -> float:
    """The one reward of a group member (every step of an episode carries the episode's return)."""
    rewards = {sample.reward for sample in steps}
    if len(rewards) != 1:
        raise ValueError(
            f"group {group_id}: the steps of episode {steps[0].episode} carry different rewards {sorted(rewards)}; "
            "a trajectory sample's reward must be its episode's return"
        )
    return steps[0].reward


def samples_with_signal(
    samples: Sequence[Sample], stds: dict[str, float], *, per_agent: bool = False
) -> list[Sample]:
    """The samples of groups whose rewards vary (DAPO's dynamic sampling drops the others); `per_agent` as given to
    `compute_advantages`."""
    return [sample for sample in samples if stds[statistics_key(sample, per_agent)] > 0.0]
