"""`AECEnvAdapter`: a plain PettingZoo `AECEnv` made playable by the rollout engine (`pettingllms.core.protocol`).

Adapted rather than refused, because every member the engine reads beyond the AEC API has an honest value that
needs nothing of the env but its AEC API, save the one answer that API cannot give (is the task solved?), which
the caller passes:

| member | the adapter's value |
|---|---|
| `unwrapped.turn` | counted here: a turn ends when the agent to act next has already acted in it, so each agent acts at most once per turn (round robin: moves // agents; an agent that must answer again, after an invalid move, starts a new turn), which AT-GRPO's groups `(instance, turn, agent)` need |
| `unwrapped.success` | `success(env)`, the caller's function of the plain env, asked whenever read (no default: the AEC API has no notion of a solved task) |
| `unwrapped.alpha` | 1.0, and every reward is local: `infos[a]["reward_team"]` is 0.0 (the AEC API cannot tell a team's reward from an agent's), so scores are the env's own rewards; not an argument, since with no team reward any weight gives the same scores |
| `infos[a]` | the plain env's entries, plus `reward_team` 0.0, `reward_local` = `rewards[a]` (PettingZoo's `rewards` are the latest step's), `step_turn` (the turn of the latest step), and `reward_paid` = `rewards[a]` for an agent the step of another agent rewarded (turn credit adds what the later agents of a turn pay a candidate's agent) |
| `clone()` | `copy.deepcopy` of the adapter with the plain env inside: exact and independent wherever the env's state deep-copies (no open files, processes or sockets); a function `success` is shared, not copied |

Everything else is the plain env's, read through: agents, selection, rewards, terminations, truncations, spaces,
rendering and truncation by its own limits (the adapter truncates nothing). Observations must be text (a `str` or
a subclass such as `numpy.str_`): the engine's prompt is `str(observe(agent))`, and the adapter raises `TypeError`
on anything else rather than prompt a model with an array's repr. `STOP_STRINGS` is empty (an answer runs to its
token budget); a trainer config's `stop_strings` sets others.

With an env pool (`pettingllms.pools`) the adapter is pickled, so the plain env and `success` must pickle (a
module-level function, not a lambda). To train with `pettingllms-train`, `register` a factory that takes the
`workflow`, `alpha` and `max_turns` the trainer passes to `make` and returns the adapter.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, ClassVar

from pettingzoo import AECEnv


class AECEnvAdapter(AECEnv):
    """`env`, a plain PettingZoo `AECEnv` with text observations, with the members the rollout engine reads (see
    the module docstring); `success(env)` says whether its task is solved. `unwrapped` is the adapter itself (it
    holds `turn`, `success` and `alpha`); the plain env is `adapter.env`."""

    STOP_STRINGS: ClassVar[tuple[str, ...]] = ()
    alpha: ClassVar[float] = 1.0

    def __init__(self, env: AECEnv, *, success: Callable[[AECEnv], bool]):
        super().__init__()
        self.env = env
        self._success = success
        self.metadata = env.metadata
        self.render_mode = getattr(env, "render_mode", None)
        self.turn = 0
        self._acted: set[str] = set()
        self.infos: dict[str, dict[str, Any]] = {}

    @property
    def success(self) -> bool:
        return bool(self._success(self.env))

    # the plain env's AEC state, read through
    possible_agents = property(lambda self: self.env.possible_agents)
    agents = property(lambda self: self.env.agents)
    agent_selection = property(lambda self: self.env.agent_selection)
    rewards = property(lambda self: self.env.rewards)
    terminations = property(lambda self: self.env.terminations)
    truncations = property(lambda self: self.env.truncations)
    _cumulative_rewards = property(lambda self: self.env._cumulative_rewards)

    def observation_space(self, agent: str) -> Any:
        return self.env.observation_space(agent)

    def action_space(self, agent: str) -> Any:
        return self.env.action_space(agent)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.env.reset(seed=seed, options=options)
        self.turn = 0
        self._acted = set()
        self._read_infos(None, 0)

    def step(self, action: str | None) -> None:
        agent = self.env.agent_selection
        acting = None if self._finished(agent) else agent
        step_turn = self.turn
        self.env.step(action)
        if acting is not None:
            self._acted.add(acting)
        upcoming = self.env.agent_selection if self.env.agents else None
        if upcoming in self._acted and not self._finished(upcoming):
            self.turn += 1
            self._acted = set()
        self._read_infos(acting, step_turn)

    def observe(self, agent: str) -> str:
        observation = self.env.observe(agent)
        if not isinstance(observation, str):
            raise TypeError(
                f"{type(self.env).__name__}.observe({agent!r}) returned {type(observation).__name__}: the rollout "
                "engine prompts with text, so observations must be str (render them as text in the env)"
            )
        return observation

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def clone(self) -> AECEnvAdapter:
        """An independent deep copy, the plain env included (module docstring)."""
        return copy.deepcopy(self)

    def _finished(self, agent: str) -> bool:
        return bool(self.env.terminations[agent] or self.env.truncations[agent])

    def _read_infos(self, acting: str | None, step_turn: int) -> None:
        """Every agent's `infos`: the plain env's, with the protocol's entries for the step `acting` just took."""
        self.infos = {}
        for agent in self.env.agents:
            reward = float(self.env.rewards.get(agent, 0.0))
            info = {
                **self.env.infos.get(agent, {}),
                "reward_team": 0.0,
                "reward_local": reward,
                "step_turn": step_turn,
            }
            if agent != acting and reward:
                info["reward_paid"] = reward
            self.infos[agent] = info
