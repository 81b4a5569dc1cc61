"""Which samples are compared with each other: one key function per grouping (SPEC section 2).

A group is the set of samples with one key; advantages are computed within it
(`pettingllms.trainers.advantages`). Keys are strings, the same in memory and in rollout dumps.

| grouping | key | members |
|---|---|---|
| `agent_turn` (AT-GRPO) | `instance/turn/agent` | the K candidates of one agent at one turn, from one shared state |
| `agent` (ablation) | `instance/agent` | every candidate of one agent over all its turns (prompts differ) |
| `turn` (ablation) | `instance/turn` | every candidate of one turn over all agents (prompts and roles differ) |
| `trajectory` (GRPO baseline) | `instance` | the K independent episodes of one instance, each counted once |
| `anchor_state` (GiGPO) | `anchor/agent/digest of the prompt` | every candidate of one agent from an equal state (the same observation), pooled across instances and turns |
| `trajectory_turn` (MT-GRPO) | `instance/turn/agent` | one agent's steps at one turn index across the K independent episodes of one instance (states differ) |

`anchor_state` is GiGPO's anchor-state grouping (Feng et al., 2025; verl-agent) on AT-GRPO's tree: a candidate is
compared with every candidate sampled from the same state as its agent sees it, wherever the state recurs (an
instance that repeats, a turn that left the state unchanged), so repeated states give larger groups and one
baseline. The key is the agent and a digest of its prompt: equal prompts are equal states for the policy, whose
input is the prompt.

`trajectory_turn` groups the K independent episodes' steps by turn index, as multi-turn GRPO does (MT-GRPO, Wei et
al., 2025); a sample's reward is its return-to-go, and `pettingllms.trainers.advantages` computes the baseline that
stays unbiased when the policy decides how long an episode runs (`turn_baseline`).

To add a grouping: a key function here taking `(instance, turn, agent, prompt)` and its name in `KEYS` (the config
then accepts it as `grouping`); if its rollouts are the tree's (K candidates per agent step, one committed), its name
in `TREE_GROUPINGS` too (the config then requires K >= 2), else in `TRAJECTORY_GROUPINGS` (K independent episodes
per instance, `RolloutEngine.collect`), and the reward its samples carry in `pettingllms.rollout.engine`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable


def agent_turn_key(instance: int, turn: int, agent: str, prompt: str) -> str:
    """AT-GRPO's group: one agent's candidates at one turn of one instance."""
    return f"{instance}/{turn}/{agent}"


def agent_key(instance: int, turn: int, agent: str, prompt: str) -> str:
    """Ablation: one agent's candidates over every turn of one instance."""
    return f"{instance}/{agent}"


def turn_key(instance: int, turn: int, agent: str, prompt: str) -> str:
    """Ablation: every agent's candidates of one turn of one instance."""
    return f"{instance}/{turn}"


def trajectory_key(instance: int, turn: int, agent: str, prompt: str) -> str:
    """The trajectory baseline: every episode played from one instance."""
    return f"{instance}"


def anchor_state_key(instance: int, turn: int, agent: str, prompt: str) -> str:
    """GiGPO's anchor state: every candidate of `agent` from the state its prompt shows, in any instance or turn."""
    return f"anchor/{agent}/{hashlib.blake2b(prompt.encode(), digest_size=8).hexdigest()}"


KEYS: dict[str, Callable[[int, int, str, str], str]] = {
    "agent_turn": agent_turn_key,
    "agent": agent_key,
    "turn": turn_key,
    "trajectory": trajectory_key,
    "anchor_state": anchor_state_key,
    "trajectory_turn": agent_turn_key,
}
GROUPINGS = tuple(KEYS)
TREE_GROUPINGS = ("agent_turn", "agent", "turn", "anchor_state")
"""Groupings whose rollouts sample K candidates per agent step and commit one (the trajectory groupings play K
independent episodes per instance)."""
TRAJECTORY_GROUPINGS = ("trajectory", "trajectory_turn")


def group_key(grouping: str, instance: int, turn: int, agent: str, prompt: str) -> str:
    """The key of the group that a sample of `agent` at `turn` of `instance`, prompted with `prompt`, belongs to
    under `grouping` (one of `GROUPINGS`)."""
    return KEYS[grouping](instance, turn, agent, prompt)
