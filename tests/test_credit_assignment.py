"""The credit-assignment options beside AT-GRPO's grouping (issue 28), each against a hand-computed example:
per-agent advantage normalization (Dr. MAS), anchor-state grouping (GiGPO) and the turn-indexed baseline that
stays unbiased when the policy decides the episode's length (verl issue 7244)."""

import functools

import pytest

import pettingllms
from pettingllms.backends import SamplingConfig
from pettingllms.backends.base import Generation
from pettingllms.core.errors import ConfigError
from pettingllms.rollout.engine import RolloutEngine
from pettingllms.rollout.samples import Sample
from pettingllms.trainers.advantages import (
    EPSILON,
    compute_advantages,
    samples_with_signal,
    summed_turn_advantages,
)


def sample(group, agent, reward, *, turn=0, episode=None, step_reward=None):
    return Sample(
        group, 0, turn, agent, agent, "p", "", reward, 0.0, reward, Generation(""), episode=episode,
        step_reward=step_reward,
    )  # fmt: skip


# ----------------------------------------------------------------- Dr. MAS
def turn_group():
    """One `turn` group pooling two agents on different scales: tool 0 and 1, plan 10 and 12."""
    return [
        sample("g", "tool", 0.0),
        sample("g", "tool", 1.0),
        sample("g", "plan", 10.0),
        sample("g", "plan", 12.0),
    ]


def test_per_agent_normalization_centres_and_scales_each_agent_by_its_own_members():
    pooled, per_agent = turn_group(), turn_group()
    compute_advantages(pooled, scale_rewards="group")
    stds = compute_advantages(per_agent, scale_rewards="group", per_agent=True)
    # pooled: mean 5.75 and one std for all four, so the tool's two answers look alike (both far below the mean)
    pooled_std = (((0 - 5.75) ** 2 + (1 - 5.75) ** 2 + (10 - 5.75) ** 2 + (12 - 5.75) ** 2) / 3) ** 0.5
    assert [s.advantage for s in pooled] == pytest.approx(
        [(r - 5.75) / (pooled_std + EPSILON) for r in (0, 1, 10, 12)]
    )
    # per agent: tool mean 0.5, std sqrt(0.5); plan mean 11, std sqrt(2): each agent's pair becomes -1 and +1
    tool, plan = 0.5**0.5, 2**0.5
    expected = [-0.5 / (tool + EPSILON), 0.5 / (tool + EPSILON), -1 / (plan + EPSILON), 1 / (plan + EPSILON)]
    assert [s.advantage for s in per_agent] == pytest.approx(expected)
    assert stds == pytest.approx({"g|tool": tool, "g|plan": plan})
    assert len(samples_with_signal(per_agent, stds, per_agent=True)) == 4


def test_per_agent_batch_scaling_uses_each_agents_batch_std():
    samples = [*turn_group(), sample("h", "tool", 3.0), sample("h", "tool", 3.0)]
    compute_advantages(samples, scale_rewards="batch", per_agent=True)
    # the tool's members in the batch: 0, 1, 3, 3 (std sqrt(2.25)); the plan's: 10, 12 (std sqrt(2))
    tool_batch = ((1.75**2 + 0.75**2 + 1.25**2 + 1.25**2) / 3) ** 0.5  # about its mean 1.75
    assert [s.advantage for s in samples[:2]] == pytest.approx(
        [-0.5 / (tool_batch + EPSILON), 0.5 / (tool_batch + EPSILON)]
    )
    assert [s.advantage for s in samples[2:4]] == pytest.approx(
        [-1 / (2**0.5 + EPSILON), 1 / (2**0.5 + EPSILON)]
    )
    assert [s.advantage for s in samples[4:]] == [0.0, 0.0]  # a flat group has no signal


def test_per_agent_normalization_leaves_at_grpo_groups_alone():
    groups = [sample("0/0/tool", "tool", r) for r in (0.0, 1.0, 3.0)]
    again = [sample("0/0/tool", "tool", r) for r in (0.0, 1.0, 3.0)]
    compute_advantages(groups)
    compute_advantages(again, per_agent=True)
    assert [s.advantage for s in groups] == [s.advantage for s in again]


# ----------------------------------------------------------------- CoMLRL's baselines
def test_rloo_and_max_baselines_centre_each_member_as_comlrl_does():
    """Leave-one-out: each member against the mean of the others; max: against the group's best. Unscaled,
    they are CoMLRL 1.4.3's `advantage_mode` rloo and max (its formulas written out); scaled, over the std."""
    rewards = [0.0, 1.0, 3.0, 4.0]
    leave_one_out = [r - (sum(rewards) - r) / 3 for r in rewards]
    assert leave_one_out == pytest.approx([(r * 4 - sum(rewards)) / 3 for r in rewards])  # CoMLRL's rloo
    for baseline, expected in (
        ("rloo", leave_one_out),
        ("max", [r - 4.0 for r in rewards]),  # CoMLRL's max
        ("mean", [r - 2.0 for r in rewards]),
    ):
        group = [sample("g", "tool", r) for r in rewards]
        compute_advantages(group, scale_rewards="none", baseline=baseline)
        assert [s.advantage for s in group] == pytest.approx(expected), baseline
        scaled = [sample("g", "tool", r) for r in rewards]
        std = compute_advantages(scaled, baseline=baseline)["g"]
        assert [s.advantage for s in scaled] == pytest.approx([a / (std + EPSILON) for a in expected])
    flat = [sample("g", "tool", 2.0) for _ in range(3)]
    compute_advantages(flat, baseline="max")
    assert [s.advantage for s in flat] == [0.0, 0.0, 0.0]  # no signal, whatever the baseline
    with pytest.raises(ValueError, match="baseline='median'"):
        compute_advantages(group, baseline="median")


def test_a_group_baseline_is_a_trainer_setting_checked_by_name():
    from pettingllms.trainers.settings.config import ATGRPOConfig

    assert ATGRPOConfig(output_dir="unused", group_baseline="rloo").group_baseline == "rloo"
    with pytest.raises(ConfigError, match="group_baseline='median'"):
        ATGRPOConfig(output_dir="unused", group_baseline="median")
    with pytest.raises(ConfigError, match="not defined for turn_baseline='summed'"):
        summed = {"grouping": "trajectory_turn", "turn_baseline": "summed"}
        ATGRPOConfig(output_dir="unused", group_baseline="max", **summed)


def test_the_trainer_centres_its_groups_on_the_configured_baseline():
    pytest.importorskip("torch")
    from types import SimpleNamespace

    from pettingllms.trainers.at_grpo import ATGRPOTrainer
    from pettingllms.trainers.settings.config import ATGRPOConfig

    group = [sample("0/0/tool", "tool", r) for r in (0.0, 1.0, 3.0)]
    args = ATGRPOConfig(output_dir="unused", group_baseline="max", scale_rewards="none")
    trained, _ = ATGRPOTrainer._advantages(SimpleNamespace(args=args), group)
    assert [s.advantage for s in trained] == [-3.0, -2.0, 0.0]


# ----------------------------------------------------------------- GiGPO anchor states
class Fixed:
    """A plan agent whose K candidates are four fixed answers: two moves that go nowhere useful and two others."""

    def generate_from_state(self, envs, agent, n):
        return [[Generation(f"<answer>{m}</answer>") for m in ("U", "D", "L", "R")[:n]] for _ in envs]


def anchor_engine(grouping):
    env_fn = functools.partial(pettingllms.make, "plan-path-v0", workflow="single", max_turns=1)
    return RolloutEngine(env_fn, {"p": Fixed()}, {"plan": "p"}, {"p": SamplingConfig()}, num_generations=4,
                         grouping=grouping)  # fmt: skip


def test_anchor_state_groups_pool_the_candidates_of_equal_states_across_instances():
    anchored = anchor_engine("anchor_state").collect([5, 5, 6])  # instances 0 and 1 are the same grid
    per_turn = anchor_engine("agent_turn").collect([5, 5, 6])
    keys = [s.group_id for s in anchored.samples]
    assert keys[:8] == [keys[0]] * 8 and keys[8] != keys[0] and len(set(keys[8:])) == 1
    assert len({s.group_id for s in per_turn.samples}) == 3
    compute_advantages(anchored.samples, scale_rewards="none")
    compute_advantages(per_turn.samples, scale_rewards="none")
    # the same four rewards twice: the pooled mean is each instance's own mean, so the advantages agree
    rewards = [s.reward for s in anchored.samples[:4]]
    mean = sum(rewards) / 4
    assert [s.advantage for s in anchored.samples[:8]] == pytest.approx([r - mean for r in rewards] * 2)
    assert [s.advantage for s in anchored.samples] == pytest.approx([s.advantage for s in per_turn.samples])


def test_an_anchor_key_is_the_agent_and_its_prompt():
    from pettingllms.rollout.grouping import group_key

    assert group_key("anchor_state", 0, 0, "plan", "x") == group_key("anchor_state", 7, 3, "plan", "x")
    assert group_key("anchor_state", 0, 0, "plan", "x") != group_key("anchor_state", 0, 0, "tool", "x")
    assert group_key("anchor_state", 0, 0, "plan", "x") != group_key("anchor_state", 0, 0, "plan", "y")


# ----------------------------------------------------------------- verl issue 7244
def stopping_episodes():
    """Two episodes of one instance: episode 0 solves at turn 0 (step reward 1); episode 1 earns an intermediate 0.2
    at turn 0 and solves at turn 1 (1 more). Returns-to-go: episode 0 [1]; episode 1 [1.2, 1]."""
    return [
        sample("0/0/a", "a", 1.0, turn=0, episode=0, step_reward=1.0),
        sample("0/0/a", "a", 1.2, turn=0, episode=1, step_reward=0.2),
        sample("0/1/a", "a", 1.0, turn=1, episode=1, step_reward=1.0),
    ]


def test_the_return_to_go_baseline_credits_the_longer_episode_with_what_it_earned():
    samples = stopping_episodes()
    compute_advantages(samples, scale_rewards="none")
    # turn 0: returns-to-go 1 and 1.2, mean 1.1; turn 1: one episode reached it (no signal)
    assert [s.advantage for s in samples] == pytest.approx([-0.1, 0.1, 0.0])


def test_the_summed_per_turn_estimator_is_biased_against_taking_another_turn():
    samples = stopping_episodes()
    summed_turn_advantages(samples, scale_rewards="none")
    # turn 0's step rewards 1 and 0.2 (mean 0.6) give +0.4 and -0.4; turn 1 has one member (0): episode 1's first
    # step sums -0.4 + 0, so the episode that earned more (1.2 against 1) is pushed down: the hidden
    # -E[intermediate reward] on the decision to go on
    assert [s.advantage for s in samples] == pytest.approx([0.4, -0.4, 0.0])
    with pytest.raises(ValueError, match="trajectory_turn samples"):
        summed_turn_advantages([sample("g", "a", 1.0)])


class Scripted:
    """Turn 0 answers nowhere (a wall or no move), turn 1 walks the solution."""

    def generate_from_state(self, envs, agent, n):
        return [
            [Generation(env.unwrapped.solution() if env.unwrapped.turn else "<answer>x</answer>")] * n
            for env in envs
        ]


def test_trajectory_turn_rollouts_carry_returns_to_go_grouped_by_turn_index():
    env_fn = functools.partial(pettingllms.make, "plan-path-v0", workflow="single", max_turns=3)
    engine = RolloutEngine(env_fn, {"p": Scripted()}, {"plan": "p"}, {"p": SamplingConfig()}, num_generations=2,
                           grouping="trajectory_turn")  # fmt: skip
    rollout = engine.collect([1])
    assert [(s.group_id, s.episode) for s in rollout.samples] == [("0/0/plan", 0), ("0/1/plan", 0), ("0/0/plan", 1),
                                                                  ("0/1/plan", 1)]  # fmt: skip
    for episode, result in enumerate(rollout.episodes):
        steps = [s for s in rollout.samples if s.episode == episode]
        assert steps[0].reward == pytest.approx(
            sum(result.returns.values())
        )  # the first return-to-go is the return
        assert steps[0].reward == pytest.approx(steps[0].step_reward + steps[1].reward)
        assert steps[1].reward == pytest.approx(steps[1].step_reward)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"turn_baseline": "summed"}, "turn_baseline='summed' needs grouping='trajectory_turn'"),
        ({"turn_baseline": "mean"}, "turn_baseline='mean' is not supported"),
        (
            {"grouping": "trajectory_turn", "turn_baseline": "summed", "per_agent_advantages": True},
            "per_agent",
        ),
        ({"grouping": "anchor_state", "num_generations": 1}, "must be >= 2 for grouping='anchor_state'"),
    ],
)
def test_bad_combinations_are_refused_by_name(flags, message, tmp_path):
    from pettingllms.trainers.settings.config import ATGRPOConfig

    with pytest.raises(ConfigError, match=message):
        ATGRPOConfig(output_dir=str(tmp_path), use_cpu=True, **flags)


# ----------------------------------------------------------------- a grouping is one object
def test_each_grouping_says_how_it_samples_what_its_samples_carry_and_what_counts_as_a_member():
    from pettingllms.rollout.grouping import GROUPINGS

    described = {
        name: (g.sampling, g.reward, g.members, g.min_generations, g.turn_baselines) for name, g in GROUPINGS.items()
    }
    tree = ("tree", "candidate", "candidates", 2, ("return_to_go",))
    assert described == {
        "agent_turn": tree,
        "agent": tree,
        "turn": tree,
        "anchor_state": tree,
        "trajectory": ("episodes", "episode_return", "episodes", 1, ("return_to_go",)),
        "trajectory_turn": ("episodes", "return_to_go", "episodes", 1, ("return_to_go", "summed")),
    }
    assert [GROUPINGS[name].group_id(3, 1, "plan", "x") for name in ("agent_turn", "agent", "turn", "trajectory")] == [
        "3/1/plan",
        "3/plan",
        "3/1",
        "3",
    ]


def test_a_grouping_refuses_an_unknown_sampling_by_name():
    from pettingllms.rollout.grouping import Grouping, trajectory_key

    with pytest.raises(ValueError, match="sampling='chains'"):
        Grouping("x", trajectory_key, sampling="chains", reward="candidate", members="candidates")


def test_a_new_grouping_is_one_object_that_the_config_the_engine_and_the_advantages_all_take(monkeypatch, tmp_path):
    """Register one `Grouping` (every candidate of an instance's agent at even or odd turns): the config accepts
    its name and its K rule, the engine keys the tree's samples by it, the advantages count its members."""
    from pettingllms.rollout import grouping as groupings
    from pettingllms.trainers.settings.config import ATGRPOConfig

    def parity_key(instance, turn, agent, prompt):
        return f"{instance}/{agent}/{turn % 2}"

    parity = groupings.Grouping("parity", parity_key, sampling="tree", reward="candidate", members="candidates")
    monkeypatch.setitem(groupings.GROUPINGS, "parity", parity)
    assert ATGRPOConfig(output_dir=str(tmp_path), use_cpu=True, grouping="parity").grouping == "parity"
    with pytest.raises(ConfigError, match="must be >= 2 for grouping='parity'"):
        ATGRPOConfig(output_dir=str(tmp_path), use_cpu=True, grouping="parity", num_generations=1)
    env_fn = functools.partial(pettingllms.make, "plan-path-v0", workflow="single", max_turns=3)
    engine = RolloutEngine(env_fn, {"p": Scripted()}, {"plan": "p"}, {"p": SamplingConfig()}, num_generations=2,
                           grouping="parity")  # fmt: skip
    rollout = engine.collect([1])
    assert [s.group_id for s in rollout.samples] == ["0/plan/0", "0/plan/0", "0/plan/1", "0/plan/1"]
    stds = compute_advantages(rollout.samples, scale_rewards="none", members=parity.members)
    assert set(stds) == {"0/plan/0", "0/plan/1"}


def test_a_grouping_that_counts_episodes_refuses_samples_without_one():
    with pytest.raises(ValueError, match="counts episodes as members"):
        compute_advantages([sample("g", "a", 1.0), sample("g", "a", 0.0)], members="episodes")
    # episode 0's two steps carry its return 1.0, counted once: the mean is (1.0 + 0.5) / 2, not (1 + 1 + 0.5) / 3
    samples = [sample("g", "a", 1.0, episode=0), sample("g", "a", 1.0, episode=0), sample("g", "a", 0.5, episode=1)]
    compute_advantages(samples, scale_rewards="none", members="episodes")
    assert [s.advantage for s in samples] == pytest.approx([0.25, 0.25, -0.25])
    compute_advantages(samples, scale_rewards="none", members="candidates")  # each step a member: mean 2.5 / 3
    assert [s.advantage for s in samples] == pytest.approx([1 / 6, 1 / 6, -1 / 3])
