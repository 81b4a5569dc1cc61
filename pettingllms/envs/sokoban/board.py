"""Sokoban rules, XSB level text and rendering.

Pure game logic: no environment API, no randomness. A board is a shared,
immutable :class:`Layout` (walls and goals) plus a mutable
:class:`SokobanState` (player and boxes). Cells are integers
``row * width + col``.

XSB glyphs: ``#`` wall, ``@`` player, ``+`` player on goal, ``$`` box,
``*`` box on goal, ``.`` goal, and ``' '``, ``-`` or ``_`` floor.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

import numpy as np

from pettingllms.core.errors import PettingLLMsError

MOVES = MappingProxyType({"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)})
"""Read-only mapping from a direction letter to its ``(drow, dcol)`` step."""

_FLOOR_CHARS = " -_"
_GLYPHS = {
    # (player, box, goal) -> XSB glyph, for a non-wall cell.
    (False, False, False): " ",
    (False, False, True): ".",
    (False, True, False): "$",
    (False, True, True): "*",
    (True, False, False): "@",
    (True, False, True): "+",
}

# render_rgb palette, indexed by the tile codes computed there.
_OUTSIDE, _WALL, _FLOOR, _GOAL, _BOX, _BOX_ON_GOAL, _PLAYER, _PLAYER_ON_GOAL = range(8)
_PALETTE = np.array(
    [
        (0, 0, 0),  # outside the level (not reachable from the player)
        (96, 96, 96),  # wall
        (222, 206, 170),  # floor
        (230, 80, 80),  # goal
        (160, 100, 40),  # box
        (60, 170, 60),  # box on goal
        (40, 90, 220),  # player
        (150, 60, 200),  # player on goal
    ],
    dtype=np.uint8,
)


class LevelFormatError(PettingLLMsError, ValueError):
    """A level text is not a valid Sokoban level.

    ``line`` and ``column`` (1-based, counted in the text as given, blank
    leading lines included) locate the problem when it has a place; both are
    ``None`` for whole-level problems such as a missing player. The message
    starts with ``"line L, column C: "`` whenever they are set.
    """

    def __init__(self, problem: str, line: int | None = None, column: int | None = None):
        self.line = line
        self.column = column
        prefix = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(prefix + problem)


@dataclass(frozen=True)
class Layout:
    """The fixed part of a level: grid size, wall cells and goal cells.

    Cells are ``row * width + col``. Goals are never walls. Cells outside the
    grid count as walls for movement.
    """

    width: int
    height: int
    walls: frozenset[int]
    goals: frozenset[int]

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"layout must be at least 1x1, got {self.width}x{self.height}")
        size = self.width * self.height
        for name, cells in (("wall", self.walls), ("goal", self.goals)):
            bad = [c for c in cells if not 0 <= c < size]
            if bad:
                raise ValueError(f"{name} cell {bad[0]} is outside the {self.width}x{self.height} grid")
        if self.walls & self.goals:
            raise ValueError(f"cell {min(self.walls & self.goals)} is both a wall and a goal")

    def __deepcopy__(self, memo: dict) -> Layout:
        return self  # immutable: copies of a state share it

    @cached_property
    def base_text(self) -> bytes:
        """The empty board as ASCII: the XSB glyph of every cell without player and boxes (walls, goals, floor),
        rows of the full width joined by newlines (cell c at byte ``c + c // width``), computed once."""
        rows = (
            "".join(
                "#" if cell in self.walls else _GLYPHS[False, False, cell in self.goals]
                for cell in range(start, start + self.width)
            )
            for start in range(0, self.width * self.height, self.width)
        )
        return "\n".join(rows).encode("ascii")

    @cached_property
    def goal_distances(self) -> tuple[int, ...]:
        """Manhattan distance from every cell to its nearest goal (0 without goals), computed once."""
        goals = [divmod(goal, self.width) for goal in self.goals]
        return tuple(
            min((abs(row - gr) + abs(col - gc) for gr, gc in goals), default=0)
            for row in range(self.height)
            for col in range(self.width)
        )

    def neighbour(self, cell: int, direction: str) -> int | None:
        """The cell one step from ``cell`` (a cell of the grid) in ``direction``, or ``None`` if that is
        off the grid or a wall. Raises ``ValueError`` for an unknown direction."""
        steps = self.neighbours.get(direction)
        if steps is None:
            raise _unknown(direction)
        return steps[cell]

    @cached_property
    def neighbours(self) -> dict[str, tuple[int | None, ...]]:
        """For each direction, every cell's neighbour that way (None off the grid or on a wall), computed once."""
        steps = {}
        for direction, (drow, dcol) in MOVES.items():
            targets = []
            for cell in range(self.width * self.height):
                row, col = divmod(cell, self.width)
                row, col = row + drow, col + dcol
                target = row * self.width + col
                inside = 0 <= row < self.height and 0 <= col < self.width
                targets.append(target if inside and target not in self.walls else None)
            steps[direction] = tuple(targets)
        return steps


@dataclass
class SokobanState:
    """A position: the shared layout, the player's cell and the box cells.

    Invariants (checked on construction): the player and boxes are inside the
    grid and not on walls, the player is not on a box, and a layout with boxes
    has at least one goal. The number of boxes may differ from the number of
    goals; :func:`parse_xsb` and the generator always produce equal counts.
    """

    layout: Layout
    player: int
    boxes: frozenset[int]

    def __post_init__(self) -> None:
        size = self.layout.width * self.layout.height
        for name, cell in [("player", self.player)] + [("box", b) for b in self.boxes]:
            if not 0 <= cell < size:
                raise ValueError(f"{name} cell {cell} is outside the grid")
            if cell in self.layout.walls:
                raise ValueError(f"{name} cell {cell} is a wall")
        if self.player in self.boxes:
            raise ValueError(f"player cell {self.player} holds a box")
        if self.boxes and not self.layout.goals:
            raise ValueError("a state with boxes needs at least one goal")

    def copy(self) -> SokobanState:
        """An independent state sharing the (immutable) layout (not checked again: this one was)."""
        clone = object.__new__(SokobanState)
        clone.layout, clone.player, clone.boxes = self.layout, self.player, self.boxes
        return clone

    def move(self, direction: str) -> str:
        """Apply one move in place and say what happened.

        Returns ``"moved"`` (player stepped onto a free cell), ``"pushed"``
        (player stepped and pushed the box ahead one cell) or ``"blocked"``
        (wall ahead, or a box backed by a wall or another box; the state is
        unchanged). Raises ``ValueError`` for a direction not in :data:`MOVES`.
        """
        steps = self.layout.neighbours.get(direction)
        if steps is None:
            raise _unknown(direction)
        target = steps[self.player]
        if target is None:
            return "blocked"
        if target not in self.boxes:
            self.player = target
            return "moved"
        beyond = steps[target]
        if beyond is None or beyond in self.boxes:
            return "blocked"
        self.boxes = (self.boxes - {target}) | {beyond}
        self.player = target
        return "pushed"

    def is_solved(self) -> bool:
        """True iff every box is on a goal."""
        return self.boxes <= self.layout.goals

    def boxes_on_goals(self) -> int:
        """Number of boxes standing on goals."""
        return len(self.boxes & self.layout.goals)

    def box_distance(self) -> int:
        """Sum over boxes of the Manhattan distance to the nearest goal.

        Zero iff every box is on a goal. It is a shaping signal, not a move
        count: several boxes may count the same nearest goal.
        """
        return sum(map(self.layout.goal_distances.__getitem__, self.boxes))

    def key(self) -> tuple:
        """Hashable canonical identity of the position.

        ``(width, height, walls, goals, player, boxes)`` with the cell sets as
        sorted tuples, so equal positions have equal keys and the key's
        ``repr`` is stable across processes (usable for stable hashing).
        """
        layout = self.layout
        return (
            layout.width,
            layout.height,
            tuple(sorted(layout.walls)),
            tuple(sorted(layout.goals)),
            self.player,
            tuple(sorted(self.boxes)),
        )


# long function: one pass of a line-oriented parser whose checks share the cell sets it builds; split, the
# pieces would pass those sets around without being readable alone
def parse_xsb(text: str) -> SokobanState:
    """Parse one level in XSB notation.

    Leading and trailing blank lines are ignored, and so are floor characters
    at the end of a line. Rows may be ragged: cells past the end of a short row
    are outside the level; they are kept as (unreachable) floor, not walls, so
    that :func:`to_xsb` reproduces the text. Raises :class:`LevelFormatError`
    for an unknown character, no player or a second player, no boxes, a box
    count different from the goal count, or a level whose region around the
    player or a box is not enclosed by walls (open to the edge or to the
    outside of a short row).
    """
    lines = text.replace("\r\n", "\n").split("\n")
    first_line = 0
    while first_line < len(lines) and not lines[first_line].rstrip(_FLOOR_CHARS):
        first_line += 1
    rows = [line.rstrip(_FLOOR_CHARS) for line in lines[first_line:]]
    while rows and not rows[-1]:
        rows.pop()
    if not rows:
        raise LevelFormatError("level is empty")

    height = len(rows)
    width = max(len(row) for row in rows)
    walls: set[int] = set()
    goals: set[int] = set()
    boxes: set[int] = set()
    player: int | None = None

    def place(cell: int) -> tuple[int, int]:
        row, col = divmod(cell, width)
        return first_line + row + 1, col + 1

    for row, line in enumerate(rows):
        for col, char in enumerate(line):
            cell = row * width + col
            if char == "#":
                walls.add(cell)
            elif char in "@+":
                if player is not None:
                    first = "line {}, column {}".format(*place(player))
                    raise LevelFormatError(f"second player {char!r} (first at {first})", *place(cell))
                player = cell
            elif char not in "$*." and char not in _FLOOR_CHARS:
                raise LevelFormatError(f"unknown character {char!r}", *place(cell))
            if char in "$*":
                boxes.add(cell)
            if char in ".+*":
                goals.add(cell)

    if player is None:
        raise LevelFormatError("level has no player ('@' or '+')")
    if not boxes:
        raise LevelFormatError("level has no boxes ('$' or '*')")
    if len(boxes) != len(goals):
        raise LevelFormatError(f"level has {len(boxes)} boxes but {len(goals)} goals")

    row_lengths = [len(row) for row in rows]
    seen = {player} | boxes
    stack = list(seen)
    open_cells = []
    while stack:
        cell = stack.pop()
        row, col = divmod(cell, width)
        for drow, dcol in MOVES.values():
            nrow, ncol = row + drow, col + dcol
            if not (0 <= nrow < height and 0 <= ncol < row_lengths[nrow]):
                open_cells.append(cell)
                continue
            neighbour = nrow * width + ncol
            if neighbour not in walls and neighbour not in seen:
                seen.add(neighbour)
                stack.append(neighbour)
    if open_cells:
        raise LevelFormatError(
            "level is not enclosed by walls: this cell, reachable from the player or a box, "
            "borders the outside (first such cell in reading order)",
            *place(min(open_cells)),
        )

    layout = Layout(width, height, frozenset(walls), frozenset(goals))
    return SokobanState(layout, player, frozenset(boxes))


def _unknown(direction: str) -> ValueError:
    return ValueError(f"unknown direction {direction!r}; expected one of {', '.join(MOVES)}")


def to_xsb(state: SokobanState) -> str:
    """The level as XSB text (rows without trailing floor, joined by newlines,
    no final newline). ``parse_xsb(to_xsb(s)).key() == s.key()`` for any state
    that :func:`parse_xsb` produced."""
    return "\n".join(row.rstrip() for row in render_ansi(state).split("\n"))


def render_ansi(state: SokobanState) -> str:
    """The board as a plain-text grid of XSB glyphs, every row the full width."""
    layout = state.layout
    goals, width = layout.goals, layout.width
    text = bytearray(layout.base_text)
    for box in state.boxes:
        text[box + box // width] = 42 if box in goals else 36  # "*" box on goal, "$" box
    player = state.player
    text[player + player // width] = 43 if player in goals else 64  # "+" player on goal, "@" player
    return text.decode("ascii")


def render_rgb(state: SokobanState, cell_px: int = 16) -> np.ndarray:
    """The board as a ``uint8`` image of shape ``(height*cell_px, width*cell_px, 3)``.

    Each cell is a flat square; wall, floor, goal, box, box on goal, player,
    player on goal, and floor outside the level (not reachable from the
    player) each have their own colour.
    """
    if cell_px < 1:
        raise ValueError(f"cell_px must be >= 1, got {cell_px}")
    layout = state.layout
    inside = {state.player}
    stack = [state.player]
    while stack:
        cell = stack.pop()
        for direction in MOVES:
            neighbour = layout.neighbour(cell, direction)
            if neighbour is not None and neighbour not in inside:
                inside.add(neighbour)
                stack.append(neighbour)
    tiles = np.full(layout.width * layout.height, _OUTSIDE, dtype=np.intp)
    tiles[list(layout.walls)] = _WALL
    tiles[list(inside)] = _FLOOR
    tiles[list(layout.goals)] = _GOAL
    tiles[list(state.boxes)] = _BOX
    tiles[list(state.boxes & layout.goals)] = _BOX_ON_GOAL
    tiles[state.player] = _PLAYER_ON_GOAL if state.player in layout.goals else _PLAYER
    image = _PALETTE[tiles.reshape(layout.height, layout.width)]
    return np.repeat(np.repeat(image, cell_px, axis=0), cell_px, axis=1)
