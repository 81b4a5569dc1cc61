"""# Sudoku (`sudoku-v0`)

Fill an N x N grid (N = 4 or 9) so that every row, column and box holds each digit 1..N once.

| | |
|---|---|
| agents (workflow "mas") | `tool`, `plan` (in that order each turn) |
| agents (workflow "single") | `plan` |
| action | any text; inside `<answer>...</answer>`, either placements `(row, col, digit)` (1-based, e.g. `(1,3,4) (2,1,2)`; `r1c3=4` also works; digit 0 clears a cell), or the whole grid as N lines of N digits; the `tool` agent may instead give a ```python block that prints the answer |
| observation | text: the task, the grid with row and column numbers, last turn's result, and for `plan` the tool agent's code, output and proposal |
| instances | generated with a unique solution (knobs `size`, `blanks`); `reset(options={"puzzle": TEXT})` loads a puzzle (digits, `.` or `0` for blanks); `options={"split": "eval"}` draws from the evaluation split, disjoint from training |

## Rewards
As `pettingllms.envs.tool_plan` describes, with `potential = correct_cells / blanks` (the share of the puzzle's
blank cells that hold the solution's digit; 1 iff solved). A placement on a given cell, outside the grid, or
that repeats a digit in its row, column or box is an invalid action (penalty 0.05; nothing changes). A
placement that is legal but wrong is accepted and earns no progress. Team reward 1.0 when the grid is solved.

A completion cut by its length budget (`Generation.truncated`; `train/truncated/*` and `truncated_rate` count
them) is scored as written, after any thinking block: cut inside a thinking block, before `</answer>` closes, or
inside a ```python block that never closes, it holds no usable action and earns the parse-error penalty (0.1).

## Arguments
`size` (4 or 9, default 4), `blanks` (default 6 for 4x4, 45 for 9x9), plus `alpha` (default 1.0), `workflow`,
`max_turns` (default 4), `render_mode` ("ansi", "human", "rgb_array"), `sandbox`, `tool_timeout`,
`tool_memory_mb`.

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

import re
from typing import Any

import numpy as np

from pettingllms.core.errors import ConfigError
from pettingllms.core.parsing import MAX_MOVES, ParseError
from pettingllms.envs.sudoku import board
from pettingllms.envs.tool_plan import ToolPlanEnv

_NUMBER = r"(\d{1,6})(?!\d)"  # a longer digit run is no number of a placement (int() refuses > 4,300 digits)
_TRIPLE = re.compile(
    rf"\(\s*{_NUMBER}\s*[,\s]\s*{_NUMBER}\s*[,\s]\s*{_NUMBER}\s*\)|r\s*{_NUMBER}\s*c\s*{_NUMBER}\s*[=:]\s*{_NUMBER}",
    re.I,
)
_GRID_ROW = re.compile(r"^[\s|+\-]*(?:[0-9.][\s|,]*)+$")

Placement = tuple[int, int, int]


def parse_placements(text: str, size: int) -> list[Placement]:
    """Parse an answer into 1-based `(row, col, digit)` placements (see the module docstring).

    A whole grid (N lines of N digits, `.` or `0` for blanks, `|`, `-`, `+` and spaces ignored) becomes one
    placement per non-blank cell. A number of more than 6 digits forms no placement. Raises `ParseError` if
    neither form is found.

    >>> parse_placements("(1, 2, 3) r4c1=2", 4)
    [(1, 2, 3), (4, 1, 2)]
    """
    lines = [line for line in text.strip().splitlines() if line.strip(" |+-\t")]
    if len(lines) == size and all(_GRID_ROW.match(line) for line in lines):
        rows = [[c for c in line if c.isdigit() or c == "."] for line in lines]
        if all(len(row) == size for row in rows):
            return [
                (r + 1, c + 1, int(v))
                for r, row in enumerate(rows)
                for c, v in enumerate(row)
                if v not in ".0"
            ]
    placements = [
        tuple(int(g) for g in (m[0:3] if m[0] else m[3:6]))
        for m in (match.groups() for match in _TRIPLE.finditer(text))
    ]
    if not placements:
        raise ParseError(
            f"no placement found: write (row, col, digit) triples such as <answer>(1,3,4) (2,1,2)</answer>, "
            f"or the whole grid as {size} lines of {size} digits"
        )
    return placements[:MAX_MOVES]


class SudokuEnv(ToolPlanEnv):
    """Sudoku with a tool agent and a plan agent (see the module docstring)."""

    metadata = {**ToolPlanEnv.metadata, "name": "sudoku-v0"}
    INSTANCE_OPTION = "puzzle"
    TASK = (
        "Task: fill the Sudoku grid so that every row, every column and every box contains each digit exactly "
        "once. Blank cells are shown as '.'; rows and columns are numbered from 1 (top, left)."
    )
    ANSWER_FORMAT = (
        "Give placements inside <answer>...</answer> as (row, col, digit) triples, e.g. <answer>(1,3,4) (2,1,2)"
        "</answer>, or the whole completed grid, one row per line."
    )

    def __init__(self, *, size: int = 4, blanks: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if size not in board.SIZES:
            raise ConfigError(f"size={size!r} is not supported; allowed values: {list(board.SIZES)}")
        max_blanks = size * size - board.MIN_GIVENS[size]
        if blanks is not None and (not isinstance(blanks, int) or not 1 <= blanks <= max_blanks):
            raise ConfigError(f"blanks={blanks!r} must be an integer in [1, {max_blanks}] for size {size}")
        self.size = size
        self.blanks = blanks

    def _generate(self, rng: np.random.Generator) -> board.SudokuState:
        return board.generate(rng, size=self.size, blanks=self.blanks)

    def _load(self, text: str) -> board.SudokuState:
        try:
            return board.parse_puzzle(text)
        except board.PuzzleFormatError as error:
            raise ConfigError(f"reset option 'puzzle' is not a valid puzzle: {error}") from error

    def _instance_key(self, state: board.SudokuState) -> Any:
        return state.puzzle.key()

    def _parse_actions(self, text: str) -> list[Placement]:
        return parse_placements(text, self.state.puzzle.size)

    def _apply(self, state: board.SudokuState, action: Placement) -> str | None:
        row, col, digit = action
        size = state.puzzle.size
        if 1 <= row <= size and 1 <= col <= size and state.puzzle.givens[(row - 1) * size + col - 1] == digit:
            return None  # restating a given (as a whole-grid answer does) is harmless
        result = state.place(row - 1, col - 1, digit)
        return {
            "out_of_range": "outside the grid or not a digit of this grid",
            "given": "that cell is given and cannot change",
            "conflict": "the digit already appears in its row, column or box",
        }.get(result)

    def _potential(self, state: board.SudokuState) -> float:
        return state.correct_cells() / max(1, state.blanks_total())

    def _solved(self, state: board.SudokuState) -> bool:
        return state.is_solved()

    def _board_text(self, state: board.SudokuState) -> str:
        return board.render_ansi(state)

    def _board_rgb(self, state: board.SudokuState) -> np.ndarray:
        return board.render_rgb(state)

    def _status(self, state: board.SudokuState) -> str:
        filled = sum(1 for given, value in zip(state.puzzle.givens, state.cells) if not given and value)
        return f"Filled {filled} of {state.blanks_total()} blank cells."

    def _format_actions(self, actions: list[Placement]) -> str:
        return " ".join(f"({r},{c},{d})" for r, c, d in actions)

    def random_actions(self, rng: np.random.Generator) -> list[Placement]:
        """1 to `blanks` placements, each a uniform (row, col, digit) in the grid."""
        size, count = self.state.puzzle.size, int(rng.integers(1, self.state.blanks_total() + 1))
        return [tuple(int(v) for v in rng.integers(1, size + 1, size=3)) for _ in range(count)]

    def solution_actions(self) -> list[Placement]:
        """Placements that turn the current grid into the solution: wrong digits are cleared first."""
        size = self.state.puzzle.size
        wrong, missing = [], []
        for index, (value, digit) in enumerate(zip(self.state.cells, self.state.puzzle.solution)):
            if value != digit:
                row, col = divmod(index, size)
                if value:
                    wrong.append((row + 1, col + 1, 0))
                missing.append((row + 1, col + 1, digit))
        return wrong + missing
