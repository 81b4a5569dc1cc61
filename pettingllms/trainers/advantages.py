"""Group-relative advantages (SPEC section 2), as TRL's GRPO computes them, over arbitrary group keys."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from pettingllms.trainers.rollout import Sample

EPSILON = 1e-4
"""Added to the group's standard deviation, as in TRL."""


def compute_advantages(samples: Sequence[Sample], *, scale_rewards: bool = True) -> dict[str, float]:
    """Set `sample.advantage = (r - mean) / (std + eps)` within each group (`/ (std + eps)` only when
    `scale_rewards`); return each group's reward standard deviation.

    A group's members are its candidates, or, for samples that carry an `episode` (the trajectory baseline), its
    episodes: the statistics count each episode's return once, however many steps it took, and every step gets
    its episode's advantage (averaging over samples would weigh a long failed episode more than a short success
    and pull the baseline toward failures). The standard deviation is the unbiased one (TRL's `torch.std`); a
    group of one member, or one whose rewards are all equal, gets advantage 0 for every sample (no signal).

    >>> from pettingllms.policies.base import Generation
    >>> group = [Sample("g", 0, 0, "a", "p", "", "", r, 0.0, r, Generation("")) for r in (1.0, 0.0)]
    >>> stds = compute_advantages(group)
    >>> [round(s.advantage, 3) for s in group]
    [0.707, -0.707]
    """
    groups: dict[str, dict[object, list[Sample]]] = defaultdict(lambda: defaultdict(list))
    for position, sample in enumerate(samples):
        member = ("episode", sample.episode) if sample.episode is not None else ("sample", position)
        groups[sample.group_id][member].append(sample)
    stds = {}
    for group_id, members in groups.items():
        rewards = np.array([_member_reward(group_id, steps) for steps in members.values()], dtype=np.float64)
        std = float(rewards.std(ddof=1)) if len(rewards) > 1 else 0.0
        centred = rewards - rewards.mean()
        advantages = centred / (std + EPSILON) if scale_rewards else centred
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


def informative(samples: Sequence[Sample], stds: dict[str, float]) -> list[Sample]:
    """The samples of groups whose rewards vary (DAPO's dynamic sampling drops the others)."""
    return [sample for sample in samples if stds[sample.group_id] > 0.0]
