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

    The standard deviation is the unbiased one (TRL's `torch.std`); a group of one sample, or one whose rewards
    are all equal, gets advantage 0 for every member (it carries no signal).

    >>> from pettingllms.policies.base import Generation
    >>> group = [Sample("g", 0, 0, "a", "p", "", "", r, 0.0, r, Generation("")) for r in (1.0, 0.0)]
    >>> stds = compute_advantages(group)
    >>> [round(s.advantage, 3) for s in group]
    [0.707, -0.707]
    """
    groups: dict[str, list[Sample]] = defaultdict(list)
    for sample in samples:
        groups[sample.group_id].append(sample)
    stds = {}
    for group_id, members in groups.items():
        rewards = np.array([member.reward for member in members], dtype=np.float64)
        std = float(rewards.std(ddof=1)) if len(rewards) > 1 else 0.0
        centred = rewards - rewards.mean()
        advantages = centred / (std + EPSILON) if scale_rewards else centred
        if std == 0.0:
            advantages = np.zeros_like(rewards)
        for member, advantage in zip(members, advantages, strict=True):
            member.advantage = float(advantage)
        stds[group_id] = std
    return stds


def informative(samples: Sequence[Sample], stds: dict[str, float]) -> list[Sample]:
    """The samples of groups whose rewards vary (DAPO's dynamic sampling drops the others)."""
    return [sample for sample in samples if stds[sample.group_id] > 0.0]
