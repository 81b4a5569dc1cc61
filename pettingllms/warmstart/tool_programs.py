"""Tool programs for the warm start's demonstrations: a compact solver per puzzle that the tiny model can learn to
write, and imperfect variants of it.

The tool agent of a puzzle env (`pettingllms.envs.tool_plan`) may answer with a ```python block that the env runs
in the sandbox with the current board on standard input, exactly as the observation shows it. `PROGRAMS` maps each
env id to its `ToolProgram`: the correct solver and its imperfect variants, each a plausible slip. They are written
for the tiny model's tokenizer (`pettingllms.models.tokenizer`): multi-letter names, few dots and digits.

- `plan-path-v0`, `BFS`: a breadth-first search over the map (`@` the agent, `G` the goal, `#` walls) printing a
  shortest path (79 tokens under the miniature team's tokenizer). Variants, with the share of 100 training grids
  (5x5, density 0.2, seeds 0..99) each still solves, measured when written: `"wraps"` forgets that a left or right
  step must stay on its row (0.39), `"walls"` forgets the walls (0.29), `"updown"` swaps up and down (0.03).
  `plan-path-relay-v0` (a grid a turn) plays the same program and variants on each turn's grid.
- `sokoban-v0`, `SOKOBAN_BFS`: a breadth-first search over (player, boxes) states of the XSB board, printing a
  solution with the fewest moves. Variants, with the share of 100 training levels (the defaults: 7x7, 2 boxes,
  seeds 0..99) each still solves: `"pushes"` forgets that the cell behind a pushed box must be free (0.09),
  `"updown"` swaps up and down (0.0), `"onebox"` stops as soon as one box is on a goal (0.0).
- `sudoku-v0`, `SUDOKU_BACKTRACK`: reads the grid from its `|`-framed rows (box width from the first box of a row)
  and fills the blanks by backtracking, printing `(row,col,digit)` triples. Variants, with the share of 100
  training puzzles (4x4, seeds 0..99; on 9x9 every variant solves none): `"nocolumn"` forgets the column
  constraint (0.57), `"zero"` prints 0-based rows and columns (0.0), `"digits"` never tries the largest digit
  (0.09).

`tests/test_envs_behaviour.py` pins that each correct program solves every instance it is given and that each
variant fails some. A warm start that sees variants among correct programs and direct answers gives RL
something to discover: which program to write, and that writing one beats guessing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

BFS = """import sys
rows = sys.stdin.read().split()
width = len(rows[0])
cells = "".join(rows)
start, goal = cells.index("@"), cells.index("G")
paths = {start: ""}
queue = [start]
for here in queue:
    for move, step in ("U", -width), ("D", width), ("L", -1), ("R", 1):
        there = here + step
        if there in paths or not 0 <= there < len(cells) or cells[there] == "#":
            continue
        if step in (-1, 1) and there // width != here // width:
            continue
        paths[there] = paths[here] + move
        queue.append(there)
print(" ".join(paths[goal]))
"""

_UP_DOWN_SWAPPED = ('("U", -width), ("D", width)', '("U", width), ("D", -width)')
"""(what, with what): the move table with up and down swapped, a slip of both searches."""
_ROW_CHECK = """        if step in (-1, 1) and there // width != here // width:
            continue
"""
BUGGY_BFS = MappingProxyType(
    {
        "wraps": BFS.replace(_ROW_CHECK, ""),
        "walls": BFS.replace(' or cells[there] == "#"', ""),
        "updown": BFS.replace(*_UP_DOWN_SWAPPED),
    }
)
SOKOBAN_BFS = r"""import sys
rows = sys.stdin.read().split("\n")
width = max(len(row) for row in rows)
cells = "".join(row.ljust(width) for row in rows)
walls = {spot for spot, glyph in enumerate(cells) if glyph == "#"}
goals = {spot for spot, glyph in enumerate(cells) if glyph in "+*."}
boxes = frozenset(spot for spot, glyph in enumerate(cells) if glyph in "$*")
start = (cells.replace("+", "@").index("@"), boxes)
paths = {start: ""}
queue = [start]
for here in queue:
    player, boxes = here
    if boxes <= goals:
        print(" ".join(paths[here]))
        break
    for move, step in ("U", -width), ("D", width), ("L", -1), ("R", 1):
        there = player + step
        moved = boxes
        if there in boxes:
            moved = boxes - {there} | {there + step}
            if there + step in walls or there + step in boxes:
                continue
        state = (there, moved)
        if there in walls or state in paths:
            continue
        paths[state] = paths[here] + move
        queue.append(state)
"""

_PUSH_CHECK = """            if there + step in walls or there + step in boxes:
                continue
"""
SUDOKU_BACKTRACK = r"""import sys
grid = []
for line in sys.stdin.read().split("\n"):
    if line.endswith("|"):
        parts = line.split("|")
        grid.append(" ".join(parts[1:]).split())
        across = len(parts[1].split())
size = len(grid)
down = size // across
blanks = [(row, col) for row in range(size) for col in range(size) if grid[row][col] == "."]
def fits(row, col, digit):
    top, left = row - row % down, col - col % across
    for spot in range(size):
        if digit in (grid[row][spot], grid[spot][col], grid[top + spot // across][left + spot % across]):
            return False
    return True
def solve(index):
    if index == len(blanks):
        return True
    row, col = blanks[index]
    for digit in map(str, range(1, size + 1)):
        if fits(row, col, digit):
            grid[row][col] = digit
            if solve(index + 1):
                return True
    grid[row][col] = "."
    return False
solve(0)
print("<answer>" + " ".join(f"({row + 1},{col + 1},{grid[row][col]})" for row, col in blanks) + "</answer>")
"""


@dataclasses.dataclass(frozen=True)
class ToolProgram:
    """A puzzle's solver program and its imperfect variants (name -> program)."""

    correct: str
    variants: Mapping[str, str]


PROGRAMS = MappingProxyType(
    {
        "plan-path-v0": ToolProgram(BFS, BUGGY_BFS),
        "plan-path-relay-v0": ToolProgram(BFS, BUGGY_BFS),  # each turn's grid, read as plan-path's
        "sokoban-v0": ToolProgram(
            SOKOBAN_BFS,
            MappingProxyType(
                {
                    "pushes": SOKOBAN_BFS.replace(_PUSH_CHECK, ""),
                    "updown": SOKOBAN_BFS.replace(*_UP_DOWN_SWAPPED),
                    "onebox": SOKOBAN_BFS.replace("if boxes <= goals:", "if boxes & goals:"),
                }
            ),
        ),
        "sudoku-v0": ToolProgram(
            SUDOKU_BACKTRACK,
            MappingProxyType(
                {
                    "nocolumn": SUDOKU_BACKTRACK.replace(" grid[spot][col],", ""),
                    "zero": SUDOKU_BACKTRACK.replace('f"({row + 1},{col + 1},', 'f"({row},{col},'),
                    "digits": SUDOKU_BACKTRACK.replace("range(1, size + 1)", "range(1, size)"),
                }
            ),
        ),
    }
)
"""Env id -> its `ToolProgram`."""
PROGRAM_ENVS = tuple(PROGRAMS)
"""The environments these programs solve."""


def as_tool_call(program: str) -> str:
    """The tool agent's completion that runs `program`: one fenced python block."""
    return f"```python\n{program}```"
