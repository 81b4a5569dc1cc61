"""`PlanPath`: the path-planning puzzle that `pettingllms.envs.plan_path.env` plays (a
`pettingllms.envs.tool_plan.Puzzle`).

Its rules, instances and oracle are `grid`'s; this module adds the texts the agents see and the potential (the
env's module docstring states it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pettingllms.core.errors import ConfigError
from pettingllms.core.parsing import parse_moves
from pettingllms.envs.plan_path import grid as logic


class PlanPath:
    """Generated square grids of one size and wall density, and grids loaded from text.

    Args (the env's, checked here: `ConfigError` when out of range): `size` (2-30: a size x size grid),
    `obstacle_density` (0-0.6), `min_distance` (the least BFS distance from start to goal; default: `size`).
    """

    task = (
        "Task: move from your position @ to the goal G. Each move goes one cell up, down, left or right; "
        "walls (#) and the grid's edge block you. Rows are numbered from the top, columns from the left."
    )
    answer_format = (
        "Give the moves inside <answer>...</answer>, e.g. <answer>R R D L</answer> "
        "(up/down/left/right or U/D/L/R, separated by spaces or commas)."
    )
    instance_option = "grid"

    def __init__(self, size: int = 5, obstacle_density: float = 0.2, min_distance: int | None = None):
        if not isinstance(size, int) or not 2 <= size <= 30:
            raise ConfigError(f"size={size!r} must be an integer in [2, 30]")
        if not 0.0 <= obstacle_density <= 0.6:
            raise ConfigError(f"obstacle_density={obstacle_density!r} must be in [0, 0.6]")
        self.size = size
        self.obstacle_density = float(obstacle_density)
        self.min_distance = size if min_distance is None else min_distance

    def generate(self, rng: np.random.Generator) -> tuple[logic.PathState, None]:
        """A grid with a path from start to goal of at least `min_distance` moves (the oracle searches it)."""
        try:
            state = logic.generate(
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
        return state, None

    def load(self, text: str) -> logic.PathState:
        """A map: `#` wall, `.` free, `S` start, `G` goal."""
        try:
            return logic.parse_grid(text)
        except logic.GridFormatError as error:
            raise ConfigError(f"reset option 'grid' is not a valid map: {error}") from error

    def key(self, state: logic.PathState) -> Any:
        return state.grid.key()

    def parse(self, text: str, state: logic.PathState) -> list[str]:
        return parse_moves(text)[0]

    def apply(self, state: logic.PathState, action: str) -> str | None:
        return None if state.move(action) else "blocked by a wall or the edge"

    def potential(self, state: logic.PathState, start: logic.PathState) -> float:
        return 1.0 - state.distance_to_goal() / max(1, start.distance_to_goal())

    def progress(self, state: logic.PathState, start: logic.PathState) -> float:
        """The share of the start's shortest-path distance covered, `(start_distance - distance) / start_distance`,
        clipped to [0, 1] (a walk away from the goal scores 0, not less)."""
        initial, now = start.distance_to_goal(), state.distance_to_goal()
        if initial <= 0 or now < 0:
            return float(state.is_solved())
        return min(1.0, max(0.0, (initial - now) / initial))

    def solved(self, state: logic.PathState) -> bool:
        return state.is_solved()

    def solve(self, state: logic.PathState) -> list[str]:
        """A shortest path to the goal; [] on the goal or when the goal cannot be reached."""
        return logic.shortest_path(state) or []

    def random_actions(self, state: logic.PathState, rng: np.random.Generator) -> list[str]:
        """1 to `2 * size` moves, each uniform over U, D, L, R."""
        return [str(move) for move in rng.choice(list("UDLR"), size=int(rng.integers(1, 2 * self.size + 1)))]

    def render_text(self, state: logic.PathState) -> str:
        return logic.render_ansi(state)

    def render_rgb(self, state: logic.PathState) -> np.ndarray:
        return logic.render_rgb(state)

    def status(self, state: logic.PathState) -> str:
        if state.is_solved():
            return "You are on the goal."
        row, col = divmod(state.position, state.grid.width)
        goal_row, goal_col = divmod(state.grid.goal, state.grid.width)
        return f"You are at row {row + 1}, column {col + 1}; the goal is at row {goal_row + 1}, column {goal_col + 1}."

    def format_actions(self, actions: list[str]) -> str:
        return " ".join(actions)
