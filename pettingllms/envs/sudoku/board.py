"""Sudoku game logic (N x N with N in {4, 9}; boxes 2x2 or 3x3).

Cells are stored row-major in flat sequences of ints, ``0`` meaning blank; ``(row, col)`` is
cell ``row * N + col`` (0-based). A :class:`SudokuPuzzle` (givens plus their unique solution) is
immutable and shared; a :class:`SudokuState` holds the current, mutable grid.

This module is pure game logic: no PettingZoo API, no global randomness (:func:`generate` draws
only from the ``numpy.random.Generator`` it is given).

Text format (:func:`parse_puzzle` / :func:`to_text`): digits ``1..N`` are givens, ``.`` or ``0``
blanks; whitespace and ``| - +`` are ignored, so both ``to_text`` output and hand-drawn grids
with separators parse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import numpy as np

from pettingllms.core.errors import PettingLLMsError

__all__ = [
    "SIZES",
    "PuzzleFormatError",
    "SudokuPuzzle",
    "SudokuState",
    "count_solutions",
    "generate",
    "parse_puzzle",
    "render_ansi",
    "render_rgb",
    "solve",
    "to_text",
]

#: Supported grid sizes.
SIZES = (4, 9)

#: Default number of blanks of :func:`generate` per size.
DEFAULT_BLANKS = {4: 6, 9: 45}

#: Fewest givens that admit a unique solution (4x4: 4, 9x9: 17); bounds ``blanks`` in generate.
MIN_GIVENS = {4: 4, 9: 17}

_SEPARATORS = frozenset(" \t\r\n|-+")

# place() result codes.
PLACED, CLEARED, OUT_OF_RANGE, GIVEN, CONFLICT = "placed", "cleared", "out_of_range", "given", "conflict"


class PuzzleFormatError(PettingLLMsError, ValueError):
    """A puzzle text is malformed, inconsistent, or lacks a unique solution."""


class _Geometry(NamedTuple):
    size: int
    box: int  # box side: 2 or 3
    row: tuple[int, ...]  # cell -> row
    col: tuple[int, ...]  # cell -> col
    boxi: tuple[int, ...]  # cell -> box index
    peers: tuple[tuple[int, ...], ...]  # cell -> other cells sharing a row, column or box
    units: tuple[tuple[int, ...], ...]  # all rows, columns and boxes as cell tuples


@cache
def _geometry(size: int) -> _Geometry:
    """Index tables for a size; computed once per size."""
    box = {4: 2, 9: 3}[size]
    cells = range(size * size)
    row = tuple(i // size for i in cells)
    col = tuple(i % size for i in cells)
    boxi = tuple((r // box) * box + c // box for r, c in zip(row, col))
    peers = tuple(
        tuple(j for j in cells if j != i and (row[j] == row[i] or col[j] == col[i] or boxi[j] == boxi[i]))
        for i in cells
    )
    units = tuple(tuple(j for j in cells if key[j] == k) for key in (row, col, boxi) for k in range(size))
    return _Geometry(size, box, row, col, boxi, peers, units)


# Bit tables for masks of up to 9 digits: bit (v - 1) stands for digit v.
_POPCOUNT = tuple(m.bit_count() for m in range(1 << 9))
_DIGITS = tuple(tuple(v for v in range(1, 10) if m >> (v - 1) & 1) for m in range(1 << 9))


def _check_size(size: int) -> _Geometry:
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size}")
    return _geometry(size)


def _check_cells(cells: Sequence[int], size: int) -> _Geometry:
    geo = _check_size(size)
    if len(cells) != size * size:
        raise ValueError(f"expected {size * size} cells for size {size}, got {len(cells)}")
    for v in cells:
        if not 0 <= v <= size:
            raise ValueError(f"cell value {v} out of range 0..{size}")
    return geo


def _first_conflict(cells: Sequence[int], geo: _Geometry) -> int:
    """Index of the first filled cell whose value repeats in one of its peers, or -1."""
    for i, v in enumerate(cells):
        if v and any(cells[j] == v for j in geo.peers[i]):
            return i
    return -1


# long function: one backtracking search over bitmasks kept in locals on the hot path (a helper call per
# node slows the generator's uniqueness checks)
def _search(
    cells: Sequence[int],
    geo: _Geometry,
    limit: int,
    forbid: tuple[int, int] | None = None,
    value_order: Sequence[Sequence[int]] | None = None,
) -> tuple[int, tuple[int, ...] | None]:
    """Exact backtracking search over bitmasks, most-constrained cell first.

    Counts solutions up to ``limit`` and returns ``(count, first solution found or None)``.
    ``cells`` must be in range and conflict-free. ``forbid=(cell, value)`` excludes that value
    from that (blank) cell. ``value_order[cell]`` (a permutation of ``1..N``) sets the order in
    which values are tried; the default is ascending, which makes the result deterministic.
    """
    size = geo.size
    full = (1 << size) - 1
    R, C, B = geo.row, geo.col, geo.boxi
    rows = [0] * size
    cols = [0] * size
    boxes = [0] * size
    grid = list(cells)
    empties = []
    for i, v in enumerate(grid):
        if v:
            bit = 1 << (v - 1)
            rows[R[i]] |= bit
            cols[C[i]] |= bit
            boxes[B[i]] |= bit
        else:
            empties.append(i)
    banned = [0] * len(grid)
    if forbid is not None:
        banned[forbid[0]] = 1 << (forbid[1] - 1)
        # Scan the restricted cell first: it is the likeliest to be (nearly) dead.
        empties.remove(forbid[0])
        empties.insert(0, forbid[0])
    count = 0
    first: tuple[int, ...] | None = None

    def rec(n: int) -> bool:
        """Fill ``empties[:n]``; True once ``limit`` solutions are counted."""
        nonlocal count, first
        if n == 0:
            count += 1
            if first is None:
                first = tuple(grid)
            return count >= limit
        best_k, best_m, best_c = 0, 0, size + 1
        for k in range(n):
            i = empties[k]
            m = full & ~(rows[R[i]] | cols[C[i]] | boxes[B[i]] | banned[i])
            c = _POPCOUNT[m]
            if c < best_c:
                best_k, best_m, best_c = k, m, c
                if c <= 1:
                    break
        if best_c == 0:
            return False
        i = empties[best_k]
        # Move the chosen cell out of the active prefix; descendants only permute empties[:n-1].
        empties[best_k] = empties[n - 1]
        empties[n - 1] = i
        r, c, b = R[i], C[i], B[i]
        values = (
            _DIGITS[best_m] if value_order is None else [v for v in value_order[i] if best_m >> (v - 1) & 1]
        )
        for v in values:
            bit = 1 << (v - 1)
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
            grid[i] = v
            if rec(n - 1):
                return True
            rows[r] ^= bit
            cols[c] ^= bit
            boxes[b] ^= bit
        grid[i] = 0
        return False

    rec(len(empties))
    return count, first


def solve(cells: Sequence[int], size: int) -> tuple[int, ...] | None:
    """A full solution of ``cells`` (row-major, 0 = blank), or None if there is none.

    Exact bitmask backtracking with most-constrained-cell-first; values are tried in ascending
    order, so when several solutions exist the result is deterministic (the first one found).
    Conflicting givens yield None. Raises ``ValueError`` for a bad size, length or cell value.
    """
    geo = _check_cells(cells, size)
    if _first_conflict(cells, geo) >= 0:
        return None
    return _search(cells, geo, 1)[1]


def count_solutions(cells: Sequence[int], size: int, limit: int = 2) -> int:
    """Number of solutions of ``cells``, counting stops at ``limit`` (so the result is <= limit).

    Conflicting givens yield 0. Raises ``ValueError`` for a bad size, length, cell value or
    ``limit < 1``.
    """
    geo = _check_cells(cells, size)
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    if _first_conflict(cells, geo) >= 0:
        return 0
    return _search(cells, geo, limit)[0]


def _is_valid_full(cells: Sequence[int], geo: _Geometry) -> bool:
    """True if every cell is filled and every row, column and box holds each digit once."""
    want = set(range(1, geo.size + 1))
    return all({cells[i] for i in unit} == want for unit in geo.units)


@dataclass(frozen=True)
class SudokuPuzzle:
    """Immutable puzzle: ``givens`` (row-major, 0 = blank) and their ``solution``.

    Construction coerces both to tuples of ints and checks (``ValueError`` otherwise): ``size``
    in :data:`SIZES`, both of length ``size**2``, ``solution`` a complete valid grid, and every
    given equal to the solution's value there. Uniqueness of the solution is *not* re-checked
    here (that is a search); :func:`parse_puzzle` and :func:`generate` guarantee it.
    """

    size: int
    givens: tuple[int, ...]
    solution: tuple[int, ...]

    def __post_init__(self) -> None:
        geo = _check_size(self.size)
        givens = tuple(int(v) for v in self.givens)
        solution = tuple(int(v) for v in self.solution)
        object.__setattr__(self, "givens", givens)
        object.__setattr__(self, "solution", solution)
        _check_cells(givens, self.size)
        if len(solution) != len(givens) or not _is_valid_full(solution, geo):
            raise ValueError("solution is not a complete valid grid")
        if any(g and g != s for g, s in zip(givens, solution)):
            raise ValueError("givens disagree with the solution")

    def __deepcopy__(self, memo: dict) -> SudokuPuzzle:
        return self  # immutable: copies of a state share it

    def key(self) -> tuple:
        """Hashable canonical identity ``(size, givens)`` (the solution follows from them)."""
        return (self.size, self.givens)


@dataclass
class SudokuState:
    """Mutable game state: the shared puzzle plus the current grid ``cells`` (0 = blank).

    The initial state of a puzzle is ``SudokuState(puzzle, list(puzzle.givens))``. Construction
    checks that ``cells`` has ``size**2`` entries and keeps every given (``ValueError``
    otherwise). :meth:`place` never creates a row/column/box conflict, but a placed value may
    still differ from the solution.
    """

    puzzle: SudokuPuzzle
    cells: list[int]

    def __post_init__(self) -> None:
        givens = self.puzzle.givens
        if len(self.cells) != len(givens):
            raise ValueError(f"expected {len(givens)} cells, got {len(self.cells)}")
        if any(g and g != v for g, v in zip(givens, self.cells)):
            raise ValueError("cells must keep every given")

    def copy(self) -> SudokuState:
        """Independent state sharing the (immutable) puzzle."""
        return SudokuState(self.puzzle, list(self.cells))

    def place(self, row: int, col: int, value: int) -> str:
        """Write ``value`` at 0-based ``(row, col)`` in place and return a result code.

        Codes, checked in this order; every code but the first two leaves the state unchanged:
        ``"out_of_range"`` (row/col outside ``0..N-1`` or value outside ``0..N``), ``"given"``
        (the cell is a given), ``"cleared"`` (value 0: the non-given cell is now blank, also if it
        already was), ``"conflict"`` (value already in the cell's row, column or box, the cell
        itself excluded), ``"placed"``. Overwriting a previously placed value is allowed.
        """
        size = self.puzzle.size
        if not (0 <= row < size and 0 <= col < size and 0 <= value <= size):
            return OUT_OF_RANGE
        i = row * size + col
        if self.puzzle.givens[i]:
            return GIVEN
        cells = self.cells
        if value == 0:
            cells[i] = 0
            return CLEARED
        for j in _geometry(size).peers[i]:
            if cells[j] == value:
                return CONFLICT
        cells[i] = value
        return PLACED

    def is_solved(self) -> bool:
        """True if the grid is full, valid (each row, column, box a permutation of ``1..N``) and
        keeps the givens."""
        cells = self.cells
        if 0 in cells:
            return False
        givens = self.puzzle.givens
        return all(not g or g == v for g, v in zip(givens, cells)) and _is_valid_full(
            cells, _geometry(self.puzzle.size)
        )

    def correct_cells(self) -> int:
        """Number of non-given cells whose current value equals the solution's."""
        p = self.puzzle
        return sum(1 for g, v, s in zip(p.givens, self.cells, p.solution) if not g and v == s)

    def blanks_total(self) -> int:
        """Number of non-given cells (the blanks of the puzzle, filled or not)."""
        return self.puzzle.givens.count(0)


def parse_puzzle(text: str) -> SudokuState:
    """Parse the text format (module docstring) into the initial state of a uniquely solvable
    puzzle; every digit becomes a given.

    Raises :class:`PuzzleFormatError` for: an unexpected character (message names 1-based line
    and column), a cell count other than 16 or 81, a digit above 4 in a 4x4 grid, conflicting
    givens ("conflict", names row/column 1-based), "no solution", "multiple solutions".
    """
    values: list[int] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        for colno, ch in enumerate(line, start=1):
            if ch in _SEPARATORS:
                continue
            if ch == ".":
                values.append(0)
            elif "0" <= ch <= "9":
                values.append(ord(ch) - 48)
            else:
                raise PuzzleFormatError(f"line {lineno}, col {colno}: unexpected character {ch!r}")
    n = len(values)
    if n not in (16, 81):
        raise PuzzleFormatError(f"expected 16 or 81 cells, got {n}")
    size = 4 if n == 16 else 9
    geo = _geometry(size)
    for i, v in enumerate(values):
        if v > size:
            raise PuzzleFormatError(
                f"row {geo.row[i] + 1}, col {geo.col[i] + 1}: value {v} out of range 1..{size}"
            )
    bad = _first_conflict(values, geo)
    if bad >= 0:
        raise PuzzleFormatError(
            f"conflict: value {values[bad]} at row {geo.row[bad] + 1}, col {geo.col[bad] + 1} "
            "repeats in its row, column or box"
        )
    count, solution = _search(values, geo, 2)
    if count == 0:
        raise PuzzleFormatError("no solution")
    if count > 1:
        raise PuzzleFormatError("multiple solutions")
    return SudokuState(SudokuPuzzle(size, tuple(values), solution), values)


def to_text(state: SudokuState) -> str:
    """Current grid, one row per line, digits and ``.`` for blanks, no separators, no trailing
    newline. ``parse_puzzle(to_text(s))`` restores the puzzle of an initial state ``s`` (of any
    state, it makes all current values givens)."""
    size = state.puzzle.size
    chars = [str(v) if v else "." for v in state.cells]
    return "\n".join("".join(chars[i : i + size]) for i in range(0, size * size, size))


def render_ansi(state: SudokuState) -> str:
    """Human/LLM-readable grid: column numbers ``1..N`` on top, row numbers on the left, ``|``
    and ``+---`` box separators, ``.`` for blanks. No trailing newline. Example (4x4)::

            1 2 | 3 4
          +-----+-----+
        1 | 1 . | . . |
        2 | . 4 | . 2 |
          +-----+-----+
        3 | 2 . | 4 . |
        4 | . . | . 1 |
          +-----+-----+
    """
    size = state.puzzle.size
    box = _geometry(size).box
    cells = state.cells

    def band(items: list[str]) -> str:
        return " | ".join(" ".join(items[k : k + box]) for k in range(0, size, box))

    rule = "  +" + "+".join(["-" * (2 * box + 1)] * (size // box)) + "+"
    lines = ["    " + band([str(c + 1) for c in range(size)]), rule]
    for r in range(size):
        row = [str(v) if v else "." for v in cells[r * size : (r + 1) * size]]
        lines.append(f"{r + 1} | " + band(row) + " |")
        if (r + 1) % box == 0:
            lines.append(rule)
    return "\n".join(lines)


# 3x5 bitmap glyphs for digits 1..9 (rows top to bottom, '#' = ink).
_GLYPHS = {
    1: (".#.", "##.", ".#.", ".#.", "###"),
    2: ("##.", "..#", ".#.", "#..", "###"),
    3: ("##.", "..#", ".#.", "..#", "##."),
    4: ("#.#", "#.#", "###", "..#", "..#"),
    5: ("###", "#..", "##.", "..#", "##."),
    6: (".##", "#..", "###", "#.#", "###"),
    7: ("###", "..#", ".#.", ".#.", ".#."),
    8: ("###", "#.#", "###", "#.#", "###"),
    9: ("###", "#.#", "###", "..#", "##."),
}
_RGB_GIVEN_BG = (225, 225, 225)
_RGB_BLANK_BG = (255, 255, 255)
_RGB_GIVEN_INK = (0, 0, 0)
_RGB_PLACED_INK = (30, 80, 220)
_RGB_LINE = (170, 170, 170)
_RGB_BOX_LINE = (0, 0, 0)


@cache
def _glyph_mask(digit: int, scale: int) -> np.ndarray:
    """Boolean ``(5*scale, 3*scale)`` ink mask of a digit."""
    base = np.array([[ch == "#" for ch in line] for line in _GLYPHS[digit]])
    return base.repeat(scale, axis=0).repeat(scale, axis=1)


def render_rgb(state: SudokuState, cell_px: int = 16) -> np.ndarray:
    """RGB image ``(N * cell_px, N * cell_px, 3)`` of dtype uint8.

    Given cells have a grey background and black digits, placed digits are blue on white; cell
    borders are grey lines, box borders black. Digits are drawn from a 3x5 bitmap font scaled
    to the cell and are omitted when ``cell_px < 7``. Raises ``ValueError`` if ``cell_px < 1``.
    """
    if cell_px < 1:
        raise ValueError(f"cell_px must be >= 1, got {cell_px}")
    puzzle = state.puzzle
    size = puzzle.size
    box = _geometry(size).box
    bg = np.empty((size * size, 3), dtype=np.uint8)
    bg[:] = _RGB_BLANK_BG
    given_idx = [i for i, g in enumerate(puzzle.givens) if g]
    bg[given_idx] = _RGB_GIVEN_BG
    image = bg.reshape(size, size, 3).repeat(cell_px, axis=0).repeat(cell_px, axis=1)
    side = size * cell_px
    for k in range(size + 1):
        color = _RGB_BOX_LINE if k % box == 0 else _RGB_LINE
        p = min(k * cell_px, side - 1)
        image[p, :] = color
        image[:, p] = color
    scale = (cell_px - 2) // 5
    if scale >= 1:
        gh, gw = 5 * scale, 3 * scale
        top0, left0 = (cell_px - gh) // 2, (cell_px - gw) // 2
        for i, v in enumerate(state.cells):
            if v:
                r, c = divmod(i, size)
                top, left = r * cell_px + top0, c * cell_px + left0
                ink = _RGB_GIVEN_INK if puzzle.givens[i] else _RGB_PLACED_INK
                image[top : top + gh, left : left + gw][_glyph_mask(v, scale)] = ink
    return image


def _random_full_grid(rng: np.random.Generator, geo: _Geometry) -> list[int]:
    """A random complete valid grid: the solver on an empty grid with random per-cell value
    orders (one generator draw)."""
    size = geo.size
    order = (rng.random((size * size, size)).argsort(axis=1) + 1).tolist()
    return list(_search([0] * (size * size), geo, 1, value_order=order)[1])


def _dig(rng: np.random.Generator, solution: list[int], geo: _Geometry, blanks: int) -> list[int] | None:
    """Blank cells of ``solution`` in a random order, skipping any whose removal would allow a
    second solution, until ``blanks`` are blank. Returns the givens, or None if the order ran
    out first."""
    size = geo.size
    full = (1 << size) - 1
    peers = geo.peers
    givens = list(solution)
    removed = 0
    for i in rng.permutation(size * size).tolist():
        v = givens[i]
        givens[i] = 0
        seen = 0
        for j in peers[i]:
            if givens[j]:
                seen |= 1 << (givens[j] - 1)
        # Unique iff no solution puts another value at i; trivially so when v is the only
        # candidate left by the peers, otherwise search for such a solution.
        if (full & ~seen) != 1 << (v - 1) and _search(givens, geo, 1, forbid=(i, v))[0]:
            givens[i] = v
            continue
        removed += 1
        if removed == blanks:
            return givens
    return None


def generate(
    rng: np.random.Generator, *, size: int = 4, blanks: int | None = None, max_attempts: int = 20
) -> SudokuState:
    """Random uniquely solvable puzzle, returned as its initial state.

    Draws a random complete grid, then blanks cells in a random order, keeping a blank only if
    the solution stays unique, until ``blanks`` cells are blank (default
    :data:`DEFAULT_BLANKS`: 6 for 4x4, 45 for 9x9). If the order runs out first, a new grid and
    order are drawn, up to ``max_attempts`` times. The result depends only on the arguments and
    the generator state.

    Raises ``ValueError`` naming the argument: ``size`` not in :data:`SIZES`; ``blanks`` outside
    ``0..size**2 - MIN_GIVENS[size]`` (4x4: 0..12, 9x9: 0..64); ``max_attempts < 1``; or
    ``blanks`` not reached with a unique solution within ``max_attempts`` attempts (expected
    only for blank counts near the maximum).
    """
    geo = _check_size(size)
    if blanks is None:
        blanks = DEFAULT_BLANKS[size]
    max_blanks = size * size - MIN_GIVENS[size]
    if not 0 <= blanks <= max_blanks:
        raise ValueError(f"blanks={blanks} out of range 0..{max_blanks} for size={size}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    for _ in range(max_attempts):
        solution = _random_full_grid(rng, geo)
        givens = solution if blanks == 0 else _dig(rng, solution, geo, blanks)
        if givens is not None:
            return SudokuState(SudokuPuzzle(size, tuple(givens), tuple(solution)), list(givens))
    raise ValueError(
        f"blanks={blanks} not reached with a unique solution for size={size} "
        f"within max_attempts={max_attempts}"
    )
