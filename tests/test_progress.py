"""The progression score (`env.unwrapped.progress()`, 0 to 100): hand-worked episodes, the oracle, doing nothing."""

from __future__ import annotations

import pytest
from markers import needs_bwrap

import pettingllms

NOTHING = "<answer></answer>"


def play(env_id: str, option: str, text: str, answers: list[str]) -> list[float]:
    """The score after reset and after each answer of the "single" workflow's agent on the instance `text`."""
    env = pettingllms.make(env_id, workflow="single", max_turns=len(answers) + 1)
    env.reset(seed=0, options={option: text})
    scores = [env.unwrapped.progress()]
    for answer in answers:
        env.step(answer)
        scores.append(env.unwrapped.progress())
    return scores


def test_plan_path_scores_the_share_of_the_start_distance_covered():
    grid = "#####\n#S.G#\n#...#\n#####"  # start distance 2
    answers = [
        "R",
        "L",
        "L U",
        "D R R",
        "U",
    ]  # half way; back; two walls; away (clipped to 0) and round; goal
    scores = play("plan-path-v0", "grid", grid, [f"<answer>{a}</answer>" for a in answers])
    assert scores == [0.0, 50.0, 0.0, 0.0, 50.0, 100.0]


def test_sokoban_scores_the_share_of_boxes_on_goals():
    level = "#######\n#@$ . #\n# $ . #\n#     #\n#######"
    answers = ["R", "R", "L D R"]  # a push short of the goal; onto it; the other box pushed off its row
    scores = play("sokoban-v0", "level", level, [f"<answer>{a}</answer>" for a in answers])
    assert scores == [0.0, 0.0, 50.0, 50.0]


def test_sudoku_scores_the_share_of_blanks_filled_right():
    puzzle = "12..\n34..\n2143\n4321"  # four blanks; solution rows 1234, 3412
    answers = [
        "(1,3,3)",
        "(1,4,1)",
        "(1,4,4)",
        "(2,3,1) (2,4,2)",
    ]  # right; illegal (a repeat); right; the rest
    scores = play("sudoku-v0", "puzzle", puzzle, [f"<answer>{a}</answer>" for a in answers])
    assert scores == [0.0, 25.0, 25.0, 50.0, 100.0]


def oracle_and_idle(env_id: str, **kwargs) -> tuple[float, list[float]]:
    """The score at the end of seed 0's oracle episode, and the scores of a do-nothing episode on it."""
    env = pettingllms.make(env_id, **kwargs)
    env.reset(seed=0)
    while env.agents:
        env.step(
            None if env.terminations[env.agent_selection] else env.unwrapped.solution(env.agent_selection)
        )
    oracle = env.unwrapped.progress()
    env.reset(seed=0)
    idle = [env.unwrapped.progress()]
    while env.agents:
        agent = env.agent_selection
        env.step(None if env.terminations[agent] or env.truncations[agent] else NOTHING)
        idle.append(env.unwrapped.progress())
    return oracle, idle


@pytest.mark.parametrize("env_id", ["sokoban-v0", "sudoku-v0", "plan-path-v0", "math-v0"])
@pytest.mark.parametrize("tier", ["easy", "expert"])
def test_the_oracle_ends_at_100_and_doing_nothing_keeps_the_start_score(env_id, tier):
    oracle, idle = oracle_and_idle(env_id, tier=tier, workflow="single")
    assert oracle == 100.0
    assert set(idle) == {idle[0]}
    assert 0.0 <= idle[0] < 100.0


def test_start_scores_of_seed_0():
    """Generated starts score 0 (Sokoban's reverse search may leave a box on a goal: seed 0's medium tier has
    none)."""
    for env_id in ("sokoban-v0", "sudoku-v0", "plan-path-v0", "math-v0"):
        assert oracle_and_idle(env_id, tier="medium")[1][0] == 0.0


def test_bargain_scores_a_deal_both_gain_from():
    oracle, idle = oracle_and_idle("bargain-v0")
    assert (oracle, set(idle)) == (100.0, {0.0})


@needs_bwrap
def test_code_scores_the_share_of_hidden_tests_passed():
    env = pettingllms.make("code-v0")
    env.reset(seed=3)
    assert env.unwrapped.progress() == 0.0
    env.step("```python\nprint(0)\n```")
    ratio = env.infos["coder"]["hidden_pass_ratio"]
    assert ratio < 1.0 and env.unwrapped.progress() == pytest.approx(100.0 * ratio)
    env.step(NOTHING)
    env.step(env.unwrapped.solution())
    assert env.unwrapped.progress() == 100.0
