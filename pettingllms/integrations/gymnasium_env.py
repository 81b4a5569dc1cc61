"""A `gymnasium.Env` view of each environment's single-agent workflow, for single-agent RL code.

    import gymnasium, pettingllms
    env = gymnasium.make("pettingllms/PlanPath-v0")          # registered when pettingllms is imported
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("<answer>R R D</answer>")

`SingleAgentEnv(env_id, **kwargs)` plays `pettingllms.make(env_id, workflow="single", **kwargs)` (so
`gymnasium.make("pettingllms/Sokoban-v0", tier="hard")` plays a difficulty tier, docs/tiers.md): its one agent's
observation is the gymnasium observation, its reward since its last action the step's reward, and `info` the
agent's info (`reward_team`, `reward_local`, `turn`, `success`, `error`). Observations are `TextObservation`s in
`observation_space` (`PrintableText`); every `str` is in `action_space` (`AnyText`). It passes gymnasium's
`check_env` and works with `RecordEpisodeStatistics` and `SyncVectorEnv`. The multi-agent workflows stay behind
the PettingZoo API (`pettingllms.make`).
"""

from __future__ import annotations

from typing import Any

import gymnasium

import pettingllms
from pettingllms.core.text import AnyText, PrintableText, TextObservation

GYMNASIUM_IDS = {
    "pettingllms/Sokoban-v0": "sokoban-v0",
    "pettingllms/Sudoku-v0": "sudoku-v0",
    "pettingllms/PlanPath-v0": "plan-path-v0",
    "pettingllms/PlanPathRelay-v0": "plan-path-relay-v0",
    "pettingllms/Code-v0": "code-v0",
    "pettingllms/Math-v0": "math-v0",
    "pettingllms/Bargain-v0": "bargain-v0",
}
"""Gymnasium id -> the pettingllms id whose single-agent workflow it plays."""


class SingleAgentEnv(gymnasium.Env[str, str]):
    """The single-agent workflow of `env_id` as a `gymnasium.Env` (see the module docstring)."""

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 1}
    """The puzzles' render modes (each instance has its env's own: code and math refuse "rgb_array" at make)."""

    def __init__(self, env_id: str, render_mode: str | None = None, **kwargs: Any):
        self.aec = pettingllms.make(env_id, workflow="single", render_mode=render_mode, **kwargs)
        (self.agent,) = self.aec.possible_agents
        self.metadata = {**self.aec.unwrapped.metadata, "render_fps": 1}
        self.render_mode = render_mode
        self.observation_space: PrintableText = self.aec.observation_space(self.agent)
        self.action_space: AnyText = self.aec.action_space(self.agent)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[TextObservation, dict[str, Any]]:
        super().reset(seed=seed)
        self.aec.reset(seed=seed, options=options)
        observation, _, _, _, info = self.aec.last()
        return observation, dict(info)

    def step(self, action: str) -> tuple[TextObservation, float, bool, bool, dict[str, Any]]:
        """Play `action`; a finished episode must be reset first (gymnasium's contract)."""
        if self.agent not in self.aec.agents:
            raise gymnasium.error.ResetNeeded("the episode is over: call reset() before step()")
        self.aec.step(action)
        observation, reward, terminated, truncated, info = self.aec.last()
        if terminated or truncated:  # the AEC env waits for the finished agent's None step: give it
            self.aec.step(None)
        return observation, float(reward), bool(terminated), bool(truncated), dict(info)

    def render(self):
        return self.aec.render()

    def close(self) -> None:
        self.aec.close()


def register_gymnasium_ids() -> None:
    """Register every `GYMNASIUM_IDS` entry with gymnasium (idempotent; imports no environment module)."""
    for gym_id, env_id in GYMNASIUM_IDS.items():
        if gym_id not in gymnasium.registry:
            gymnasium.register(gym_id, entry_point=f"{__name__}:SingleAgentEnv", kwargs={"env_id": env_id})
