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


def test_list_still_works_once_a_namespaced_env_has_been_made(capsys):
    """Making `textarena/<game>` resolves it without adding it to `registry`; `list` keeps one line for the
    namespace."""
    pytest.importorskip("textarena")
    import pettingllms

    before = set(pettingllms.registry)
    pettingllms.make("textarena/TicTacToe-v0")
    assert set(pettingllms.registry) == before and pettingllms.core.registration.spec("textarena/TicTacToe-v0").id
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "plan-path-v0" in out and "textarena/<game id>" in out
    assert not any(line.startswith("textarena/TicTacToe-v0") for line in out.splitlines())


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


def test_an_env_that_is_not_a_text_env_is_refused_clearly(capsys):
    import pettingllms

    class Board:  # a registered entry point that is a class but not a TextAECEnv
        pass

    pettingllms.register("test-not-text-v0", entry_point=Board)
    try:
        assert main(["play", "test-not-text-v0", "--demo"]) == 2
    finally:
        pettingllms.core.registration._REGISTRY.pop("test-not-text-v0")
    error = capsys.readouterr().err
    assert "test-not-text-v0 cannot be played in the terminal" in error and "playable: " in error


def test_every_registered_env_is_played_by_the_solver(capsys):
    import pettingllms
    from pettingllms.sandbox import bwrap_available

    for env_id in sorted(pettingllms.registry):
        if env_id == "code-v0" and not bwrap_available():
            continue  # the solver's code runs in the sandbox
        assert main(["play", env_id, "--demo", "--seed", "1"]) == 0, env_id
        turns = 10 if env_id == "plan-path-relay-v0" else 1  # the relay: a grid a turn, play's 10 turns
        assert f"Solved in {turns} turn(s)!" in capsys.readouterr().out


def test_a_person_plays_any_agent_beside_the_solver():
    done = run_cli(
        "play", "math-v0", "--as", "tool", "--others", "oracle", "--seed", "3", stdin="hint\nquit\n"
    )
    assert (
        "you play 'tool'" in done.stdout and "reasoner (solver): " in done.stdout and "hint: " in done.stdout
    )
    refused = run_cli("play", "math-v0", "--as", "tool")  # the single workflow has no tool agent
    assert refused.returncode == 2
    assert "--as 'tool': workflow 'single' of math-v0 has agents ['reasoner']" in refused.stderr
    assert "pass --others oracle" in refused.stderr


def test_unknown_env_is_a_clear_error():
    done = run_cli("play", "sokobn-v0")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "pettingllms: error: no environment named 'sokobn-v0'. Did you mean 'sokoban-v0'"
    )


def test_a_trained_team_is_watched_step_by_step_with_every_prompt():
    done = run_cli("play", "plan-path-v0", "--watch", "--policy", "oracle", "--seed", "4")
    assert done.returncode == 0, done.stderr
    assert "you play nobody: the team plays" in done.stdout
    assert "tool (oracle): " in done.stdout and "plan (oracle): " in done.stdout
    assert "# plan-path-v0" in done.stdout  # the prompts are shown
    assert "Solved in 1 turn(s)!" in done.stdout
    paused = run_cli("play", "plan-path-v0", "--watch", "--pause", "--seed", "4", stdin="\nq\n")
    assert paused.stdout.count("(Enter: next step, q: quit)") == 2 and paused.stdout.rstrip().endswith("bye")


@pytest.mark.usefixtures("letters_env")
def test_a_person_plays_beside_a_model_the_policy_spec_names(tiny_model, capsys, monkeypatch):
    from letters import LETTERS_ENV

    monkeypatch.setattr("builtins.input", lambda prompt: "eee")
    assert (
        main(["play", LETTERS_ENV, "--policy", tiny_model, "--max-turns", "1"]) == 1
    )  # letters never succeeds
    out = capsys.readouterr().out
    assert f"tool ({tiny_model}): " in out  # the model answered for the tool agent
    assert "plan: <answer>eee</answer>" in out  # the person played the plan agent
    beside = main(
        ["play", "plan-path-v0", "--policy", "tool=oracle", "--seed", "2"]
    )  # pairs: the others only
    assert beside == 1 and "tool (tool=oracle): " in capsys.readouterr().out  # "eee" is no path
    refused = main(["play", "plan-path-v0", "--policy", "plan=oracle"])  # the person plays plan
    assert refused == 2 and "--policy names agent 'plan'; the agents are ['tool']" in capsys.readouterr().err


def test_a_trained_team_plays_on_the_setting_its_run_trained_on(tmp_path):
    """`play --policy RUN` makes the env with the run's env_kwargs (the default run's 7x7 grids), not the env's."""
    import argparse
    import json

    from pettingllms.cli import _policy_setting

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"env_id": "plan-path-v0", "env_kwargs": {"size": 7}}))
    assert _policy_setting(argparse.Namespace(policy=str(run), env="plan-path-v0")) == {"size": 7}
    assert _policy_setting(argparse.Namespace(policy=f"tool={run}", env="plan-path-v0")) == {"size": 7}
    assert _policy_setting(argparse.Namespace(policy="oracle", env="plan-path-v0")) == {}
    assert _policy_setting(argparse.Namespace(policy=None, env="plan-path-v0")) == {}
