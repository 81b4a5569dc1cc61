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
