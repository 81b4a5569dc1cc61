"""PettingZoo's parallel API: `aec_to_parallel` refuses (an agent of a turn sees the earlier agents' answers, so
the agents of a turn do not act at once); `turn_based_aec_to_parallel` is the conversion to use, and it passes
PettingZoo's parallel battery."""

import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test
from pettingzoo.utils.conversions import aec_to_parallel, turn_based_aec_to_parallel

import pettingllms

ENVS = ["sokoban-v0", "sudoku-v0", "plan-path-v0", "math-v0"]


@pytest.mark.parametrize("env_id", ENVS)
def test_the_simultaneous_conversion_is_refused(env_id):
    if env_id == "math-v0":
        pytest.importorskip("math_verify")
    with pytest.raises(AssertionError, match="not generally safe"):
        aec_to_parallel(pettingllms.make(env_id))
    assert pettingllms.make(env_id).unwrapped.metadata["is_parallelizable"] is False


@pytest.mark.usefixtures("quiet_pettingzoo_advice")
@pytest.mark.parametrize("env_id", ENVS)
def test_the_turn_based_conversion_passes_pettingzoos_parallel_battery(env_id):
    if env_id == "math-v0":
        pytest.importorskip("math_verify")
    parallel_api_test(turn_based_aec_to_parallel(pettingllms.make(env_id)), num_cycles=30)
    parallel_seed_test(lambda: turn_based_aec_to_parallel(pettingllms.make(env_id)))


@pytest.mark.parametrize("env_id", ["sokoban-v0", "sudoku-v0", "plan-path-v0"])
def test_max_cycles_is_max_turns_and_pettingzoos_cycle_count_holds_for_the_aec_env(env_id):
    """PettingZoo's `max_cycles_test` counts, in the AEC env, max_cycles actions plus the final None step per
    agent; its parallel half needs one parallel step per cycle, which the turn-based conversion (one agent per
    step) cannot give, so only this half applies (README: "Use with other frameworks")."""
    from collections import Counter

    env = pettingllms.make(env_id, max_cycles=4)
    assert env.unwrapped.max_turns == 4
    env.reset(seed=0)
    counts = Counter()
    for agent in env.agent_iter():
        counts[agent] += 1
        _, _, termination, truncation, _ = env.last()
        env.step(None if termination or truncation else env.action_space(agent).sample())
    assert set(counts.values()) == {4 + 1} and set(counts) == set(env.possible_agents)
    parallel = turn_based_aec_to_parallel(pettingllms.make(env_id, max_cycles=4))
    parallel.reset(seed=0)
    steps = 0
    while parallel.agents:
        parallel.step({agent: parallel.action_space(agent).sample() for agent in parallel.agents})
        steps += 1
    assert steps == 4 * len(parallel.possible_agents)  # one agent per parallel step
