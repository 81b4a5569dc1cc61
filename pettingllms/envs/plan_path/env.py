"""# Plan-Path (`plan-path-v0`)

Walk from the start `S` to the goal `G` of a grid with walls, moving up, down, left or right.

| | |
|---|---|
| agents (workflow "mas") | `tool`, `plan` (in that order each turn) |
| agents (workflow "single") | `plan` |
| action | any text; moves inside `<answer>...</answer>` as up/down/left/right or U/D/L/R, separated by spaces or commas; the `tool` agent may instead give a ```python block that prints the moves (it reads the map, as the observation shows it, on standard input) |
| observation | text: the task, the map (`@` you, `G` goal, `#` wall, `.` free), last turn's result, and for `plan` the tool agent's code, output and proposal |
| instances | seeded generator (`size`, `obstacle_density`); `reset(options={"grid": TEXT})` loads a map (`#` wall, `.` free, `S` start, `G` goal); `options={"split": "eval"}` draws from the evaluation split, disjoint from training |

## Rewards
As `pettingllms.envs.tool_plan` describes, with `potential = 1 - distance / initial_distance`, where distance is
the BFS distance to the goal (so the potential is 1 at the goal, 0 at the start, negative farther away).
A move into a wall or off the grid is an invalid action (penalty 0.05, the agent stays). Team reward 1.0 when
the goal is reached.

A completion cut by its length budget (`Generation.truncated`; `train/truncated/*` and `truncated_rate` count
them) is scored as written, after any thinking block: cut inside a thinking block, before `</answer>` closes, or
inside a ```python block that never closes, it holds no usable action and earns the parse-error penalty (0.1).

## Progress
`env.unwrapped.progress()` (0 to 100): the share of the start's BFS distance to the goal covered,
`100 * (start_distance - distance) / start_distance`, clipped to [0, 100] (100 iff at the goal).

## Tiers
`pettingllms.make("plan-path-v0", tier=...)` with `easy`, `medium`, `hard` or `expert`: the arguments and measured
figures of each tier are in [docs/tiers.md](../tiers.md) (`pettingllms.envs.tiers`).

## Arguments
`size` (default 5: a 5x5 grid), `obstacle_density` (default 0.2), `min_distance` (default: size), plus `alpha`
(default 1.0), `workflow`, `max_turns` (default 4), `render_mode` ("ansi", "human", "rgb_array"), `sandbox`,
`tool_timeout`, `tool_memory_mb`, `max_moves_per_turn` (default: no cap; with a cap shorter than the path, the walk
spans turns: only the first moves of each answer are made).

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

from pettingllms.envs.plan_path.puzzle import PlanPath
from pettingllms.envs.tool_plan import ToolPlanEnv


class PlanPathEnv(ToolPlanEnv):
    """Grid path planning with a tool agent and a plan agent (see the module docstring); the puzzle is
    `PlanPath`."""

    metadata = {**ToolPlanEnv.metadata, "name": "plan-path-v0"}

    def __init__(
        self, *, size: int = 5, obstacle_density: float = 0.2, min_distance: int | None = None, **kwargs: Any
    ):
        super().__init__(PlanPath(size, obstacle_density, min_distance), **kwargs)
