"""Tool programs for the warm start's demonstrations: a compact BFS the tiny model can learn to write, and
imperfect variants of it.

The tool agent of `plan-path-v0` may answer with a ```python block that the env runs in the sandbox with the
current map on standard input (`pettingllms.envs.tool_plan`). `BFS` is such a program: a breadth-first search
over the map as shown (`@` the agent, `G` the goal, `#` walls), printing a shortest path as space-separated
moves. It is written for the tiny model's tokenizer (`pettingllms.models.tokenizer`): multi-letter names and few
dots and digits, so that it is 79 tokens under the tokenizer of the miniature's team warm start.

`BUGGY_BFS` holds three imperfect variants, each a plausible slip, with the share of 100 training grids (5x5,
density 0.2, seeds 0..99) it still solves, measured when they were written: `"wraps"` forgets that a left or
right step must stay on its row (0.39), `"walls"` forgets the walls (0.29), `"updown"` swaps up and down (0.03).
A warm start that sees them among correct programs and direct answers gives RL something to discover: which
program to write, and that writing one beats guessing.
"""

from __future__ import annotations

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

_ROW_CHECK = """        if step in (-1, 1) and there // width != here // width:
            continue
"""
BUGGY_BFS = MappingProxyType(
    {
        "wraps": BFS.replace(_ROW_CHECK, ""),
        "walls": BFS.replace(' or cells[there] == "#"', ""),
        "updown": BFS.replace('("U", -width), ("D", width)', '("U", width), ("D", -width)'),
    }
)
PROGRAM_ENVS = ("plan-path-v0",)
"""The environments these programs solve."""


def as_tool_call(program: str) -> str:
    """The tool agent's completion that runs `program`: one fenced python block."""
    return f"```python\n{program}```"
