"""Grid navigation game logic for the Plan-Path environment.

A map is a ``width x height`` grid of free cells and walls with a start cell ``S`` and a goal
cell ``G``. An agent stands on one free cell and moves one step up, down, left or right per
action; moves into a wall or off the grid are rejected and leave the state unchanged.

Cells are addressed by a single integer ``row * width + col`` (row 0 is the top line, col 0 the
leftmost character). This module is pure game logic: no PettingZoo API, no global randomness
(:func:`generate` draws only from the ``numpy.random.Generator`` it is given).

Text format (used by :func:`parse_grid` and :func:`to_text`)::

    #.S..
    #.##.
    ....G

``'#'`` is a wall, ``'.'`` a free cell, ``'S'`` the start and ``'G'`` the goal (both free).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from pettingllms.core.errors import PettingLLMsError

__all__ = [
    "MOVES",
    "GridFormatError",
    "GridMap",
    "PathState",
    "generate",
    "parse_grid",
    "render_ansi",
    "render_rgb",
    "shortest_path",
    "to_text",
]

#: Direction name -> ``(drow, dcol)``. Iteration order ``U, D, L, R`` is the tie-break order of
#: :func:`shortest_path`.
MOVES: Mapping[str, tuple[int, int]] = MappingProxyType(
    {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
)

WALL, FREE, START, GOAL, AGENT = "#", ".", "S", "G", "@"

# RGB colours used by render_rgb.
_RGB_FREE = (255, 255, 255)
_RGB_WALL = (64, 64, 64)
_RGB_START = (200, 200, 255)
_RGB_GOAL = (80, 200, 80)
_RGB_AGENT = (220, 50, 50)


class GridFormatError(PettingLLMsError, ValueError):
    """A grid text could not be parsed; the message names the 1-based line/col and the problem."""


def _neighbor(width: int, height: int, cell: int, drow: int, dcol: int) -> int:
    """Return the cell one step from ``cell`` in direction ``(drow, dcol)``, or -1 if off the grid.

    Walls are not checked.
    """
    row, col = divmod(cell, width)
    row += drow
    col += dcol
    if 0 <= row < height and 0 <= col < width:
        return row * width + col
    return -1


def _bfs(width: int, height: int, walls: frozenset[int], source: int) -> tuple[int, ...]:
    """Breadth-first distances (in moves) from ``source`` to every cell; -1 for walls/unreachable."""
    dist = [-1] * (width * height)
    dist[source] = 0
    queue = [source]
    for cell in queue:  # the list grows while we iterate: a FIFO without popleft
        nd = dist[cell] + 1
        row, col = divmod(cell, width)
        if row > 0:
            nb = cell - width
            if dist[nb] < 0 and nb not in walls:
                dist[nb] = nd
                queue.append(nb)
        if row < height - 1:
            nb = cell + width
            if dist[nb] < 0 and nb not in walls:
                dist[nb] = nd
                queue.append(nb)
        if col > 0:
            nb = cell - 1
            if dist[nb] < 0 and nb not in walls:
                dist[nb] = nd
                queue.append(nb)
        if col < width - 1:
            nb = cell + 1
            if dist[nb] < 0 and nb not in walls:
                dist[nb] = nd
                queue.append(nb)
    return tuple(dist)


@dataclass(frozen=True)
class GridMap:
    """Immutable map: size, walls, start and goal. Shared (not copied) between :class:`PathState` s.

    Invariants (checked on construction, ``ValueError`` otherwise): ``width, height >= 1``;
    every wall index is a cell of the grid; ``start`` and ``goal`` are distinct free cells.
    The goal need not be reachable from the start (``distances_to_goal`` then reports -1);
    :func:`parse_grid` and :func:`generate` only ever produce maps where it is.

    Equality and hashing use the five public fields only.
    """

    width: int
    height: int
    walls: frozenset[int]
    start: int
    goal: int
    _distances: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"width and height must be >= 1, got {self.width}x{self.height}")
        n = self.width * self.height
        walls = frozenset(self.walls)
        object.__setattr__(self, "walls", walls)
        if walls and (min(walls) < 0 or max(walls) >= n):
            raise ValueError(f"wall index out of range 0..{n - 1}")
        for name in ("start", "goal"):
            cell = getattr(self, name)
            if not 0 <= cell < n:
                raise ValueError(f"{name}={cell} out of range 0..{n - 1}")
            if cell in walls:
                raise ValueError(f"{name}={cell} is a wall")
        if self.start == self.goal:
            raise ValueError(f"start and goal must differ, both are {self.start}")
        object.__setattr__(self, "_distances", _bfs(self.width, self.height, walls, self.goal))

    def __deepcopy__(self, memo: dict) -> GridMap:
        return self  # immutable: copies of a state share it

    def distances_to_goal(self) -> tuple[int, ...]:
        """BFS distance (number of moves) from every cell to the goal; -1 for walls and unreachable
        cells. Computed once at construction; calling this is O(1)."""
        return self._distances

    def key(self) -> tuple:
        """Hashable canonical identity: ``(width, height, sorted walls, start, goal)``."""
        return (self.width, self.height, tuple(sorted(self.walls)), self.start, self.goal)


@dataclass
class PathState:
    """Mutable game state: a shared :class:`GridMap` plus the agent's current cell.

    ``position`` must be a free cell of ``grid`` (``ValueError`` otherwise). The initial state of
    a map is ``PathState(grid, grid.start)``.
    """

    grid: GridMap
    position: int

    def __post_init__(self) -> None:
        g = self.grid
        if not 0 <= self.position < g.width * g.height or self.position in g.walls:
            raise ValueError(f"position={self.position} is not a free cell of the grid")

    def copy(self) -> PathState:
        """Independent state sharing the (immutable) map."""
        return PathState(self.grid, self.position)

    def move(self, direction: str) -> bool:
        """Move one step in ``direction`` (a key of :data:`MOVES`) in place.

        Returns True if the agent moved; False, with the state unchanged, if the step would hit a
        wall or leave the grid. Raises ``ValueError`` for a direction not in :data:`MOVES`.
        """
        try:
            drow, dcol = MOVES[direction]
        except KeyError:
            raise ValueError(f"unknown direction {direction!r}, expected one of {list(MOVES)}") from None
        g = self.grid
        nxt = _neighbor(g.width, g.height, self.position, drow, dcol)
        if nxt < 0 or nxt in g.walls:
            return False
        self.position = nxt
        return True

    def is_solved(self) -> bool:
        """True when the agent stands on the goal."""
        return self.position == self.grid.goal

    def distance_to_goal(self) -> int:
        """Moves needed from the current position to reach the goal (-1 if unreachable); O(1)."""
        return self.grid._distances[self.position]


def parse_grid(text: str) -> PathState:
    """Parse the text format (see module docstring) into the state at the start cell.

    Blank lines and leading/trailing whitespace on each line are ignored; line numbers in errors
    refer to the input text (1-based), columns to the stripped row (1-based). Raises
    :class:`GridFormatError` for: no rows, an unexpected character, rows of unequal length, a
    missing or repeated ``S``/``G``, or a goal unreachable from the start ("goal unreachable").
    """
    rows: list[tuple[int, str]] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line:
            rows.append((lineno, line))
    if not rows:
        raise GridFormatError("empty grid: no rows")
    first_line, first_row = rows[0]
    width = len(first_row)
    walls: set[int] = set()
    marks: dict[str, tuple[int, int, int]] = {}  # 'S'/'G' -> (cell, line, col)
    for r, (lineno, line) in enumerate(rows):
        if len(line) != width:
            raise GridFormatError(
                f"line {lineno}: row has {len(line)} cells, expected {width} (the width of line {first_line})"
            )
        for c, ch in enumerate(line):
            cell = r * width + c
            if ch == WALL:
                walls.add(cell)
            elif ch in (START, GOAL):
                if ch in marks:
                    _, pl, pc = marks[ch]
                    raise GridFormatError(
                        f"line {lineno}, col {c + 1}: second {ch!r} (first at line {pl}, col {pc})"
                    )
                marks[ch] = (cell, lineno, c + 1)
            elif ch != FREE:
                raise GridFormatError(
                    f"line {lineno}, col {c + 1}: unexpected character {ch!r} "
                    f"(allowed: {WALL!r}, {FREE!r}, {START!r}, {GOAL!r})"
                )
    for ch, what in ((START, "start"), (GOAL, "goal")):
        if ch not in marks:
            raise GridFormatError(f"no {ch!r} ({what}) in grid")
    grid = GridMap(width, len(rows), frozenset(walls), marks[START][0], marks[GOAL][0])
    if grid.distances_to_goal()[grid.start] < 0:
        sl, sc = marks[START][1:]
        gl, gc = marks[GOAL][1:]
        raise GridFormatError(f"goal unreachable: G (line {gl}, col {gc}) from S (line {sl}, col {sc})")
    return PathState(grid, grid.start)


def _chars(grid: GridMap) -> list[str]:
    """Row-major characters of the bare map: walls and free cells only."""
    walls = grid.walls
    return [WALL if i in walls else FREE for i in range(grid.width * grid.height)]


def _join(chars: list[str], width: int) -> str:
    return "\n".join("".join(chars[i : i + width]) for i in range(0, len(chars), width))


def to_text(state: PathState) -> str:
    """The map in the text format, ``S`` at the start and ``G`` at the goal (position not shown).

    ``parse_grid(to_text(s)).grid == s.grid``. No trailing newline.
    """
    grid = state.grid
    chars = _chars(grid)
    chars[grid.start] = START
    chars[grid.goal] = GOAL
    return _join(chars, grid.width)


def render_ansi(state: PathState) -> str:
    """The map for observations: ``@`` at the current position, ``G`` at the goal (``@`` once the
    agent stands on it), the start drawn as a free cell ``.``. No trailing newline."""
    grid = state.grid
    chars = _chars(grid)
    chars[grid.goal] = GOAL
    chars[state.position] = AGENT
    return _join(chars, grid.width)


def render_rgb(state: PathState, cell_px: int = 16) -> np.ndarray:
    """RGB image ``(height * cell_px, width * cell_px, 3)`` of dtype uint8.

    Free cells white, walls dark grey, start light blue, goal green; the agent is a red square
    inset by ``cell_px // 4`` pixels in its cell. Raises ``ValueError`` if ``cell_px < 1``.
    """
    if cell_px < 1:
        raise ValueError(f"cell_px must be >= 1, got {cell_px}")
    grid = state.grid
    colors = np.empty((grid.height * grid.width, 3), dtype=np.uint8)
    colors[:] = _RGB_FREE
    if grid.walls:
        colors[list(grid.walls)] = _RGB_WALL
    colors[grid.start] = _RGB_START
    colors[grid.goal] = _RGB_GOAL
    image = colors.reshape(grid.height, grid.width, 3).repeat(cell_px, axis=0).repeat(cell_px, axis=1)
    row, col = divmod(state.position, grid.width)
    inset = cell_px // 4
    top, left = row * cell_px + inset, col * cell_px + inset
    image[top : top + cell_px - 2 * inset, left : left + cell_px - 2 * inset] = _RGB_AGENT
    return image


def shortest_path(state: PathState) -> list[str] | None:
    """Optimal move sequence from the current position to the goal, or None if unreachable.

    ``[]`` when already on the goal. Among all shortest paths it returns the lexicographically
    first in the direction order ``U < D < L < R`` (the order of :data:`MOVES`): each step takes
    the first direction that decreases the BFS distance. Cost O(path length) using the cached
    distances.
    """
    grid = state.grid
    dist = grid._distances
    pos = state.position
    d = dist[pos]
    if d < 0:
        return None
    path: list[str] = []
    while d > 0:
        for name, (drow, dcol) in MOVES.items():
            nb = _neighbor(grid.width, grid.height, pos, drow, dcol)
            if nb >= 0 and dist[nb] == d - 1:  # walls have distance -1, never d - 1
                path.append(name)
                pos = nb
                d -= 1
                break
    return path


def generate(
    rng: np.random.Generator,
    *,
    width: int = 5,
    height: int = 5,
    obstacle_density: float = 0.2,
    min_distance: int | None = None,
    max_attempts: int = 1000,
) -> PathState:
    """Random solvable map, returned as the state at its start cell.

    Each attempt draws one random permutation of the cells: its first
    ``k = round(obstacle_density * width * height)`` cells become walls (exactly ``k`` walls) and
    the next one the goal; the start is the first later cell of the permutation whose BFS distance
    to the goal is at least ``min_distance`` (default ``max(2, (width + height) // 2)``). An
    attempt with no such cell is discarded. The result depends only on the arguments and the
    generator state, and the goal is always reachable with ``distance_to_goal() >= min_distance``.

    Raises ``ValueError`` naming the offending argument(s) if they are invalid (``width, height >=
    1``, at least 2 free cells, ``0 <= obstacle_density < 1``, ``min_distance >= 1``,
    ``max_attempts >= 1``), if ``min_distance`` exceeds what the free-cell count allows, or if no
    instance is found within ``max_attempts`` attempts.
    """
    if width < 1 or height < 1:
        raise ValueError(f"width and height must be >= 1, got width={width}, height={height}")
    if not 0.0 <= obstacle_density < 1.0:
        raise ValueError(f"obstacle_density must be in [0, 1), got {obstacle_density}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    n = width * height
    n_walls = round(obstacle_density * n)
    if n - n_walls < 2:
        raise ValueError(
            f"width={width}, height={height}, obstacle_density={obstacle_density} leave "
            f"{n - n_walls} free cells; need at least 2"
        )
    if min_distance is None:
        min_distance = max(2, (width + height) // 2)
    if min_distance < 1:
        raise ValueError(f"min_distance must be >= 1, got {min_distance}")
    if min_distance > n - n_walls - 1:
        raise ValueError(
            f"min_distance={min_distance} impossible with width={width}, height={height}, "
            f"obstacle_density={obstacle_density} ({n - n_walls} free cells)"
        )
    for _ in range(max_attempts):
        perm = rng.permutation(n).tolist()
        walls = frozenset(perm[:n_walls])
        goal = perm[n_walls]
        dist = _bfs(width, height, walls, goal)
        for start in perm[n_walls + 1 :]:
            if dist[start] >= min_distance:
                return PathState(GridMap(width, height, walls, start, goal), start)
    raise ValueError(
        f"no instance with width={width}, height={height}, obstacle_density={obstacle_density}, "
        f"min_distance={min_distance} found within max_attempts={max_attempts}"
    )
