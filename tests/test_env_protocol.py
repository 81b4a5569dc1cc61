"""The env protocol of the rollout engine (`pettingllms.core.protocol`): every `TextAECEnv` satisfies it, a plain
PettingZoo env is refused with one error naming what it lacks, and through `AECEnvAdapter` it plays a rollout."""

import string
from collections import Counter, defaultdict

import numpy as np
import pytest
from gymnasium.spaces import Text
from pettingzoo import AECEnv
from pettingzoo.test import api_test

import pettingllms
from pettingllms import AECEnvAdapter, EnvProtocolError
from pettingllms.backends import SamplingConfig, ScriptedPolicy
from pettingllms.core.protocol import RolloutEnv, RolloutEnvState, missing_members
from pettingllms.core.wrappers import wrap
from pettingllms.pools.env_pool import EnvPool
from pettingllms.rollout.engine import RolloutEngine

K = 4


class Text_(str):
    """A `str` that carries the `dtype` PettingZoo's `api_test` compares with a `Text` space's."""

    dtype = np.dtype(str)


class SumTo(AECEnv):
    """A plain PettingZoo env: two agents take turns adding a digit to a total; reaching the target pays both 1.0,
    passing it ends the episode unpaid. An answer without a digit is an invalid move: -0.1, and the same agent
    answers again (as TextArena's games do). Truncated after `max_cycles` rounds of valid moves."""

    metadata = {"name": "sum_to_v0", "render_modes": [], "is_parallelizable": False}

    def __init__(self, max_cycles: int = 3):
        super().__init__()
        self.possible_agents = ["first", "second"]
        self.max_cycles = max_cycles
        self.np_random = np.random.default_rng()
        self.observation_spaces = {
            a: Text(max_length=200, charset=string.printable) for a in self.possible_agents
        }
        self.action_spaces = {a: Text(max_length=8, charset=string.digits) for a in self.possible_agents}

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.target, self.total, self.moves = int(self.np_random.integers(4, 13)), 0, 0
        self.agents = list(self.possible_agents)
        self.agent_selection = self.agents[0]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {agent: {} for agent in self.agents}

    def observe(self, agent):
        return Text_(f"Reach {self.target}: the total is {self.total}. Answer one digit.")

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        digit = next((int(c) for c in action if c in string.digits), None)
        if digit is None:
            self.rewards[agent] = -0.1
        else:
            self.total, self.moves = self.total + digit, self.moves + 1
            if self.total == self.target:
                self.rewards = dict.fromkeys(self.agents, 1.0)
            if self.total >= self.target:
                self.terminations = dict.fromkeys(self.agents, True)
            elif self.moves >= self.max_cycles * len(self.agents):
                self.truncations = dict.fromkeys(self.agents, True)
            self.agent_selection = self.agents[(self.agents.index(agent) + 1) % len(self.agents)]
        self._accumulate_rewards()


def solved(env: SumTo) -> bool:
    return env.total == env.target


def adapted() -> AECEnvAdapter:
    return AECEnvAdapter(SumTo(), success=solved)


def digits(prompt: str, rng: np.random.Generator) -> str:
    """A digit, or now and then an answer without one (an invalid move)."""
    return "no idea" if rng.random() < 0.15 else f"I add {rng.integers(1, 10)}"


def engine(env_fn, respond=digits, **kwargs) -> RolloutEngine:
    policy = {"p": ScriptedPolicy(respond, seed=0)}
    return RolloutEngine(env_fn, policy, {"first": "p", "second": "p"}, {"p": SamplingConfig()}, num_generations=K,
                         seed=0, **kwargs)  # fmt: skip


@pytest.mark.parametrize("env_id", ["plan-path-v0", "sokoban-v0", "sudoku-v0", "bargain-v0"])
@pytest.mark.parametrize("workflow", ["mas", "single"])
def test_text_aec_envs_satisfy_the_protocol_wrapped_and_raw(env_id, workflow):
    env = pettingllms.make(env_id, workflow=workflow)
    env.reset(seed=0)
    for candidate in (env, env.unwrapped):
        assert isinstance(candidate, RolloutEnv) and isinstance(candidate.unwrapped, RolloutEnvState)
        assert missing_members(candidate) == []


@pytest.mark.usefixtures("quiet_pettingzoo_advice")
def test_a_plain_pettingzoo_env_is_refused_before_any_generation_naming_all_it_lacks():
    env = SumTo()
    api_test(env, num_cycles=10)  # a valid PettingZoo env
    env.reset(seed=0)
    assert not isinstance(env, RolloutEnv)
    lacking = [
        "clone()",
        "unwrapped.turn",
        "unwrapped.success",
        "unwrapped.alpha",
        "infos[agent]['reward_team']",
        "infos[agent]['reward_local']",
        "infos[agent]['step_turn']",
    ]
    assert missing_members(env) == lacking

    def never(prompt, rng):
        raise AssertionError("the engine asked for a completion before checking the env")

    for play in (lambda e: e.collect([0]), lambda e: e.evaluate([0])):
        with pytest.raises(EnvProtocolError) as refused:
            play(engine(SumTo, never))
        message = str(refused.value)
        assert all(name in message for name in lacking)
        assert "TextAECEnv" in message and "AECEnvAdapter(env, success=...)" in message


def test_the_check_names_only_what_is_missing():
    class Cloneable(SumTo):
        turn = 0

        def clone(self):
            return self

    env = Cloneable()
    env.reset(seed=0)
    env.infos["second"] = {"reward_team": 0.0, "reward_local": 0.0, "step_turn": 0}
    assert missing_members(env) == [
        "unwrapped.success",
        "unwrapped.alpha",
        "infos[agent]['reward_team']",
        "infos[agent]['reward_local']",
        "infos[agent]['step_turn']",
    ]


@pytest.mark.usefixtures("quiet_pettingzoo_advice")
def test_the_adapted_env_is_still_a_valid_pettingzoo_env_with_the_protocol():
    api_test(adapted(), num_cycles=10)
    env = adapted()
    env.reset(seed=0)
    assert isinstance(env, RolloutEnv) and env.unwrapped is env and missing_members(env) == []
    wrapped = wrap(adapted())  # what `make` gives a registered adapter
    wrapped.reset(seed=0)
    assert missing_members(wrapped) == [] and wrapped.unwrapped.turn == 0


def test_the_adapter_counts_a_turn_as_each_agent_acting_at_most_once():
    env = adapted()
    env.reset(seed=3)
    turns, step_turns = [], []
    for answer in ("1", "no digit", "1", "1"):  # first; second's invalid move; second again; first
        agent = env.agent_selection
        env.step(answer)
        turns.append(env.turn)
        step_turns.append((agent, env.infos[agent]["step_turn"]))
    assert turns == [0, 1, 1, 2]  # second answering twice in a row starts a turn
    assert step_turns == [("first", 0), ("second", 0), ("second", 1), ("first", 1)]
    assert env.infos["first"]["reward_local"] == env.rewards["first"] == 0.0 and not env.success


def test_the_adapter_reports_rewards_as_local_with_payments_to_the_agents_that_did_not_act():
    env = adapted()
    env.reset(seed=0)
    env.env.target = 2
    env.step("1")
    env.step("no digit")
    assert env.infos["second"]["reward_local"] == -0.1 and "reward_paid" not in env.infos["first"]
    env.step("1")  # second reaches the target: both are paid
    assert env.success and env.rewards == {"first": 1.0, "second": 1.0}
    assert env.infos["second"] == {"reward_team": 0.0, "reward_local": 1.0, "step_turn": 1}
    assert env.infos["first"] == {"reward_team": 0.0, "reward_local": 1.0, "step_turn": 1, "reward_paid": 1.0}


def test_an_adapted_clone_is_exact_and_independent():
    env = adapted()
    env.reset(seed=0)
    env.step("3")
    copy = env.clone()
    copy.step("no digit")
    copy.step("2")
    assert (env.turn, env.env.total, env.agent_selection) == (0, 3, "second")
    assert (copy.turn, copy.env.total, copy.agent_selection) == (1, 5, "first")


def test_an_observation_that_is_not_text_is_a_type_error():
    env = adapted()
    env.reset(seed=0)
    env.env.observe = lambda agent: np.zeros(3)
    with pytest.raises(TypeError, match="observations must be str"):
        env.observe("first")


def test_through_the_adapter_a_plain_env_plays_an_at_grpo_rollout():
    rollout = engine(adapted).collect(range(6))
    groups = defaultdict(list)
    for sample in rollout.samples:
        groups[sample.group_id].append(sample)
    assert all(len(group) == K and len({s.prompt for s in group}) == 1 for group in groups.values())
    committed = Counter((s.instance, s.turn, s.agent) for s in rollout.samples if s.committed)
    assert set(committed.values()) == {1}  # each agent commits once per turn
    assert any(s.reward < 0 for s in rollout.samples)  # invalid moves were sampled
    assert [e.success for e in rollout.episodes].count(True) >= 1
    for episode in rollout.episodes:
        steps = [s for s in rollout.samples if s.instance == episode.instance and s.committed]
        assert sum(episode.returns.values()) == pytest.approx(sum(s.step_reward for s in steps))
        assert episode.turns == max(s.turn for s in steps) + 1


def test_an_adapted_env_gives_the_same_rollout_in_an_env_pool():
    here = engine(adapted).collect(range(3))
    with EnvPool(workers=1) as pool:
        there = engine(adapted, pool=pool).collect(range(3))
    assert [(s.group_id, s.completion, s.reward) for s in there.samples] == [
        (s.group_id, s.completion, s.reward) for s in here.samples
    ]
    assert there.episodes == here.episodes


def test_the_engine_plays_the_adapted_env_in_evaluation_and_the_trajectory_baseline():
    evaluated = engine(adapted).evaluate(range(4), sample_seed=0)
    assert len(evaluated.episodes) == 4 and all(s.committed for s in evaluated.samples)
    trajectories = engine(adapted, grouping="trajectory").collect(range(2))
    assert len(trajectories.episodes) == 2 * K
