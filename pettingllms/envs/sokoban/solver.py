"""Move-optimal Sokoban solver (breadth-first search over player and boxes).

Search states are packed into one integer: the low ``shift`` bits hold the
player's index among the layout's non-wall cells, and bit ``shift + i`` is set
when non-wall cell ``i`` holds a box. A move then is a single XOR with a
precomputed constant, which keeps the pure-Python search fast. The same
encoding serves the generator's backward search (``generator.py``).
"""

from __future__ import annotations

from pettingllms.core.errors import PettingLLMsError

from .board import MOVES, Layout, SokobanState

DIRECTIONS = tuple(MOVES)
"""Direction letters in table order (U, D, L, R)."""


class SolverLimitError(PettingLLMsError, RuntimeError):
    """The search would have to hold more than ``max_states`` states."""


class CellGraph:
    """Non-wall cells of a layout, indexed ``0..n-1``, with their neighbours.

    ``cells[i]`` is the grid cell of index ``i``; ``index`` maps back.
    ``step[i][d]`` is the index one step from ``i`` in direction
    ``DIRECTIONS[d]``, or ``-1`` for a wall or the grid edge. ``shift`` and
    ``box_bit`` define the packed state encoding described in the module
    docstring.
    """

    def __init__(self, layout: Layout):
        self.layout = layout
        self.cells = [c for c in range(layout.width * layout.height) if c not in layout.walls]
        self.index = {cell: i for i, cell in enumerate(self.cells)}
        self.step = [
            [self.index.get(layout.neighbour(cell, d), -1) for d in DIRECTIONS] for cell in self.cells
        ]
        self.shift = len(self.cells).bit_length()
        self.box_bit = [1 << (self.shift + i) for i in range(len(self.cells))]
        # Horizontal first so that, on a one-column grid, +-1 means U/D.
        self._letter = {-1: "L", 1: "R", -layout.width: "U", layout.width: "D"}

    def encode(self, player: int, boxes) -> int:
        """Pack a player grid cell and box grid cells into a search state."""
        state = self.index[player]
        for box in boxes:
            state |= self.box_bit[self.index[box]]
        return state

    def player_cell(self, state: int) -> int:
        """The player's grid cell in a packed state."""
        return self.cells[state & ((1 << self.shift) - 1)]

    def direction(self, before: int, after: int) -> str:
        """The letter of the move taking the player from packed ``before`` to packed ``after``."""
        return self._letter[self.player_cell(after) - self.player_cell(before)]

    def path(self, parent: dict[int, int], state: int, *, forward: bool) -> list[str]:
        """Moves along ``parent`` links from ``state`` to a root (parent ``-1``).

        ``forward=True``: links point from a state to its predecessor (forward
        search); the moves are returned root-to-``state``. ``forward=False``:
        links point towards a solved root (backward search); the moves are
        returned ``state``-to-root, i.e. a solution of ``state``.
        """
        moves = []
        while parent[state] != -1:
            previous = parent[state]
            moves.append(self.direction(previous, state) if forward else self.direction(state, previous))
            state = previous
        if forward:
            moves.reverse()
        return moves

    def live_cells(self) -> list[bool]:
        """``live[i]``: a lone box on cell ``i`` can be pushed to some goal.

        Computed by pulling boxes backwards from every goal; a box on a dead
        cell makes a position unsolvable whatever the other boxes do.
        """
        live = [False] * len(self.cells)
        stack = [self.index[g] for g in self.layout.goals]
        for i in stack:
            live[i] = True
        while stack:
            box = stack.pop()
            for d in range(4):
                player = self.step[box][d]
                if player >= 0 and self.step[player][d] >= 0 and not live[player]:
                    live[player] = True
                    stack.append(player)
        return live


# long function: one breadth-first search loop; its state (frontier, parents, cell graph) lives in locals on
# the generator's hot path (benchmarks/bench_sokoban_generation.py), where helpers would add a call per state
def solve(state: SokobanState, *, max_states: int = 1_000_000) -> list[str] | None:
    """A shortest solution of ``state`` in moves (pushes count as moves).

    Returns the move letters (``[]`` if already solved) or ``None`` if no
    sequence of moves puts every box on a goal. Breadth-first over (player,
    boxes), pruning pushes onto cells from which no goal is reachable (which
    preserves optimality). Raises :class:`SolverLimitError` when more than
    ``max_states`` distinct states have been generated without reaching a
    solution (checked after each expanded state).
    """
    if state.is_solved():
        return []
    graph = CellGraph(state.layout)
    live = graph.live_cells()
    if not all(live[graph.index[b]] for b in state.boxes):
        return None
    not_goal = 0
    for i, cell in enumerate(graph.cells):
        if cell not in state.layout.goals:
            not_goal |= graph.box_bit[i]

    # moves[p]: per direction (box bit ahead, xor for a step, box bit two ahead
    # or 0 if that cell is a wall or dead, xor for a push).
    bits = graph.box_bit
    moves = []
    for p, ahead in enumerate(graph.step):
        entries = []
        for d, q in enumerate(ahead):
            if q < 0:
                continue
            r = graph.step[q][d]
            beyond = bits[r] if r >= 0 and live[r] else 0
            entries.append((bits[q], p ^ q, beyond, p ^ q ^ bits[q] ^ beyond))
        moves.append(entries)

    player_mask = (1 << graph.shift) - 1
    start = graph.encode(state.player, state.boxes)
    parent = {start: -1}
    frontier = [start]
    while frontier:
        next_frontier = []
        for s in frontier:
            for box_ahead, step_xor, beyond, push_xor in moves[s & player_mask]:
                if s & box_ahead:
                    if not beyond or s & beyond:
                        continue
                    t = s ^ push_xor
                    if t in parent:
                        continue
                    parent[t] = s
                    if not t & not_goal:
                        return graph.path(parent, t, forward=True)
                else:
                    t = s ^ step_xor
                    if t in parent:
                        continue
                    parent[t] = s
                next_frontier.append(t)
            if len(parent) > max_states:
                raise SolverLimitError(f"search exceeded max_states={max_states}")
        frontier = next_frontier
    return None
