"""Ensemble workflows (N - 1 proposers and an aggregator) and outcome-only rewards, in every env that has them."""

import functools

import pytest

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.testing import check_env

ENSEMBLE_IDS = ["math-v0", "plan-path-v0", "sokoban-v0", "sudoku-v0"]


pytestmark = pytest.mark.usefixtures("quiet_pettingzoo_advice")


@pytest.mark.parametrize("num_agents", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("env_id", ["math-v0", "plan-path-v0"])
def test_ensembles_pass_every_conformance_check(env_id, num_agents):
    check_env(
        functools.partial(pettingllms.make, env_id, workflow="ensemble", num_agents=num_agents),
        num_cycles=8,
        seeds=(0, 1),
    )


@pytest.mark.parametrize("env_id", ["sokoban-v0", "sudoku-v0"])
def test_other_puzzles_have_ensembles_too(env_id):
    check_env(
        functools.partial(pettingllms.make, env_id, workflow="ensemble", num_agents=4),
        num_cycles=8,
        seeds=(0,),
    )


@pytest.mark.parametrize("env_id", ENSEMBLE_IDS)
def test_agent_names_follow_name_index(env_id):
    env = pettingllms.make(env_id, workflow="ensemble", num_agents=4)
    proposer = "reasoner" if env_id == "math-v0" else "tool"
    assert env.possible_agents == [f"{proposer}_0", f"{proposer}_1", f"{proposer}_2", "aggregator_0"]
    assert pettingllms.make(env_id, workflow="ensemble", num_agents=1).possible_agents == ["aggregator_0"]


def test_bad_ensemble_arguments_name_the_field():
    with pytest.raises(ConfigError, match="num_agents=0 must be an integer in \\[1, 16\\]"):
        pettingllms.make("plan-path-v0", workflow="ensemble", num_agents=0)
    with pytest.raises(ConfigError, match="needs workflow='ensemble'"):
        pettingllms.make("plan-path-v0", num_agents=3)
    with pytest.raises(ConfigError, match="allowed values: \\['mas', 'single'\\]"):
        pettingllms.make("code-v0", workflow="ensemble")
    with pytest.raises(ConfigError, match="reward='dense' is not supported"):
        pettingllms.make("plan-path-v0", reward="dense")


def test_plan_path_proposers_are_simulated_and_the_aggregator_sees_them_all():
    env = pettingllms.make("plan-path-v0", workflow="ensemble", num_agents=3)
    env.reset(seed=4)
    raw = env.unwrapped
    start = raw.state.copy()
    env.step(raw.solution("tool_0"))  # a good proposal
    assert "tool_0" not in env.observe("tool_1")  # proposers do not see each other's proposals
    env.step("<answer>U U U U U U</answer>")
    assert raw.state == start  # proposals only run on copies
    assert env.infos["tool_0"]["reward_local"] == 0.0 and env.rewards["tool_1"] < 0.5  # each its own progress
    assert list(raw.proposals) == ["tool_0", "tool_1"] and raw.proposal is raw.proposals["tool_1"]
    seen = env.observe("aggregator_0")
    assert "### tool_0" in seen and "### tool_1" in seen and "it would solve the puzzle" in seen
    env.step(raw.solution("aggregator_0"))
    assert raw.success and all(env.terminations.values())
    assert env.infos["aggregator_0"]["reward_team"] == 1.0 and env.infos["aggregator_0"]["reward_local"] > 0


def test_math_ensemble_ends_on_consensus_and_pays_the_team_once():
    env = pettingllms.make("math-v0", workflow="ensemble", num_agents=3)
    env.reset(seed=2)
    gold = env.unwrapped.solution()
    env.step(gold)
    env.step("\\boxed{-12345}")
    assert env.infos["reasoner_0"]["reward_local"] == 0.0 and env.rewards["reasoner_1"] == 0.0
    env.step(gold)  # the aggregator is right, but reasoner_1 disagrees: no consensus yet
    assert env.infos["aggregator_0"]["reward_team"] == 1.0 and not any(env.terminations.values())
    env.step(gold)
    env.step(gold)
    env.step(gold)
    assert all(env.terminations.values()) and env.infos["aggregator_0"]["reward_team"] == 0.0  # paid once


@pytest.mark.parametrize("env_id", ["math-v0", "plan-path-v0", "code-v0", "sokoban-v0", "sudoku-v0"])
def test_outcome_rewards_zero_every_local_reward(env_id):
    shaped = pettingllms.make(env_id, alpha=1.0)
    outcome = pettingllms.make(env_id, alpha=1.0, reward="outcome")
    for env in (shaped, outcome):
        env.reset(seed=5, options={"split": "eval"})
    local_seen, team = [], []
    for agent in outcome.agent_iter():
        _, _, termination, truncation, _ = outcome.last()
        if termination or truncation:
            outcome.step(None)
            shaped.step(None)
            continue
        action = outcome.unwrapped.solution(agent) if outcome.unwrapped.turn > 0 else "no answer here"
        outcome.step(action)
        shaped.step(action)
        local_seen.append(shaped.infos[agent]["reward_local"])
        assert outcome.infos[agent]["reward_local"] == 0.0
        assert outcome.rewards[agent] == outcome.infos[agent]["reward_team"]
        assert outcome.infos[agent]["reward_team"] == shaped.infos[agent]["reward_team"]
        team.append(outcome.infos[agent]["reward_team"])
    assert any(value != 0.0 for value in local_seen)  # the shaped twin did pay local rewards
    assert sum(team) == 1.0 and outcome.unwrapped.success  # the final success signal survives
