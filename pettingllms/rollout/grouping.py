"""Which samples are compared with each other: each grouping is one `Grouping` (SPEC section 2), in `GROUPINGS`.

A `Grouping` says everything that differs between groupings: its key (a group is the set of samples with one
key; keys are strings, the same in memory and in rollout dumps), how its rollouts sample (`sampling`: "tree", K
candidates per agent step from one shared state, one committed; or "episodes", K independent episodes per
instance), the reward its samples carry (`reward`: the candidate's own score, the episode's return, or the return
to go), what a member of a group is for its statistics (`members`: each candidate, or each episode counted once),
its least K (`min_generations`) and the `turn_baseline`s it admits. The rollout engine reads `sampling` and
`reward`, the advantages read `members`, and the config reads the name, `min_generations` and `turn_baselines`.

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

To add a grouping: a key function here taking `(instance, turn, agent, prompt)`, and one `Grouping` in `GROUPINGS`
(the config then accepts its name as `grouping`); test its key on hand-worked samples (tests/test_credit_assignment.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable

SAMPLINGS = ("tree", "episodes")
REWARDS = ("candidate", "episode_return", "return_to_go")
MEMBERS = ("candidates", "episodes")


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


@dataclasses.dataclass(frozen=True)
class Grouping:
    """One grouping (module docstring): its `name`, its `key` function `(instance, turn, agent, prompt) -> str`, its
    `sampling` ("tree" or "episodes"), the `reward` its samples carry ("candidate", "episode_return" or
    "return_to_go"), its `members` ("candidates" or "episodes") and the `turn_baselines` it admits."""

    name: str
    key: Callable[[int, int, str, str], str]
    sampling: str
    reward: str
    members: str
    turn_baselines: tuple[str, ...] = ("return_to_go",)

    def __post_init__(self) -> None:
        for field, allowed in (("sampling", SAMPLINGS), ("reward", REWARDS), ("members", MEMBERS)):
            if getattr(self, field) not in allowed:
                raise ValueError(
                    f"Grouping {self.name!r}: {field}={getattr(self, field)!r}, not one of {allowed}"
                )

    @property
    def min_generations(self) -> int:
        """The least K: a tree's group needs two candidates; K independent episodes work from one."""
        return 2 if self.sampling == "tree" else 1

    def group_id(self, instance: int, turn: int, agent: str, prompt: str) -> str:
        """The key of the group of a sample of `agent` at `turn` of `instance`, prompted with `prompt`."""
        return self.key(instance, turn, agent, prompt)


def _tree(name: str, key: Callable[[int, int, str, str], str]) -> Grouping:
    """A grouping of the tree's candidates, each scored on its own and counted as a member."""
    return Grouping(name, key, sampling="tree", reward="candidate", members="candidates")


GROUPINGS: dict[str, Grouping] = {
    "agent_turn": _tree("agent_turn", agent_turn_key),
    "agent": _tree("agent", agent_key),
    "turn": _tree("turn", turn_key),
    "trajectory": Grouping(
        "trajectory", trajectory_key, sampling="episodes", reward="episode_return", members="episodes"
    ),
    "anchor_state": _tree("anchor_state", anchor_state_key),
    "trajectory_turn": Grouping(
        "trajectory_turn",
        agent_turn_key,
        sampling="episodes",
        reward="return_to_go",
        members="episodes",
        turn_baselines=("return_to_go", "summed"),
    ),
}
"""Every grouping by name (the config's `grouping` takes these names)."""


def group_key(grouping: str, instance: int, turn: int, agent: str, prompt: str) -> str:
    """The key of the group that a sample of `agent` at `turn` of `instance`, prompted with `prompt`, belongs to
    under the grouping named `grouping` (one of `GROUPINGS`)."""
    return GROUPINGS[grouping].group_id(instance, turn, agent, prompt)
