"""Which samples are compared with each other: one key function per grouping (SPEC section 2).

A group is the set of samples with one key; advantages are computed within it
(`pettingllms.trainers.advantages`). Keys are strings, the same in memory and in rollout dumps.

| grouping | key | members |
|---|---|---|
| `agent_turn` (AT-GRPO) | `instance/turn/agent` | the K candidates of one agent at one turn, from one shared state |
| `agent` (ablation) | `instance/agent` | every candidate of one agent over all its turns (prompts differ) |
| `turn` (ablation) | `instance/turn` | every candidate of one turn over all agents (prompts and roles differ) |
| `trajectory` (GRPO baseline) | `instance` | the K independent episodes of one instance, each counted once |

To add a grouping: a key function here, its name in `KEYS`, and (if its rollouts are not the tree's) a collection
mode in `pettingllms.rollout.engine`.
"""

from __future__ import annotations

from collections.abc import Callable

from pettingllms.rollout.samples import Sample


def agent_turn_key(sample: Sample) -> str:
    """AT-GRPO's group: one agent's candidates at one turn of one instance."""
    return f"{sample.instance}/{sample.turn}/{sample.agent}"


def agent_key(sample: Sample) -> str:
    """Ablation: one agent's candidates over every turn of one instance."""
    return f"{sample.instance}/{sample.agent}"


def turn_key(sample: Sample) -> str:
    """Ablation: every agent's candidates of one turn of one instance."""
    return f"{sample.instance}/{sample.turn}"


def trajectory_key(sample: Sample) -> str:
    """The trajectory baseline: every episode played from one instance."""
    return f"{sample.instance}"


KEYS: dict[str, Callable[[Sample], str]] = {
    "agent_turn": agent_turn_key,
    "agent": agent_key,
    "turn": turn_key,
    "trajectory": trajectory_key,
}
GROUPINGS = tuple(KEYS)
TREE_GROUPINGS = ("agent_turn", "agent", "turn")
"""Groupings whose rollouts sample K candidates per agent step and commit one (the trajectory baseline plays K
episodes)."""


def assign_groups(samples: list[Sample], grouping: str) -> None:
    """Set every sample's `group_id` to its key under `grouping` (one of `GROUPINGS`)."""
    key = KEYS[grouping]
    for sample in samples:
        sample.group_id = key(sample)
