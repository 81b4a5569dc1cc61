"""`Sudoku`: the Sudoku puzzle that `pettingllms.envs.sudoku.env` plays (a `pettingllms.envs.tool_plan.Puzzle`),
and the answer format of placements (`parse_placements`).

Its rules, instances and solutions are `board`'s; this module adds the texts the agents see and the potential
(the env's module docstring states it).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pettingllms.core.errors import ConfigError
from pettingllms.core.parsing import MAX_MOVES, ParseError
from pettingllms.envs.sudoku import board

_NUMBER = r"(\d{1,6})(?!\d)"  # a longer digit run is no number of a placement (int() refuses > 4,300 digits)
_TRIPLE = re.compile(
    rf"\(\s*{_NUMBER}\s*[,\s]\s*{_NUMBER}\s*[,\s]\s*{_NUMBER}\s*\)|r\s*{_NUMBER}\s*c\s*{_NUMBER}\s*[=:]\s*{_NUMBER}",
    re.I,
)
_GRID_ROW = re.compile(r"^[\s|+\-]*(?:[0-9.][\s|,]*)+$")

Placement = tuple[int, int, int]


def parse_placements(text: str, size: int) -> list[Placement]:
    """Parse an answer into 1-based `(row, col, digit)` placements (see the env's module docstring).

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


class Sudoku:
    """Generated Sudoku puzzles of one size with a unique solution, and puzzles loaded from text.

    Args (the env's, checked here: `ConfigError` when out of range): `size` (4 or 9), `blanks` (blank cells of a
    generated puzzle; default: `board.generate`'s for the size).
    """

    task = (
        "Task: fill the Sudoku grid so that every row, every column and every box contains each digit exactly "
        "once. Blank cells are shown as '.'; rows and columns are numbered from 1 (top, left)."
    )
    answer_format = (
        "Give placements inside <answer>...</answer> as (row, col, digit) triples, e.g. <answer>(1,3,4) (2,1,2)"
        "</answer>, or the whole completed grid, one row per line."
    )
    instance_option = "puzzle"

    def __init__(self, size: int = 4, blanks: int | None = None):
        if size not in board.SIZES:
            raise ConfigError(f"size={size!r} is not supported; allowed values: {list(board.SIZES)}")
        max_blanks = size * size - board.MIN_GIVENS[size]
        if blanks is not None and (not isinstance(blanks, int) or not 1 <= blanks <= max_blanks):
            raise ConfigError(f"blanks={blanks!r} must be an integer in [1, {max_blanks}] for size {size}")
        self.size = size
        self.blanks = blanks

    def generate(self, rng: np.random.Generator) -> tuple[board.SudokuState, None]:
        """A puzzle with a unique solution (`solve` reads it off the state)."""
        return board.generate(rng, size=self.size, blanks=self.blanks), None

    def load(self, text: str) -> board.SudokuState:
        """A puzzle as text: digits, `.` or `0` for blanks."""
        try:
            return board.parse_puzzle(text)
        except board.PuzzleFormatError as error:
            raise ConfigError(f"reset option 'puzzle' is not a valid puzzle: {error}") from error

    def key(self, state: board.SudokuState) -> Any:
        return state.puzzle.key()

    def parse(self, text: str, state: board.SudokuState) -> list[Placement]:
        return parse_placements(text, state.puzzle.size)

    def apply(self, state: board.SudokuState, action: Placement) -> str | None:
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

    def potential(self, state: board.SudokuState, start: board.SudokuState) -> float:
        return state.correct_cells() / max(1, state.blanks_total())

    def progress(self, state: board.SudokuState, start: board.SudokuState) -> float:
        """The share of the puzzle's blank cells that hold the solution's digit."""
        return state.correct_cells() / max(1, state.blanks_total())

    def solved(self, state: board.SudokuState) -> bool:
        return state.is_solved()

    def solve(self, state: board.SudokuState) -> list[Placement]:
        """Placements that turn `state` into the solution: wrong digits are cleared first."""
        size = state.puzzle.size
        wrong, missing = [], []
        for index, (value, digit) in enumerate(zip(state.cells, state.puzzle.solution)):
            if value != digit:
                row, col = divmod(index, size)
                if value:
                    wrong.append((row + 1, col + 1, 0))
                missing.append((row + 1, col + 1, digit))
        return wrong + missing

    def random_actions(self, state: board.SudokuState, rng: np.random.Generator) -> list[Placement]:
        """1 to `blanks` placements, each a uniform (row, col, digit) in the grid."""
        size, count = state.puzzle.size, int(rng.integers(1, state.blanks_total() + 1))
        return [tuple(int(v) for v in rng.integers(1, size + 1, size=3)) for _ in range(count)]

    def render_text(self, state: board.SudokuState) -> str:
        return board.render_ansi(state)

    def render_rgb(self, state: board.SudokuState) -> np.ndarray:
        return board.render_rgb(state)

    def status(self, state: board.SudokuState) -> str:
        filled = sum(1 for given, value in zip(state.puzzle.givens, state.cells) if not given and value)
        return f"Filled {filled} of {state.blanks_total()} blank cells."

    def format_actions(self, actions: list[Placement]) -> str:
        return " ".join(f"({r},{c},{d})" for r, c, d in actions)
