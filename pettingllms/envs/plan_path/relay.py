"""# Plan-Path relay (`plan-path-relay-v0`)

`plan-path-v0` with a fresh grid every turn: an episode is `grids` grids in a row (T, default 8), one per turn, and
`max_turns` is T. Each turn the team walks the turn's grid (the tool agent may compute the walk, the plan agent's
answer is executed), then the next grid replaces it, solved or not. A turn's outcome depends on that turn's
decisions only: the test bed in which grouping the samples by turn and by trajectory must differ if per-turn credit
matters (issue 60), since a trajectory's return is the mean of T independent turns.

| | |
|---|---|
| agents, action, observation | as `plan-path-v0` (workflows "mas", "single" and "ensemble"); the header reads "turn t of T": the turn is also the grid's number, and "Last turn" reports the previous grid's outcome |
| instances | T grids drawn in a row from the reset seed, each from the requested split (`options={"split": ...}`), so train, validation and evaluation grids never meet; an episode's instance is its T grids (`instance_key`) |

## Rewards
As `plan-path-v0`, per grid, scaled to the episode:
- team: `1 / T` on the plan agent's step whose moves reach the turn's goal, else 0: the team's rewards sum to the
  share of grids solved, the episode's success measure (its mean turn success).
- local: potentials as `plan-path-v0`'s (`1 - distance / initial_distance` on the turn's grid) banked at the end
  of each turn: an agent's potential is `(the banked potentials of the finished grids + the current grid's) / T`,
  so its local rewards over the episode sum to the mean of the grids' final potentials; a new grid starts at
  potential 0 and changes nothing when it appears. Penalties as `plan-path-v0` (unscaled).
So every agent's return is at most `1 + alpha` (every grid solved in its turn).

The episode ends after the T-th turn (truncated), or is terminated when the T-th grid is solved and so were all the
others (`success`: every grid solved). `env.unwrapped.progress()` is 100 times the share of grids solved so far
plus the current grid's share of its walk, over T (100 iff every grid is solved); `env.unwrapped.grids_solved` counts
them.

## Arguments
`grids` (T, 1-64, default 8; `max_turns` or `max_cycles` sets it too, and must equal it when both are given),
and `plan-path-v0`'s (`size`,
`obstacle_density`, `min_distance`, `max_moves_per_turn`, `alpha`, `workflow`, `reward`, `sandbox`,
`tool_timeout`, `tool_memory_mb`, `render_mode`). `reset(options={"split": ...})`; no `grid` option (an episode
is T generated grids).

## Version history
- v0: initial release (2026-12), for the pre-registered credit-assignment test of issue 60.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pettingllms.core.env import StepOutcome
from pettingllms.core.errors import ConfigError
from pettingllms.core.splits import check_split, draw_in_split
from pettingllms.core.text import sanitize
from pettingllms.envs.plan_path.env import PlanPathEnv
from pettingllms.envs.tool_plan import SUCCESS_REWARD

MAX_GRIDS = 64
DEFAULT_GRIDS = 8


class PlanPathRelayEnv(PlanPathEnv):
    """T plan-path grids in a row, one per turn (see the module docstring)."""

    metadata = {**PlanPathEnv.metadata, "name": "plan-path-relay-v0"}

    def __init__(
        self,
        *,
        grids: int | None = None,
        max_turns: int | None = None,
        max_cycles: int | None = None,
        **kwargs: Any,
    ):
        turns = max_turns if max_turns is not None else max_cycles
        if grids is not None and turns is not None and turns != grids:
            raise ConfigError(
                f"max_turns={turns!r} and grids={grids!r}: a relay has one turn per grid; give one"
            )
        grids = grids if grids is not None else turns if turns is not None else DEFAULT_GRIDS
        if isinstance(grids, bool) or not isinstance(grids, int) or not 1 <= grids <= MAX_GRIDS:
            raise ConfigError(f"grids={grids!r} must be an integer in [1, {MAX_GRIDS}]")
        super().__init__(max_turns=grids, **kwargs)
        self.grids = grids
        self.RESET_OPTIONS = frozenset({"split"})
        self.grids_solved = 0
        self._relay: list[tuple[Any, list[Any] | None]] = []  # the episode's grids: (start state, solution)
        self._banked = 0.0  # the finished grids' final potentials, summed
        self._current_banked = (
            False  # whether the current grid's outcome is in `_banked` (the last one, ended)
        )

    def instance_key(self) -> str:
        """The episode's T grids (call it after reset): equal for the same grids in the same order."""
        keys = repr(tuple(self.puzzle.key(start) for start, _ in self._relay))
        return hashlib.sha256(keys.encode()).hexdigest()

    def progress(self) -> float:
        current = 0.0 if self._current_banked else self.puzzle.progress(self.state, self.initial_state)
        return 100.0 * (self.grids_solved + current) / self.grids

    # ----------------------------------------------------------------- TextAECEnv / ToolPlanEnv hooks
    def _reset_task(self, options: dict[str, Any]) -> None:
        self.split = check_split(options.get("split", "train"))
        self._relay = [
            draw_in_split(
                self.puzzle.generate,
                lambda instance: self.puzzle.key(instance[0]),
                self.np_random,
                self.split,
            )
            for _ in range(self.grids)
        ]
        self.grids_solved, self._banked, self._current_banked = 0, 0.0, False
        self._start_grid(0)
        self._last_turn_report = None

    def _potential(self, state: Any) -> float:
        return (self._banked + self.puzzle.potential(state, self.initial_state)) / self.grids

    def _act_plan(self, agent: str, action: str) -> StepOutcome:
        outcome = super()._act_plan(agent, action)
        solved = self.puzzle.solved(self.state)
        self._banked += self.puzzle.potential(self.state, self.initial_state)
        self.grids_solved += solved
        last = self.turn == self.grids - 1
        self.success = last and self.grids_solved == self.grids
        self._last_turn_report = sanitize(
            f"{self._last_turn_report} Grid {self.turn + 1} of {self.grids} was "
            + ("solved." if solved else "not solved.")
            + ("" if last else " This turn's grid is a new one.")
        )
        if last:
            self._current_banked = True
        else:
            self._start_grid(self.turn + 1)
        return outcome._replace(
            reward_team=SUCCESS_REWARD / self.grids if solved else 0.0,
            potentials=dict.fromkeys(self.agents, self._banked / self.grids),
            terminal=self.success,
            info={**outcome.info, "grid_solved": solved, "grids_solved": self.grids_solved},
        )

    def _start_grid(self, index: int) -> None:
        """Make grid `index` of the episode the current one (its start state, not yet moved)."""
        self.initial_state, self._start_solution = self._relay[index]
        self.state = self.initial_state.copy()
        self._shown_state = None
        self._proposals = {}
        self._state_potential = self._potential(self.state)
