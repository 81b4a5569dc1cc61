"""# Plan-Path (`plan-path-v0`)

Walk from the start `S` to the goal `G` of a grid with walls, moving up, down, left or right.

| | |
|---|---|
| agents (workflow "mas") | `tool`, `plan` (in that order each turn) |
| agents (workflow "single") | `plan` |
| action | any text; moves inside `<answer>...</answer>` as up/down/left/right or U/D/L/R, separated by spaces or commas; the `tool` agent may instead give a ```python block that prints the moves (it reads the map, as the observation shows it, on standard input) |
| observation | text: the task, the map (`@` you, `G` goal, `#` wall, `.` free), last turn's result, and for `plan` the tool agent's code, output and proposal |
| instances | seeded generator (`size`, `obstacle_density`); `reset(options={"grid": TEXT})` loads a map (`#` wall, `.` free, `S` start, `G` goal); `options={"split": "eval"}` draws from the evaluation split, disjoint from training |

## Rewards
As `pettingllms.envs.tool_plan` describes, with `potential = 1 - distance / initial_distance`, where distance is
the BFS distance to the goal (so the potential is 1 at the goal, 0 at the start, negative farther away).
A move into a wall or off the grid is an invalid action (penalty 0.05, the agent stays). Team reward 1.0 when
the goal is reached.

A completion cut by its length budget (`Generation.truncated`; `train/truncated/*` and `truncated_rate` count
them) is scored as written, after any thinking block: cut inside a thinking block, before `</answer>` closes, or
inside a ```python block that never closes, it holds no usable action and earns the parse-error penalty (0.1).

## Arguments
`size` (default 5: a 5x5 grid), `obstacle_density` (default 0.2), `min_distance` (default: size), plus `alpha`
(default 1.0), `workflow`, `max_turns` (default 4), `render_mode` ("ansi", "human", "rgb_array"), `sandbox`,
`tool_timeout`, `tool_memory_mb`, `max_moves_per_turn` (default: no cap; with a cap shorter than the path, the walk
spans turns: only the first moves of each answer are made).

`workflow="ensemble", num_agents=N` (1-16, default 3): tool agents `tool_0 .. tool_{N-2}` propose independently
(each simulated on a copy; paid its own simulated progress, then settled to the progress the team executes),
then `aggregator_0` sees every proposal and answers on the real puzzle (local reward: the team's progress; team
reward as above). `reward="outcome"` zeroes
every local reward (penalties included), keeping only the team's success reward.

## Version history
- v0: initial release; revised before release (2026-12) so that returns mean success: a tool agent is
  credited with the progress its team executes, not with its proposal again every turn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pettingllms.core.errors import ConfigError
from pettingllms.core.parsing import parse_moves
from pettingllms.envs.plan_path import grid as logic
from pettingllms.envs.tool_plan import ToolPlanEnv


class PlanPathEnv(ToolPlanEnv):
    """Grid path planning with a tool agent and a plan agent (see the module docstring)."""

    metadata = {**ToolPlanEnv.metadata, "name": "plan-path-v0"}
    INSTANCE_OPTION = "grid"
    TASK = (
        "Task: move from your position @ to the goal G. Each move goes one cell up, down, left or right; "
        "walls (#) and the grid's edge block you. Rows are numbered from the top, columns from the left."
    )
    ANSWER_FORMAT = (
        "Give the moves inside <answer>...</answer>, e.g. <answer>R R D L</answer> "
        "(up/down/left/right or U/D/L/R, separated by spaces or commas)."
    )

    def __init__(
        self, *, size: int = 5, obstacle_density: float = 0.2, min_distance: int | None = None, **kwargs: Any
    ):
        super().__init__(**kwargs)
        if not isinstance(size, int) or not 2 <= size <= 30:
            raise ConfigError(f"size={size!r} must be an integer in [2, 30]")
        if not 0.0 <= obstacle_density <= 0.6:
            raise ConfigError(f"obstacle_density={obstacle_density!r} must be in [0, 0.6]")
        self.size = size
        self.obstacle_density = float(obstacle_density)
        self.min_distance = size if min_distance is None else min_distance

    def _generate(self, rng: np.random.Generator) -> logic.PathState:
        try:
            return logic.generate(
                rng,
                width=self.size,
                height=self.size,
                obstacle_density=self.obstacle_density,
                min_distance=self.min_distance,
            )
        except ValueError as error:
            raise ConfigError(
                f"size, obstacle_density and min_distance admit no instance: {error}"
            ) from error

    def _load(self, text: str) -> logic.PathState:
        try:
            return logic.parse_grid(text)
        except logic.GridFormatError as error:
            raise ConfigError(f"reset option 'grid' is not a valid map: {error}") from error

    def _instance_key(self, state: logic.PathState) -> Any:
        return state.grid.key()

    def _parse_actions(self, text: str) -> list[str]:
        return parse_moves(text)[0]

    def _apply(self, state: logic.PathState, action: str) -> str | None:
        return None if state.move(action) else "blocked by a wall or the edge"

    def _potential(self, state: logic.PathState) -> float:
        return 1.0 - state.distance_to_goal() / max(1, self.initial_state.distance_to_goal())

    def _solved(self, state: logic.PathState) -> bool:
        return state.is_solved()

    def _board_text(self, state: logic.PathState) -> str:
        return logic.render_ansi(state)

    def _board_rgb(self, state: logic.PathState) -> np.ndarray:
        return logic.render_rgb(state)

    def _status(self, state: logic.PathState) -> str:
        if state.is_solved():
            return "You are on the goal."
        row, col = divmod(state.position, state.grid.width)
        goal_row, goal_col = divmod(state.grid.goal, state.grid.width)
        return f"You are at row {row + 1}, column {col + 1}; the goal is at row {goal_row + 1}, column {goal_col + 1}."

    def _format_actions(self, actions: list[str]) -> str:
        return " ".join(actions)

    def solution_actions(self) -> list[str]:
        return logic.shortest_path(self.state) or []

    def random_actions(self, rng: np.random.Generator) -> list[str]:
        """1 to `2 * size` moves, each uniform over U, D, L, R."""
        return [str(move) for move in rng.choice(list("UDLR"), size=int(rng.integers(1, 2 * self.size + 1)))]
