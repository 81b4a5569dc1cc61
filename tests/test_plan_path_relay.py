"""plan-path-relay-v0: T grids in a row, one per turn; each turn's outcome its own (issue 60's test bed)."""

import pytest

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.core.splits import split_of


def _play(env, answer):
    """Play the episode `env` was reset to with `answer(env, agent, turn)`; each agent's return, and the team
    reward of each step played."""
    returns, team = dict.fromkeys(env.possible_agents, 0.0), []
    for agent in env.agent_iter():
        _, reward, termination, truncation, _ = env.last()
        returns[agent] += reward
        if termination or truncation:
            env.step(None)
            continue
        env.step(answer(env.unwrapped, agent, env.unwrapped.turn))
        team.append(env.infos[agent]["reward_team"])
    return returns, team


def test_the_oracle_solves_every_grid_and_returns_mean_success():
    env = pettingllms.make("plan-path-relay-v0", grids=5, alpha=1.0)
    env.reset(seed=0)
    returns, _ = _play(env, lambda raw, agent, turn: raw.solution(agent))
    assert returns == pytest.approx({"tool": 2.0, "plan": 2.0})  # mean potential 1 + alpha * mean success 1
    assert env.unwrapped.grids_solved == 5 and env.unwrapped.success and env.unwrapped.progress() == 100.0


def test_a_turns_outcome_is_its_own_solving_one_grid_of_four_pays_a_quarter():
    env = pettingllms.make("plan-path-relay-v0", grids=4, workflow="single", alpha=1.0)
    env.reset(seed=3)
    _, team = _play(env, lambda raw, agent, turn: raw.solution(agent) if turn == 2 else "<answer></answer>")
    assert team == [0.0, 0.0, 0.25, 0.0]  # only the third grid was solved, in its own turn
    assert env.unwrapped.grids_solved == 1 and not env.unwrapped.success
    assert env.unwrapped.progress() == pytest.approx(25.0)


def test_every_turn_shows_a_new_grid_and_a_new_grid_pays_nothing_when_it_appears():
    env = pettingllms.make("plan-path-relay-v0", grids=3, workflow="single")
    env.reset(seed=1)
    maps = []
    for agent in env.agent_iter():
        _, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            continue
        maps.append(env.observe(agent).split("## Current state\n")[1].split("\nYou are")[0])
        env.step("no answer")  # a parse error: the penalty only, no move, no potential change
        assert env.rewards[agent] == pytest.approx(-0.1)
    assert len(set(maps)) == 3 and "Grid 3 of 3 was not solved." in env.observe("plan")


def test_the_grids_are_drawn_in_the_split_and_an_episode_is_its_grids():
    env = pettingllms.make("plan-path-relay-v0", grids=4).unwrapped
    keys = {}
    for split in ("train", "eval"):
        for seed in range(20):
            env.reset(seed=seed, options={"split": split})
            assert all(split_of(env.puzzle.key(start)) == split for start, _ in env._relay)
            keys[split, seed] = env.instance_key()
    assert len(set(keys.values())) == 40  # no two episodes alike, and no grid in two splits
    env.reset(seed=7)
    again = pettingllms.make("plan-path-relay-v0", grids=4).unwrapped
    again.reset(seed=7)
    assert again.instance_key() == env.instance_key()  # same seed, same grids


def test_bad_settings_name_the_field():
    with pytest.raises(ConfigError, match=r"grids=0 must be an integer in \[1, 64\]"):
        pettingllms.make("plan-path-relay-v0", grids=0)
    with pytest.raises(ConfigError, match="one turn per grid"):
        pettingllms.make("plan-path-relay-v0", grids=4, max_turns=3)
    assert pettingllms.make("plan-path-relay-v0", max_turns=3).unwrapped.grids == 3
    env = pettingllms.make("plan-path-relay-v0")
    with pytest.warns(UserWarning, match=r"ignores unknown option\(s\) \['grid'\]; understood: \['split'\]"):
        env.reset(seed=0, options={"grid": "S.G"})  # an episode is T generated grids, as every env says so
