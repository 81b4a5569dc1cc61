"""`Sokoban`: the Sokoban puzzle that `pettingllms.envs.sokoban.env` plays (a `pettingllms.envs.tool_plan.Puzzle`).

Its rules are `board`'s, its instances `generator`'s, its oracle `solver`'s; this module adds the texts the agents
see and the potential (the env's module docstring states it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pettingllms.core.errors import ConfigError
from pettingllms.core.parsing import parse_moves
from pettingllms.envs.sokoban import board, generator, solver


class Sokoban:
    """Generated Sokoban levels of one size, and levels loaded from XSB text.

    Args (the env's, checked here: `ConfigError` when out of range): `width`, `height` (5-12, border walls
    included), `num_boxes` (1-4), `min_solution_length` (>= 1 moves).
    """

    task = (
        "Task: push every box onto a goal. Board legend: # wall, @ you, + you on a goal, $ box, * box on a goal, "
        ". goal, space floor. You move one cell up, down, left or right; walking into a box pushes it one cell "
        "if the cell behind it is free. You cannot pull boxes, so never push a box into a corner that is not a goal."
    )
    answer_format = (
        "Give the moves inside <answer>...</answer>, e.g. <answer>R R U L</answer> "
        "(up/down/left/right or U/D/L/R, separated by spaces or commas)."
    )
    instance_option = "level"

    def __init__(self, width: int = 7, height: int = 7, num_boxes: int = 2, min_solution_length: int = 10):
        for name, value, low, high in (
            ("width", width, 5, 12),
            ("height", height, 5, 12),
            ("num_boxes", num_boxes, 1, 4),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(f"{name}={value!r} must be an integer in [{low}, {high}]")
        if not isinstance(min_solution_length, int) or min_solution_length < 1:
            raise ConfigError(f"min_solution_length={min_solution_length!r} must be an integer >= 1")
        self.width, self.height, self.num_boxes = width, height, num_boxes
        self.min_solution_length = min_solution_length
        self._start_scale: tuple[frozenset[int] | None, int] = (None, 1)  # the start's boxes and distance

    def generate(self, rng: np.random.Generator) -> tuple[board.SokobanState, list[str]]:
        """A level reverse-searched from its solved position, with the optimal solution the search found."""
        return generator.generate(
            rng,
            width=self.width,
            height=self.height,
            num_boxes=self.num_boxes,
            min_solution_length=self.min_solution_length,
        )

    def load(self, text: str) -> board.SokobanState:
        """A level in XSB notation."""
        try:
            return board.parse_xsb(text)
        except board.LevelFormatError as error:
            raise ConfigError(f"reset option 'level' is not a valid XSB level: {error}") from error

    def key(self, state: board.SokobanState) -> Any:
        return state.key()

    def parse(self, text: str, state: board.SokobanState) -> list[str]:
        return parse_moves(text)[0]

    def apply(self, state: board.SokobanState, action: str) -> str | None:
        return "blocked (a wall, or a box that cannot move)" if state.move(action) == "blocked" else None

    def potential(self, state: board.SokobanState, start: board.SokobanState) -> float:
        boxes, scale = self._start_scale
        if start.boxes is not boxes:  # the start's distance: once per start position, not at every step
            boxes, scale = self._start_scale = start.boxes, max(1, start.box_distance())
        on_goals = state.boxes_on_goals() / len(state.boxes)
        return 0.5 * on_goals + 0.5 * (1.0 - state.box_distance() / scale)

    def progress(self, state: board.SokobanState, start: board.SokobanState) -> float:
        """The share of boxes on goals."""
        return state.boxes_on_goals() / len(state.boxes)

    def solved(self, state: board.SokobanState) -> bool:
        return state.is_solved()

    def solve(self, state: board.SokobanState) -> list[str]:
        """An optimal solution of `state`; [] if it is solved, can no longer be solved, or is too large for the
        solver's state limit."""
        try:
            return solver.solve(state) or []
        except solver.SolverLimitError:
            return []

    def random_actions(self, state: board.SokobanState, rng: np.random.Generator) -> list[str]:
        """1 to 20 moves, each uniform over U, D, L, R."""
        return [str(move) for move in rng.choice(list("UDLR"), size=int(rng.integers(1, 21)))]

    def render_text(self, state: board.SokobanState) -> str:
        return board.render_ansi(state)

    def render_rgb(self, state: board.SokobanState) -> np.ndarray:
        return board.render_rgb(state)

    def status(self, state: board.SokobanState) -> str:
        return f"Boxes on goals: {state.boxes_on_goals()} of {len(state.boxes)}."

    def format_actions(self, actions: list[str]) -> str:
        return " ".join(actions)
