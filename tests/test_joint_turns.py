"""`make(..., turns="joint")`: the agents of a turn act together, each observing the env as the turn began
(`pettingllms.core.wrappers.JointTurns`), checked against the same env played in the AEC order and against the
CoMLRL bridge's own turn mapping."""

import pytest
from pettingzoo.test import api_test

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.core.protocol import RolloutEnv
from pettingllms.integrations.comlrl import MAGRPOBridge

TOOL = "<answer>R R R R</answer>"  # a proposal the plan agent's AEC prompt reports
ANSWERS = [TOOL, "RRDD", "no idea", "DDRR", TOOL, "RDRD"]  # three turns of plan-path: tool, plan, ...


def _pair(env_id="plan-path-v0", seed=3):
    aec, joint = pettingllms.make(env_id), pettingllms.make(env_id, turns="joint")
    aec.reset(seed=seed)
    joint.reset(seed=seed)
    return aec, joint


def test_an_agent_observes_the_turn_as_it_began_never_an_answer_of_its_turn():
    aec, joint = _pair()
    assert aec.possible_agents == ["tool", "plan"]
    start = str(joint.observe("plan"))
    assert start == str(aec.observe("plan"))  # before anyone acts, the two agree
    aec.step(TOOL)
    joint.step(TOOL)
    assert str(joint.observe("plan")) == start  # the tool's answer of this turn is not shown
    assert str(aec.observe("plan")) != start and "proposed R R R R" in str(
        aec.observe("plan")
    )  # in the AEC order it is
    assert joint.last()[0] == joint.observe("plan")  # `last` reads the same observation
    aec.step("RRDD")
    joint.step("RRDD")
    for agent in aec.possible_agents:  # a new turn: both show the env as it stands after the last one
        assert str(joint.observe(agent)) == str(aec.observe(agent))


def test_rewards_infos_and_the_end_are_the_envs_own():
    aec, joint = _pair()
    for answer in ANSWERS:
        if not aec.agents:
            break
        aec.step(answer)
        joint.step(answer)
        assert joint.rewards == aec.rewards and joint.infos == aec.infos
        assert joint.terminations == aec.terminations and joint.truncations == aec.truncations
    assert joint.unwrapped.success == aec.unwrapped.success and joint.agents == aec.agents


def test_a_finished_episode_shows_its_final_observations():
    aec, joint = _pair()
    while aec.agents:
        agent = aec.agent_selection
        action = None if aec.terminations[agent] or aec.truncations[agent] else "no idea"
        aec.step(action)
        joint.step(action)
    for agent in aec.possible_agents:
        assert str(joint.observe(agent)) == str(aec.observe(agent))


def test_a_clone_keeps_the_turns_start_and_is_independent():
    _, joint = _pair()
    start = str(joint.observe("plan"))
    joint.step(TOOL)
    copy = joint.clone()
    assert str(copy.observe("plan")) == start and isinstance(copy, RolloutEnv)
    copy.step("RRDD")
    assert str(copy.observe("plan")) != start and str(joint.observe("plan")) == start


@pytest.mark.parametrize("env_id", ["plan-path-v0", "math-v0"])
def test_the_turns_match_the_comlrl_bridges_mapping(env_id):
    """The bridge's prompts for a branch (the env replayed with the branch's answers) are the joint env's
    observations at each turn's start."""
    bridge = MAGRPOBridge(env_id)
    key = bridge.dataset([5])[0]["prompt"]
    joint = pettingllms.make(env_id, turns="joint")
    joint.reset(seed=5, options={"split": "train"})
    history: list[list[str]] = [[] for _ in bridge.agents]
    for turn in range(2):
        for index, agent in enumerate(bridge.agents):
            answer = f"answer {turn} of {agent}"
            history[index].append(answer)
            joint.step(answer)
        if not joint.agents:
            break
        prompts = bridge.transition(key, [h[-1] for h in history], len(bridge.agents), [], history)
        assert prompts == [str(joint.observe(agent)) for agent in bridge.agents]


@pytest.mark.usefixtures("quiet_pettingzoo_advice")
def test_a_joint_env_is_a_pettingzoo_env():
    api_test(pettingllms.make("plan-path-v0", turns="joint"), num_cycles=10)


def test_an_unknown_turn_structure_is_refused_naming_the_allowed_ones():
    with pytest.raises(ConfigError, match=r"turns='parallel': choose one of \['aec', 'joint'\]"):
        pettingllms.make("plan-path-v0", turns="parallel")


def test_maths_tool_agent_reads_the_reasoners_answer_of_its_turn_only_in_the_aec_order():
    """The tool agent, second in a turn, is shown the reasoner's answer of the same turn in the AEC order; with
    joint turns it is shown the last turn's."""
    aec, joint = _pair("math-v0", seed=0)
    for env in (aec, joint):
        env.step("\\boxed{2520}")  # the reasoner, turn 1
    shown = "## The reasoner's answer\n\\boxed{2520}"
    assert shown in str(aec.observe("tool")) and "The reasoner's answer" not in str(joint.observe("tool"))
    for env in (aec, joint):
        env.step("\\boxed{5040}")  # the tool disagrees: turn 2
        env.step("\\boxed{720}")  # the reasoner's second answer
    assert "\\boxed{720}" in str(aec.observe("tool"))
    assert shown in str(joint.observe("tool")) and "\\boxed{720}" not in str(joint.observe("tool"))
