"""What the rollout engine reads on an environment: PettingZoo's AEC API, plus a few members it does not define.

`RolloutEngine` (`pettingllms.rollout.engine`: training's `collect` and evaluation's `evaluate`, which
`pettingllms-eval`'s runner plays through) reads exactly the members of `RolloutEnv` on the env its `env_fn`
builds, and those of `RolloutEnvState` on that env's `unwrapped`. Beyond the AEC API, that is `clone()`,
`unwrapped.turn`, `unwrapped.success`, `unwrapped.alpha` and three `infos` entries (`INFO_KEYS`).
`pettingllms.core.env.TextAECEnv` provides them all (and `pettingllms.make`'s wrappers keep them); a plain
PettingZoo `AECEnv` lacks them, and `pettingllms.core.adapter.AECEnvAdapter` adds them. The engine checks every env
it builds with `check_rollout_env` right after `reset` (the AEC dicts exist only then), so a missing member is
one `EnvProtocolError` naming them all, before any model is asked for anything.

Beyond the members, two contracts the check cannot see:

- With an env pool (`pettingllms.pools`) the env is pickled to a worker, stepped there and pickled back: it must
  pickle, and the copy it comes back as must be what `clone()` then `step` gives here.
- `rewards[a] == unwrapped.alpha * infos[a]["reward_team"] + infos[a]["reward_local"]` after every step: the
  engine scores a candidate by `rewards` alone (`team_credit="step"`, evaluation) or by the two parts
  (`team_credit="turn"`), and both must rank alike.

Not part of the protocol (read elsewhere, only where used): `unwrapped.solution(agent)` and
`unwrapped.random_answer(agent, rng)` by the oracle and random baselines (`pettingllms.backends.baselines`), and
`unwrapped.STOP_STRINGS` by the trainer and `pettingllms-eval` when no stop strings are configured, and
`unwrapped.instance_key()` by the evaluation suites (`pettingllms.eval.suites`: each instance once; an env without
it gets its seeds unchecked).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from pettingllms.core.errors import EnvProtocolError

INFO_KEYS = ("reward_team", "reward_local", "step_turn")
"""The entries every live agent's `infos` holds from `reset` on (the engine reads them after each step)."""


@runtime_checkable
class RolloutEnvState(Protocol):
    """What the engine reads on `env.unwrapped`: the raw env under any wrappers."""

    turn: int
    """The 0-based index of the turn the next action happens in; each agent acts at most once in a turn. Read before
    every agent step: the step's turn keys its group `(instance, turn, agent)` and `Sample.turn`, and an episode's
    `EpisodeResult.turns` is its last step's turn + 1; read on the probe copies of turn credit, which play on
    while the next agent still acts in the candidate's turn (`infos[agent]["step_turn"]`)."""

    success: bool
    """Whether the task is solved in the current state. Read once an episode has ended: `EpisodeResult.success`,
    the success rate of training's metrics and of every evaluation."""

    alpha: float
    """The weight of the team reward in `rewards[a] = alpha * reward_team + reward_local`. Read with
    `team_credit="turn"`: a candidate scores `alpha * team + local`, `team` being the `reward_team` of its step and of
    the later agents' greedy steps in its turn."""


@runtime_checkable
class RolloutEnv(Protocol):
    """An environment the rollout engine can play: what it reads on the env `env_fn` builds (module docstring).

    The members from `possible_agents` to `observe` are PettingZoo's AEC API, with the engine's use of each;
    `clone` and `unwrapped`'s `RolloutEnvState` are this package's. An env satisfies the protocol once it is reset.
    """

    possible_agents: list[str]
    """Every agent of the env. Keys each `EpisodeResult.returns`."""

    agents: list[str]
    """The agents still in the episode; the episode is over when it is empty."""

    agent_selection: str
    """The agent to act next: the engine samples its policy's K candidates for it."""

    terminations: dict[str, bool]
    """Whether each agent has terminated; a finished agent is stepped with `None` until a live one is selected."""

    truncations: dict[str, bool]
    """Whether each agent has been truncated; treated as `terminations` is."""

    rewards: dict[str, float]
    """Each agent's reward of the latest step (not a running sum). The acting agent's is its committed step's reward
    (in `EpisodeResult.returns`) and, with `team_credit="step"` and in evaluation, a candidate's score."""

    infos: dict[str, dict[str, Any]]
    """Per agent, from `reset` on, `INFO_KEYS`: `reward_team` and `reward_local` (floats: the acting agent's are its
    sample's `reward_team` and `reward_local`; another agent's `reward_local` is what the step paid it, added to its
    return) and `step_turn` (int: the turn the latest step happened in). Optional: `reward_paid` (what a later
    agent's step paid this one directly, added to its candidate's turn credit), `error`, `parse_error` and
    `program` (copied into the acting agent's `Sample`)."""

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start an episode; the engine calls it once per episode with an int seed and the reset options."""

    def step(self, action: str | None) -> None:
        """Apply the selected agent's action: a completion's text (`Generation.action`), or `None` for an agent that
        has finished. Any string is a legal action."""

    def observe(self, agent: str) -> str:
        """The agent's prompt: `str(observe(agent))` is what its policy is given, the same for all K candidates."""

    def clone(self) -> RolloutEnv:
        """An exact, independent copy: stepping it never changes the original. Each candidate is stepped on its own
        copy (the best one becomes the episode's state), the probes of turn credit play on further copies, and an
        `observer` gets a copy of every step's starting state."""

    @property
    def unwrapped(self) -> RolloutEnvState:
        """The raw env, where the engine reads `turn`, `success` and `alpha`."""


def missing_members(env: object) -> list[str]:
    """The members of the protocol that `env`, already reset, lacks: methods as `clone()`, state as
    `unwrapped.turn`, info entries as `infos[agent]['step_turn']` (each once, whichever agents lack it); empty
    when it has them all. Only presence is checked, not meaning."""
    missing = [_shown(RolloutEnv, name) for name in _members(RolloutEnv) if not hasattr(env, name)]
    state = getattr(env, "unwrapped", None)
    if state is not None:
        missing += [f"unwrapped.{name}" for name in _members(RolloutEnvState) if not hasattr(state, name)]
    infos = getattr(env, "infos", None)
    if isinstance(infos, Mapping):
        live = [infos.get(agent, {}) for agent in getattr(env, "agents", ())]
        missing += [f"infos[agent][{key!r}]" for key in INFO_KEYS if any(key not in info for info in live)]
    return missing


def check_rollout_env(env: object) -> None:
    """Raise `EnvProtocolError` naming every member of the protocol that `env` (already reset) lacks, and the fix."""
    missing = missing_members(env)
    if missing:
        raise EnvProtocolError(
            f"{type(env).__name__} lacks what the rollout engine reads beyond PettingZoo's AEC API: "
            f"{', '.join(missing)} (pettingllms.core.protocol.RolloutEnv). Subclass "
            "pettingllms.core.env.TextAECEnv, or wrap a plain PettingZoo AECEnv in "
            "pettingllms.AECEnvAdapter(env, success=...)."
        )


@functools.cache
def _members(protocol: type) -> tuple[str, ...]:
    """The names `protocol` declares, in order: its annotated attributes, then its methods and properties."""
    declared = [
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    ]
    return (*protocol.__annotations__, *declared)


def _shown(protocol: type, name: str) -> str:
    """`name` as the error shows it: a method with `()`."""
    return f"{name}()" if callable(vars(protocol).get(name)) else name
