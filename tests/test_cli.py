import subprocess
import sys

import pytest

from pettingllms.cli import main


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pettingllms.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_list_shows_every_env_with_its_agents(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for env_id in ("sokoban-v0", "sudoku-v0", "plan-path-v0"):
        assert env_id in out
    assert "mas: tool, plan; single: plan" in out


@pytest.mark.parametrize("env_id", ["sokoban-v0", "sudoku-v0", "plan-path-v0"])
def test_demo_solves_the_puzzle(env_id):
    done = run_cli("play", env_id, "--demo", "--seed", "4")
    assert done.returncode == 0, done.stderr
    assert "Solved in 1 turn(s)!" in done.stdout


def test_a_person_plays_with_hints_and_is_told_when_solved():
    # the human asks for a hint, then types it without the answer tags
    from pettingllms import make

    env = make("plan-path-v0", workflow="single")
    env.reset(seed=2)
    moves = " ".join(env.unwrapped.solution_actions())
    done = run_cli("play", "plan-path-v0", "--seed", "2", stdin=f"hint\n{moves}\n")
    assert done.returncode == 0, done.stderr
    assert f"hint: <answer>{moves}</answer>" in done.stdout
    assert "Solved in 1 turn(s)!" in done.stdout


def test_bad_answers_are_explained_and_end_of_input_quits():
    done = run_cli("play", "sokoban-v0", "--seed", "1", stdin="jump\n")
    assert "unknown move 'jump'" in done.stdout
    assert done.stdout.rstrip().endswith("bye")


@pytest.mark.parametrize("env_id", ["code-v0", "math-v0"])
def test_envs_without_a_plan_agent_are_refused_clearly(env_id, capsys):
    assert main(["play", env_id, "--demo"]) == 2
    error = capsys.readouterr().err
    assert f"{env_id} cannot be played in the terminal" in error
    assert "playable: plan-path-v0, sokoban-v0, sudoku-v0" in error


def test_every_registered_env_is_played_or_refused(capsys):
    import pettingllms
    from pettingllms.envs.tool_plan import ToolPlanEnv

    for env_id in sorted(pettingllms.registry):
        puzzle = isinstance(pettingllms.make(env_id).unwrapped, ToolPlanEnv)
        assert main(["play", env_id, "--demo", "--seed", "1"]) == (0 if puzzle else 2), env_id
        out, err = capsys.readouterr()
        assert ("Solved in 1 turn(s)!" in out) if puzzle else ("cannot be played in the terminal" in err)


def test_unknown_env_is_a_clear_error():
    done = run_cli("play", "sokobn-v0")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "pettingllms: error: no environment named 'sokobn-v0'. Did you mean 'sokoban-v0'"
    )
