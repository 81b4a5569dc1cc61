"""The base env's declared API: the oracle methods every registered env implements, and seeds that are refused."""

import numpy as np
import pytest

import pettingllms
from pettingllms.core.env import StepOutcome, TextAECEnv
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


@pytest.mark.parametrize("env_id", sorted(pettingllms.registry))
def test_info_turn_is_the_turn_being_played_from_one_as_the_observation_shows_it(env_id):
    """docs/environments.md: `info["turn"]` is the number the observation's header shows ("turn 1 of 4"), 1 after
    `reset`; `env.unwrapped.turn` counts the turns completed, from 0."""
    import re

    env = pettingllms.make(env_id)
    env.reset(seed=0)
    for turn in (1, 2):
        observation, _, _, _, info = env.last()
        shown = int(re.search(r"turn (\d+) of", observation).group(1))
        assert info["turn"] == shown == turn and env.unwrapped.turn == turn - 1
        for _ in range(len(env.agents)):  # every agent of the turn answers something unusable
            env.step("nonsense")


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


class Levels(TextAECEnv):
    """A proposer and an executor: each answer is a number; the proposer's is its potential until the executor
    answers, whose number becomes everyone's potential (what the team executed); 0.5 to start."""

    metadata = {"name": "levels", "render_modes": ["ansi"], "is_parallelizable": False}
    WORKFLOWS = {"mas": ("proposer", "executor")}

    def _reset_task(self, options):
        pass

    def _initial_potentials(self):
        return dict.fromkeys(self.possible_agents, 0.5)

    def _act(self, agent, action):
        level = float(action)
        if agent == "proposer":
            return StepOutcome(potentials={"proposer": level}, reward_local=-0.25 * (level > 1))
        return StepOutcome(potentials=dict.fromkeys(self.agents, level), reward_team=float(level == 1))

    def _observation_text(self, agent):
        return agent

    def _render_text(self):
        return ""


def test_agents_are_paid_the_change_of_their_potential_and_proposers_settle_on_what_was_executed():
    env = Levels(alpha=2.0, max_turns=3)
    env.reset(seed=0)
    paid = []
    for action in ["0.9", "0.2", "3", "0.7", "1", "1"]:  # proposer, executor, proposer, executor, ...
        env.step(action)
        paid += [env.infos["proposer"]["reward_local"], env.infos["executor"]["reward_local"]]
    # worked by hand: the proposer is paid 0.9 - 0.5, settled 0.2 - 0.9; paid 3 - 0.2 - 0.25 (its penalty),
    # settled 0.7 - 3; paid 1 - 0.7, settled 0; the executor is paid the executed change each turn
    assert paid == pytest.approx([0.4, 0.0, -0.7, -0.3, 2.55, 0.0, -2.3, 0.5, 0.3, 0.0, 0.0, 0.3])
    proposer, executor = sum(paid[0::2]), sum(paid[1::2])
    assert proposer == pytest.approx(1.0 - 0.5 - 0.25) and executor == pytest.approx(1.0 - 0.5)
    assert env.rewards["executor"] == pytest.approx(2.0 * 1.0 + 0.3)  # alpha * team + local
    assert env.unwrapped.potential("proposer") == env.unwrapped.potential("executor") == 1.0
