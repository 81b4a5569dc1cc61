"""Group-relative advantages (SPEC section 2), as TRL's GRPO computes them, over arbitrary group keys."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from pettingllms.rollout.samples import Sample

EPSILON = 1e-4
"""Added to the group's standard deviation, as in TRL."""


SCALE_REWARDS = ("group", "batch", "none")
"""TRL's `scale_rewards`: divide the centred rewards by the group's std, by the whole batch's, or by nothing."""


def compute_advantages(samples: Sequence[Sample], *, scale_rewards: str = "group") -> dict[str, float]:
    """Set `sample.advantage = (r - mean) / (std + eps)` within each group, where `mean` is the group's mean and
    `std` the group's standard deviation (`scale_rewards="group"`), that of every member's reward in `samples`
    (`"batch"`, TRL's batch scaling: one scale for the step), or no division at all (`"none"`); return each
    group's reward standard deviation.

    A group's members are its candidates, or, for samples that carry an `episode` (the trajectory baseline), its
    episodes: the statistics count each episode's return once, however many steps it took, and every step gets
    its episode's advantage (averaging over samples would weigh a long failed episode more than a short success
    and pull the baseline toward failures). The standard deviation is the unbiased one (TRL's `torch.std`); a
    group of one member, or one whose rewards are all equal, gets advantage 0 for every sample (no signal).

    >>> from pettingllms.backends.base import Generation
    >>> group = [Sample("g", 0, 0, "a", "p", "", "", r, 0.0, r, Generation("")) for r in (1.0, 0.0)]
    >>> stds = compute_advantages(group)
    >>> [round(s.advantage, 3) for s in group]
    [0.707, -0.707]
    """
    groups: dict[str, dict[object, list[Sample]]] = defaultdict(lambda: defaultdict(list))
    for position, sample in enumerate(samples):
        member = ("episode", sample.episode) if sample.episode is not None else ("sample", position)
        groups[sample.group_id][member].append(sample)
    if scale_rewards not in SCALE_REWARDS:
        raise ValueError(f"scale_rewards={scale_rewards!r} is not one of {list(SCALE_REWARDS)}")
    rewards_of = {
        group_id: np.array([_member_reward(group_id, steps) for steps in members.values()], dtype=np.float64)
        for group_id, members in groups.items()
    }
    every = np.concatenate(list(rewards_of.values())) if rewards_of else np.zeros(0)
    batch_std = float(every.std(ddof=1)) if len(every) > 1 else 0.0
    stds = {}
    for group_id, members in groups.items():
        rewards = rewards_of[group_id]
        std = float(rewards.std(ddof=1)) if len(rewards) > 1 else 0.0
        centred = rewards - rewards.mean()
        scale = {"group": std + EPSILON, "batch": batch_std + EPSILON, "none": 1.0}[scale_rewards]
        advantages = centred / scale
        if std == 0.0:
            advantages = np.zeros_like(rewards)
        for steps, advantage in zip(members.values(), advantages, strict=True):
            for sample in steps:
                sample.advantage = float(advantage)
        stds[group_id] = std
    return stds


def _member_reward(group_id: str, steps: Sequence[Sample]) -> float:
    """The one reward of a group member (every step of an episode carries the episode's return)."""
    rewards = {sample.reward for sample in steps}
    if len(rewards) != 1:
        raise ValueError(
            f"group {group_id}: the steps of episode {steps[0].episode} carry different rewards {sorted(rewards)}; "
            "a trajectory sample's reward must be its episode's return"
        )
    return steps[0].reward


def samples_with_signal(samples: Sequence[Sample], stds: dict[str, float]) -> list[Sample]:
    """The samples of groups whose rewards vary (DAPO's dynamic sampling drops the others)."""
    return [sample for sample in samples if stds[sample.group_id] > 0.0]
