"""Difficulty tiers: `make(env_id, tier=...)` applies a documented set of arguments (`pettingllms.envs.tiers`)."""

from __future__ import annotations

import pytest

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.envs import tiers

PUZZLE_TIERS = {"sokoban-v0": tiers.SOKOBAN, "sudoku-v0": tiers.SUDOKU, "plan-path-v0": tiers.PLAN_PATH}
SEEDS = range(3)


def _start(env_id: str, tier: str, seed: int) -> str:
    env = pettingllms.make(env_id, tier=tier)
    env.reset(seed=seed)
    return env.unwrapped.puzzle.render_text(env.unwrapped.initial_state)


@pytest.mark.parametrize("env_id", sorted(PUZZLE_TIERS))
@pytest.mark.parametrize("tier", tiers.TIER_NAMES)
def test_each_tier_resets_deterministically_with_its_arguments(env_id, tier):
    env = pettingllms.make(env_id, tier=tier)
    puzzle = env.unwrapped.puzzle
    for name, value in PUZZLE_TIERS[env_id][tier].items():
        assert getattr(puzzle, name) == value
    starts = [_start(env_id, tier, seed) for seed in SEEDS]
    assert starts == [_start(env_id, tier, seed) for seed in SEEDS]
    assert len(set(starts)) > 1


@pytest.mark.parametrize("env_id", sorted(PUZZLE_TIERS))
def test_tiers_grow_in_size_and_solution_length(env_id):
    """Board text and mean oracle solution length both grow strictly from one tier to the next (sudoku's
    solution length is its blank count; a 4x4's board is the same size at easy and medium)."""
    sizes, lengths = [], []
    for tier in tiers.TIER_NAMES:
        env = pettingllms.make(env_id, tier=tier)
        total_chars = total_moves = 0
        for seed in SEEDS:
            env.reset(seed=seed)
            total_chars += len(env.unwrapped.puzzle.render_text(env.unwrapped.state))
            total_moves += len(env.unwrapped.solution_actions())
        sizes.append(total_chars)
        lengths.append(total_moves)
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    assert lengths == sorted(set(lengths)), lengths


def test_math_tiers_set_difficulty():
    for tier, args in tiers.MATH.items():
        env = pettingllms.make("math-v0", tier=tier)
        assert env.unwrapped.difficulty == args["difficulty"]
        env.reset(seed=0)
    assert pettingllms.make("math-v0", tier="expert").unwrapped.max_turns == 1


def test_code_tiers_are_the_generated_problems_by_difficulty():
    seen = {}
    for tier, args in tiers.CODE.items():
        env = pettingllms.make("code-v0", tier=tier)
        assert (env.unwrapped.dataset, env.unwrapped.difficulty) == ("generated", args["difficulty"])
        env.reset(seed=0)
        seen[tier] = env.unwrapped.generated.problem.reference
    assert seen["easy"] != seen["medium"] != seen["hard"] == seen["expert"]  # expert: hard problems, one turn
    assert pettingllms.make("code-v0", tier="expert").unwrapped.max_turns == 1
    assert pettingllms.make("code-v0", tier="hard").unwrapped.max_turns == 3


def test_explicit_arguments_override_the_tier():
    env = pettingllms.make("sokoban-v0", tier="expert", num_boxes=2)
    assert (env.unwrapped.puzzle.width, env.unwrapped.puzzle.num_boxes) == (10, 2)


def test_unknown_tier_names_the_allowed_ones():
    with pytest.raises(
        ConfigError,
        match=r"tier='impossible' is not a tier of sudoku-v0; allowed values: \['easy', 'medium', 'hard', 'expert'\]",
    ):
        pettingllms.make("sudoku-v0", tier="impossible")


def test_env_without_tiers_says_which_have_them():
    with pytest.raises(
        ConfigError, match=r"bargain-v0; it has no tiers; envs with tiers: code-v0, math-v0, plan-path-v0"
    ):
        pettingllms.make("bargain-v0", tier="easy")
