"""Seeded Sokoban level generator with move-optimal solutions.

A room is carved by a random walk inside the border walls (the topology
scheme of gym-sokoban), goals are placed on random floor cells, and one
multi-source breadth-first search runs backwards from every solved position
(boxes on goals, player on any other floor cell) over reverse moves: a player
step, or a pull (the player steps away from an adjacent box, dragging it into
the cell the player left). The search depth of each position reached is
exactly its optimal forward solution length in moves, so the start is drawn
among the farthest positions and its solution read off the parent links.
"""

from __future__ import annotations

import numpy as np

from pettingllms.core.errors import PettingLLMsError

from .board import Layout, SokobanState
from .solver import DIRECTIONS, CellGraph

# Random-walk stamps (row, col offsets around the walker), as in gym-sokoban.
_STAMPS = (
    ((0, -1), (0, 0), (0, 1)),
    ((-1, 0), (0, 0), (1, 0)),
    ((0, -1), (0, 0), (1, 0)),
    ((0, -1), (0, 0), (1, -1), (1, 0)),
    ((0, 0), (0, 1), (1, 0)),
)
_WALK_STEPS = ((1, 0), (0, 1), (-1, 0), (0, -1))
_P_CHANGE_DIRECTION = 0.35
# Position in DIRECTIONS of the opposite of each direction.
_OPPOSITE = tuple(DIRECTIONS.index({"U": "D", "D": "U", "L": "R", "R": "L"}[d]) for d in DIRECTIONS)


class GenerationError(PettingLLMsError, RuntimeError):
    """No room with a long enough solution was found within ``max_attempts``."""


def _carve(rng: np.random.Generator, width: int, height: int) -> list[int]:
    """Floor cells (sorted) of a random-walk room inside the border walls.

    The walker stamps a small shape around itself at each of
    ``int(1.7 * (width + height))`` steps; every stamp covers the walker's
    cell and consecutive walker cells are adjacent or equal, so the floor is
    connected.
    """
    num_steps = int(1.7 * (width + height))
    row = int(rng.integers(1, height - 1))
    col = int(rng.integers(1, width - 1))
    direction = _WALK_STEPS[int(rng.integers(4))]
    changes = rng.random(num_steps).tolist()
    new_directions = rng.integers(4, size=num_steps).tolist()
    stamps = rng.integers(len(_STAMPS), size=num_steps).tolist()
    floor = set()
    for change, new_direction, stamp in zip(changes, new_directions, stamps):
        if change < _P_CHANGE_DIRECTION:
            direction = _WALK_STEPS[new_direction]
        row = min(max(row + direction[0], 1), height - 2)
        col = min(max(col + direction[1], 1), width - 2)
        for drow, dcol in _STAMPS[stamp]:
            r, c = row + drow, col + dcol
            if 0 < r < height - 1 and 0 < c < width - 1:
                floor.add(r * width + c)
    return sorted(floor)


def _backward_search(graph: CellGraph) -> tuple[dict[int, int], list[int], int]:
    """Breadth-first search over reverse moves from all solved positions.

    Returns ``(parent, farthest, depth)``: ``parent`` maps every reached packed
    state to the state it was reached from (``-1`` for the solved roots), which
    is one forward move closer to solved; ``farthest`` lists the states at the
    greatest depth, in discovery order; ``depth`` is that depth, the optimal
    solution length of each of them.
    """
    bits = graph.box_bit
    goal_bits = 0
    for goal in graph.layout.goals:
        goal_bits |= bits[graph.index[goal]]

    # pulls[p]: per direction the player can step to q (box bit at q, xor for
    # the step, box bit of the cell behind the player or 0, xor for the pull).
    pulls = []
    for p, ahead in enumerate(graph.step):
        entries = []
        for d, q in enumerate(ahead):
            if q < 0:
                continue
            b = graph.step[p][_OPPOSITE[d]]
            behind = bits[b] if b >= 0 else 0
            entries.append((bits[q], p ^ q, behind, p ^ q ^ behind ^ bits[p]))
        pulls.append(entries)

    frontier = [goal_bits | p for p in range(len(graph.cells)) if not goal_bits & bits[p]]
    parent = dict.fromkeys(frontier, -1)
    depth = 0
    player_mask = (1 << graph.shift) - 1
    while True:
        next_frontier = []
        for s in frontier:
            for box_ahead, step_xor, behind, pull_xor in pulls[s & player_mask]:
                if s & box_ahead:
                    continue
                t = s ^ step_xor
                if t not in parent:
                    parent[t] = s
                    next_frontier.append(t)
                if s & behind:
                    t = s ^ pull_xor
                    if t not in parent:
                        parent[t] = s
                        next_frontier.append(t)
        if not next_frontier:
            return parent, frontier, depth
        frontier = next_frontier
        depth += 1


def generate(
    rng: np.random.Generator,
    *,
    width: int = 7,
    height: int = 7,
    num_boxes: int = 2,
    min_solution_length: int = 10,
    max_attempts: int = 200,
) -> tuple[SokobanState, list[str]]:
    """A random level and one of its move-optimal solutions.

    Draws only from ``rng``: the same generator state gives the same level.
    The level is ``width`` x ``height`` including its border walls, has
    ``num_boxes`` boxes and as many goals, is never already solved, and its
    optimal solution is at least ``max(min_solution_length, 1)`` moves long.
    The start is a uniformly drawn one of the positions farthest from solved in
    its room, so solutions are usually much longer than the minimum. Each
    attempt carves a new room; raises :class:`GenerationError` after
    ``max_attempts`` rooms fall short, and ``ValueError`` for sizes that
    cannot hold ``num_boxes`` boxes and a player. Cost grows quickly with the
    number of floor cells and boxes (the search visits every position of the
    room).
    """
    if width < 3 or height < 3:
        raise ValueError(f"the board must be at least 3x3, got {width}x{height}")
    if num_boxes < 1:
        raise ValueError(f"num_boxes must be >= 1, got {num_boxes}")
    if (width - 2) * (height - 2) <= num_boxes:
        raise ValueError(f"a {width}x{height} board cannot hold {num_boxes} boxes and a player")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    needed = max(min_solution_length, 1)
    every_cell = frozenset(range(width * height))
    for _ in range(max_attempts):
        floor = _carve(rng, width, height)
        if len(floor) <= num_boxes:
            continue
        goals = frozenset(floor[i] for i in rng.choice(len(floor), size=num_boxes, replace=False).tolist())
        layout = Layout(width, height, every_cell.difference(floor), goals)
        graph = CellGraph(layout)
        parent, farthest, depth = _backward_search(graph)
        if depth < needed:
            continue
        start = farthest[int(rng.integers(len(farthest)))]
        player = graph.player_cell(start)
        boxes = frozenset(cell for cell, bit in zip(graph.cells, graph.box_bit) if start & bit)
        return SokobanState(layout, player, boxes), graph.path(parent, start, forward=False)
    raise GenerationError(
        f"no {width}x{height} room with {num_boxes} boxes and a solution of at least "
        f"{needed} moves in {max_attempts} attempts"
    )
