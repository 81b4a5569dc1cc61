"""Difficulty tiers of the generated environments: named sets of env arguments.

`pettingllms.make(env_id, tier="hard")` builds the env with the tier's arguments; arguments given to `make` override
the tier's. Each tier is a plain mapping of the env's own arguments (see each env's "Arguments" section), so a tier
is nothing `make` could not be given by hand. Measured figures per tier (instances/s, the oracle's solution length)
are in `docs/tiers.md`.

| env | easy | medium | hard | expert |
|---|---|---|---|---|
| sokoban-v0 | 6x6, 1 box | 7x7, 2 boxes | 8x8, 3 boxes | 10x10, 4 boxes |
| sudoku-v0 | 4x4, 6 blanks | 4x4, 10 blanks | 9x9, 45 blanks | 9x9, 55 blanks |
| plan-path-v0 | 5x5, 20% walls | 8x8, 25% walls | 12x12, 30% walls | 20x20, 35% walls |
| math-v0 | difficulty 1 | difficulty 2 | difficulty 3 | difficulty 3, 1 turn |
| code-v0 | generated, difficulty 1 | generated, difficulty 2 | generated, difficulty 3 | generated, difficulty 3, 1 turn |

math-v0's and code-v0's generators have three difficulties: their expert tier is the hard problems with a single
turn to answer (for code-v0: no revision after the tester's cases). code-v0's tiers are its generated problems
(`dataset="generated"`); its other datasets have no tiers.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

TIER_NAMES = ("easy", "medium", "hard", "expert")
"""The tier names, easiest first."""


def _table(*tiers: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """The tiers of one env, one argument mapping per name of `TIER_NAMES` (in that order), read-only."""
    return MappingProxyType(
        {name: MappingProxyType(args) for name, args in zip(TIER_NAMES, tiers, strict=True)}
    )


SOKOBAN = _table(
    {"width": 6, "height": 6, "num_boxes": 1, "min_solution_length": 5},
    {"width": 7, "height": 7, "num_boxes": 2, "min_solution_length": 10},
    {"width": 8, "height": 8, "num_boxes": 3, "min_solution_length": 15},
    {"width": 10, "height": 10, "num_boxes": 4, "min_solution_length": 20},
)
SUDOKU = _table(
    {"size": 4, "blanks": 6},
    {"size": 4, "blanks": 10},
    {"size": 9, "blanks": 45},
    {"size": 9, "blanks": 55},
)
PLAN_PATH = _table(
    {"size": 5, "obstacle_density": 0.2},
    {"size": 8, "obstacle_density": 0.25},
    {"size": 12, "obstacle_density": 0.3},
    {"size": 20, "obstacle_density": 0.35},
)
MATH = _table(
    {"difficulty": 1},
    {"difficulty": 2},
    {"difficulty": 3},
    {"difficulty": 3, "max_turns": 1},
)
CODE = _table(
    {"dataset": "generated", "difficulty": 1},
    {"dataset": "generated", "difficulty": 2},
    {"dataset": "generated", "difficulty": 3},
    {"dataset": "generated", "difficulty": 3, "max_turns": 1},
)
