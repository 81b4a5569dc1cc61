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

## Progress
`env.unwrapped.progress()` (0 to 100): the share of the puzzle's blank cells that hold the solution's digit,
times 100 (100 iff solved; a legal but wrong digit counts nothing).

## Tiers
`pettingllms.make("sudoku-v0", tier=...)` with `easy`, `medium`, `hard` or `expert`: the arguments and measured
figures of each tier are in [docs/tiers.md](../tiers.md) (`pettingllms.envs.tiers`).

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

from typing import Any

from pettingllms.envs.sudoku.puzzle import Sudoku
from pettingllms.envs.tool_plan import ToolPlanEnv


class SudokuEnv(ToolPlanEnv):
    """Sudoku with a tool agent and a plan agent (see the module docstring); the puzzle is `Sudoku`."""

    metadata = {**ToolPlanEnv.metadata, "name": "sudoku-v0"}

    def __init__(self, *, size: int = 4, blanks: int | None = None, **kwargs: Any):
        super().__init__(Sudoku(size, blanks), **kwargs)
