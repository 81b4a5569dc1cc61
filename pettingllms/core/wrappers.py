"""The standard wrappers that `pettingllms.make` applies, in a fixed order.

1. `TextActionChecker` (innermost): a live agent's action must be a `str` (numpy strings are converted), a
   finished agent's must be `None`. Anything else is a programming error and raises `TypeError` at once,
   naming the agent and the type. The *content* of a string is never an error: environments turn unusable
   text into a penalty and an `infos[agent]["error"]`.
2. `OrderEnforcing` (outermost): PettingZoo's `OrderEnforcingWrapper` (no step/observe before reset).

Both keep `clone()` working on the wrapped env: it returns a deep copy of the whole wrapper chain.

`JointTurns(env)` (`make(..., turns="joint")`, outermost) makes the agents of a turn act together: each observes
the env as it stood when the turn began, so no agent reads an answer of the turn it acts in.

`ObservationTransform(env, fn)` is for users who rewrite observations: `fn` may return a plain `str` and the
wrapper re-wraps it as a `TextObservation` inside the observation space (a plain `str` has no `dtype`, which
PettingZoo's `api_test` checks).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
from pettingzoo import AECEnv
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import BaseWrapper, OrderEnforcingWrapper

from pettingllms.core.text import OBSERVATION_MAX_CHARS, TextObservation, sanitize, truncate


class _Cloneable:
    def clone(self):
        """Return an independent deep copy of the wrapped environment (see `TextAECEnv.clone`)."""
        return copy.deepcopy(self)


class TextActionChecker(_Cloneable, BaseWrapper):
    """Reject non-text actions with a clear `TypeError` (see module docstring)."""

    def last(self, observe: bool = True):
        return self.env.last(observe)  # the inner env's own attributes, not a getattr chain per field

    def step(self, action) -> None:
        env = self.env
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            if action is not None:
                raise TypeError(
                    f"agent {agent!r} has finished: its action must be None, got {type(action).__name__}"
                )
        elif type(action) is not str:  # a plain str, the common case, passes one check
            if isinstance(action, np.str_):
                action = str(action)
            elif not isinstance(action, str):
                raise TypeError(
                    f"the action of agent {agent!r} must be a str (the raw model completion), "
                    f"got {type(action).__name__}"
                )
        env.step(action)


class OrderEnforcing(_Cloneable, OrderEnforcingWrapper):
    """PettingZoo's call-order checks, with `clone()`."""

    def last(self, observe: bool = True):
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.last(observe)

    def step(self, action) -> None:
        if self._has_reset and self.unwrapped.agents:  # PettingZoo's checks, without its getattr chain
            self._has_updated = True
            self.env.step(action)
        else:
            super().step(action)


class ObservationTransform(_Cloneable, BaseWrapper):
    """`env` whose observations are `fn(observation)`, re-wrapped as `TextObservation` (sanitized, truncated to
    the observation space), so that the result still passes PettingZoo's `api_test`. `fn` must be picklable
    for `clone()` and env pools (a module-level function, not a lambda)."""

    def __init__(self, env: AECEnv, fn: Callable[[str], str]):
        super().__init__(env)
        self.fn = fn

    def observe(self, agent: str) -> TextObservation:
        text = sanitize(str(self.fn(str(self.env.observe(agent)))))
        return TextObservation(truncate(text, OBSERVATION_MAX_CHARS))


class JointTurns(_Cloneable, BaseWrapper):
    """`env` whose agents of a turn act together, as CoMLRL's joint turns and PettingZoo's parallel API have them:
    while an episode runs, `observe(agent)` is the agent's observation at the start of the current turn (taken for
    every live agent at `reset` and whenever a step advances `env.unwrapped.turn`), so an agent never reads an
    answer given in the turn it acts in; the answers are still stepped one by one in the AEC order, and rewards,
    infos and the end of an episode are the env's own. Once the episode is over (no agent left, or the selected
    one finished) `observe` is the env's own: the final observations. A one-agent env is unchanged."""

    def __init__(self, env: AECEnv):
        super().__init__(env)
        self._turn_start: dict[str, TextObservation] = {}

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.env.reset(seed=seed, options=options)
        self._snapshot()

    def step(self, action) -> None:
        turn = self.env.unwrapped.turn
        self.env.step(action)
        if self.env.unwrapped.turn != turn:
            self._snapshot()

    def observe(self, agent: str) -> TextObservation:
        env = self.env.unwrapped
        acting = env.agent_selection
        over = not env.agents or env.terminations[acting] or env.truncations[acting]
        if over or agent not in self._turn_start:
            return self.env.observe(agent)
        return self._turn_start[agent]

    def _snapshot(self) -> None:
        self._turn_start = {agent: self.env.observe(agent) for agent in self.env.unwrapped.agents}


def wrap(env: AECEnv) -> AECEnv:
    """Apply the standard wrappers to a raw environment, in the documented order."""
    return OrderEnforcing(TextActionChecker(env))
