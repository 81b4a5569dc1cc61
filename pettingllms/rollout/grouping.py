"""Which samples are compared with each other: one key function per grouping (SPEC section 2).

A group is the set of samples with one key; advantages are computed within it
(`pettingllms.trainers.advantages`). Keys are strings, the same in memory and in rollout dumps.

| grouping | key | members |
|---|---|---|
| `agent_turn` (AT-GRPO) | `instance/turn/agent` | the K candidates of one agent at one turn, from one shared state |
| `agent` (ablation) | `instance/agent` | every candidate of one agent over all its turns (prompts differ) |
| `turn` (ablation) | `instance/turn` | every candidate of one turn over all agents (prompts and roles differ) |
| `trajectory` (GRPO baseline) | `instance` | the K independent episodes of one instance, each counted once |

To add a grouping: a key function here taking `(instance, turn, agent)` and its name in `KEYS` (the config then
accepts it as `grouping`); if its rollouts are the tree's (K candidates per agent step, one committed), its name in
`TREE_GROUPINGS` too (the config then requires K >= 2), else a collection mode in `RolloutEngine.collect`
(`pettingllms.rollout.engine`), as the trajectory baseline has.
"""

from __future__ import annotations

from collections.abc import Callable


def agent_turn_key(instance: int, turn: int, agent: str) -> str:
    """AT-GRPO's group: one agent's candidates at one turn of one instance."""
    return f"{instance}/{turn}/{agent}"


def agent_key(instance: int, turn: int, agent: str) -> str:
    """Ablation: one agent's candidates over every turn of one instance."""
    return f"{instance}/{agent}"


def turn_key(instance: int, turn: int, agent: str) -> str:
    """Ablation: every agent's candidates of one turn of one instance."""
    return f"{instance}/{turn}"


def trajectory_key(instance: int, turn: int, agent: str) -> str:
    """The trajectory baseline: every episode played from one instance."""
    return f"{instance}"


KEYS: dict[str, Callable[[int, int, str], str]] = {
    "agent_turn": agent_turn_key,
    "agent": agent_key,
    "turn": turn_key,
    "trajectory": trajectory_key,
}
GROUPINGS = tuple(KEYS)
TREE_GROUPINGS = ("agent_turn", "agent", "turn")
"""Groupings whose rollouts sample K candidates per agent step and commit one (the trajectory baseline plays K
episodes)."""


def group_key(grouping: str, instance: int, turn: int, agent: str) -> str:
    """The key of the group that a sample of `agent` at `turn` of `instance` belongs to under `grouping` (one of
    `GROUPINGS`)."""
    return KEYS[grouping](instance, turn, agent)
