"""The base env's declared API: the oracle methods every registered env implements, and seeds that are refused."""

import numpy as np
import pytest

import pettingllms
from pettingllms.core.env import TextAECEnv
from pettingllms.core.errors import ConfigError

BUILT_IN = ["sokoban-v0", "sudoku-v0", "plan-path-v0", "code-v0", "math-v0"]


@pytest.mark.parametrize("env_id", BUILT_IN)
def test_every_built_in_env_implements_the_oracle_api(env_id):
    env = pettingllms.make(env_id)
    cls = type(env.unwrapped)
    assert cls.solution is not TextAECEnv.solution and cls.random_answer is not TextAECEnv.random_answer
    env.reset(seed=0)
    agent = env.agent_selection
    assert isinstance(env.unwrapped.solution(agent), str)
    assert isinstance(env.unwrapped.random_answer(agent, np.random.default_rng(0)), str)


def test_an_env_without_the_oracle_api_says_so():
    class Bare(TextAECEnv):
        pass

    with pytest.raises(NotImplementedError, match="Bare declares no solution"):
        Bare.solution(object.__new__(Bare), "plan")
    with pytest.raises(NotImplementedError, match="Bare declares no random_answer"):
        Bare.random_answer(object.__new__(Bare), "plan", np.random.default_rng(0))


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_a_seed_that_is_not_a_non_negative_integer_is_one_clear_error(seed):
    env = pettingllms.make("plan-path-v0")
    with pytest.raises(ConfigError, match=r"a seed is a non-negative integer"):
        env.reset(seed=seed)


def test_numpy_integer_seeds_are_seeds():
    env = pettingllms.make("plan-path-v0")
    env.reset(seed=np.int64(3))
    first = env.observe(env.agent_selection)
    env.reset(seed=3)
    assert env.observe(env.agent_selection) == first
