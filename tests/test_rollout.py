"""The AT-GRPO rollout engine's invariants (SPEC section 2), with scripted policies: no model needed."""

import functools
from collections import Counter, defaultdict

import numpy as np
import pytest

import pettingllms
from pettingllms.backends import SamplingConfig, ScriptedPolicy
from pettingllms.backends.base import Generation
from pettingllms.rollout.engine import RolloutEngine
from pettingllms.testing import _snapshot
from pettingllms.trainers.advantages import compute_advantages, samples_with_signal

K = 4


def random_moves(prompt: str, rng: np.random.Generator) -> str:
    return "<answer>" + " ".join(rng.choice(list("UDLR"), size=int(rng.integers(1, 7)))) + "</answer>"


def engine(
    grouping="agent_turn",
    commit="greedy",
    seed=0,
    env_id="plan-path-v0",
    workflow="mas",
    env_kwargs=(),
    **kwargs,
):
    env_fn = functools.partial(pettingllms.make, env_id, workflow=workflow, **dict(env_kwargs))
    agents = env_fn().possible_agents
    return RolloutEngine(
        env_fn,
        {"shared": ScriptedPolicy(random_moves, seed=seed)},
        dict.fromkeys(agents, "shared"),
        {"shared": SamplingConfig()},
        num_generations=K,
        grouping=grouping,
        commit=commit,
        seed=seed,
        **kwargs,
    )


class Recorder:
    """An engine observer that keeps every `CommittedStep`, with a copy of the committed state taken as it is
    committed (the engine's own env goes on to later steps)."""

    def __init__(self):
        self.steps = []

    def __call__(self, step):
        self.steps.append((step, step.committed.clone()))


def recorded(instances: int, **kwargs) -> Recorder:
    """A `Recorder` of the engine built from `kwargs` (`_engine_kwargs()` by default) after `instances`."""
    recorder = Recorder()
    RolloutEngine(**{**_engine_kwargs(), **kwargs}, observer=recorder).collect(range(instances))
    return recorder


def recorded_team(commit: str, seed: int, instances: int) -> Recorder:
    """A `Recorder` of the plan-path team (one scripted random policy) after collecting `instances`."""
    return recorded(
        instances,
        policies={"shared": ScriptedPolicy(random_moves, seed=seed)},
        agent_policy={"tool": "shared", "plan": "shared"},
        commit=commit,
        seed=seed,
    )


def test_one_group_per_instance_turn_agent_with_k_identical_prompts():
    rollout = engine().collect(range(6))
    groups = defaultdict(list)
    for sample in rollout.samples:
        groups[sample.group_id].append(sample)
    assert Counter(len(g) for g in groups.values()) == Counter({K: len(groups)})
    triples = set()
    for members in groups.values():
        (triple,) = {(m.instance, m.turn, m.agent) for m in members}  # one (instance, turn, agent) per group
        triples.add(triple)
        assert len({m.prompt for m in members}) == 1
        assert sum(m.committed for m in members) == 1
    keys = [(m.instance, m.turn, m.agent) for m in rollout.samples]
    assert len(set(keys)) == len(
        groups
    )  # no two groups share a key: the reference's merged groups cannot happen


def test_candidates_start_from_the_identical_state_and_the_commit_is_the_chosen_candidates_state():
    recording = recorded(4)
    assert recording.steps
    for step, committed in recording.steps:
        agent, rows, chosen = step.agent, step.candidates, step.chosen
        assert step.prompt == str(step.start.observe(agent))
        replays = []
        for row in rows:
            replay = step.start.clone()
            replay.step(row.generation.text)  # each candidate from the same starting state
            assert replay.infos[agent] == row.info
            # alpha * (the turn's team reward) + its own local reward; the plan agent ends the turn, so its turn's
            # team reward is its own step's
            assert row.reward == replay.unwrapped.alpha * row.reward_team + row.info["reward_local"]
            if agent == "plan":
                assert replay.rewards[agent] == row.reward
            replays.append(replay)
        assert _snapshot(committed) == _snapshot(replays[chosen])
        assert chosen == int(np.argmax([row.reward for row in rows]))  # greedy, first maximum


def test_the_next_agent_acts_on_exactly_the_committed_state():
    # the reference's defect: the plan agent's candidates were scored on copies made before the tool's commit, so
    # scored and stepped envs diverged. Here each plan group starts from the committed tool state.
    committed_tool = {}
    checked = 0
    for step, committed in recorded(4).steps:
        key = (step.instance, step.turn)
        if step.agent == "tool":
            committed_tool[key] = _snapshot(committed)
        elif key in committed_tool:
            assert _snapshot(step.start) == committed_tool[key]
            checked += 1
    assert checked > 0


class ToolCandidates:
    """A tool agent whose K candidates are: a useless answer, the solution, then useless answers again."""

    def generate_from_state(self, envs, agent, n):
        return [
            [
                Generation("<answer>nothing</answer>" if k != 1 else env.unwrapped.solution(agent))
                for k in range(n)
            ]
            for env in envs
        ]


class CopyTheTool:
    """A plan agent that answers exactly the moves the tool agent proposed this turn."""

    def generate_from_state(self, envs, agent, n):
        def answer(env):
            proposal = env.unwrapped.proposal
            moves = " ".join(proposal.actions) if proposal is not None and proposal.actions else "U"
            return Generation(f"<answer>{moves}</answer>")

        return [[answer(env) for _ in range(n)] for env in envs]


def credit_engine(team_credit):
    env_fn = functools.partial(pettingllms.make, "plan-path-v0", reward="outcome", alpha=2.0)
    return RolloutEngine(
        env_fn,
        {"tool": ToolCandidates(), "plan": CopyTheTool()},
        {"tool": "tool", "plan": "plan"},
        {"tool": SamplingConfig(), "plan": SamplingConfig()},
        num_generations=K,
        team_credit=team_credit,
    )


def test_a_tool_candidate_that_leads_to_success_outranks_one_that_does_not():
    turn_credit = credit_engine("turn")
    rollout = turn_credit.collect(range(5))
    assert rollout.probe_completions == 5 * K  # one greedy plan answer per tool candidate
    again = turn_credit.collect(
        range(5, 10)
    )  # each rollout counts its own (nothing accumulates in the engine)
    assert again.probe_completions == 5 * K and again.env_seconds > 0 and again.schedule.wall_s > 0
    compute_advantages(rollout.samples)
    tool = [s for s in rollout.samples if s.agent == "tool"]
    assert len(tool) == 5 * K  # every episode is solved in its first turn
    for instance in range(5):
        group = [s for s in tool if s.instance == instance]
        # with reward="outcome" the tool's own step pays nothing: its credit is the success its proposal leads to
        assert [s.reward_team for s in group] == [0.0, 1.0, 0.0, 0.0]
        assert [s.reward for s in group] == [0.0, 2.0, 0.0, 0.0]  # alpha * team
        assert [s.committed for s in group] == [False, True, False, False]
        assert group[1].advantage > 0 > group[0].advantage
    assert rollout.success_rate == 1.0


def test_step_credit_is_the_ablation_that_leaves_the_tool_without_signal():
    rollout = credit_engine("step").collect(range(5))
    stds = compute_advantages(rollout.samples)
    tool_groups = {s.group_id for s in rollout.samples if s.agent == "tool"}
    assert tool_groups and all(stds[group] == 0.0 for group in tool_groups)
    with pytest.raises(ValueError, match="team_credit"):
        credit_engine("episode")


def _engine_kwargs():
    base = engine()
    return dict(
        env_fn=base.env_fn,
        policies=base.policies,
        agent_policy=base.agent_policy,
        sampling=base.sampling,
        num_generations=K,
        seed=0,
    )


def test_advantages_are_the_hand_computed_group_statistics():
    """Group "a" has rewards 0, 1, 1, 2: mean 1, sample std sqrt(2/3); group "b" is flat (no signal)."""
    from pettingllms.rollout.samples import Sample

    def samples():
        rewards = {"a": [0.0, 1.0, 1.0, 2.0], "b": [0.5] * 4}
        return [
            Sample(group, 0, 0, "plan", "p", "x", "", reward, 0.0, reward, Generation(""))
            for group, values in rewards.items()
            for reward in values
        ]

    scaled = samples()
    stds = compute_advantages(scaled, scale_rewards="group")
    spread = np.sqrt(2 / 3)
    assert stds == pytest.approx({"a": spread, "b": 0.0})
    unit = 1 / (spread + 1e-4)  # TRL's epsilon
    assert [s.advantage for s in scaled] == pytest.approx([-unit, 0.0, 0.0, unit, 0.0, 0.0, 0.0, 0.0])
    centred = samples()
    compute_advantages(centred, scale_rewards="none")
    assert [s.advantage for s in centred] == pytest.approx([-1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    assert [s.group_id for s in samples_with_signal(scaled, stds)] == ["a"] * 4


def test_rewards_are_the_envs_alpha_composition():
    env_fn = functools.partial(pettingllms.make, "plan-path-v0", alpha=0.5)
    rollout = RolloutEngine(
        env_fn,
        {"p": ScriptedPolicy(random_moves)},
        {"tool": "p", "plan": "p"},
        {"p": SamplingConfig()},
        num_generations=K,
    ).collect(range(3))
    for sample in rollout.samples:
        assert sample.reward == pytest.approx(0.5 * sample.reward_team + sample.reward_local)


def test_same_seed_same_rollout():
    first, second = engine(seed=3).collect(range(5)), engine(seed=3).collect(range(5))
    assert [(s.group_id, s.completion, s.reward) for s in first.samples] == [
        (s.group_id, s.completion, s.reward) for s in second.samples
    ]
    other = engine(seed=4).collect(range(5))
    assert [s.completion for s in other.samples] != [s.completion for s in first.samples]


def test_trajectory_grouping_has_k_episodes_per_instance_and_the_return_on_every_step():
    rollout = engine(grouping="trajectory").collect(range(4))
    assert {s.group_id for s in rollout.samples} == {"0", "1", "2", "3"}
    assert Counter(e.instance for e in rollout.episodes) == Counter({i: K for i in range(4)})
    compute_advantages(rollout.samples, scale_rewards="none")
    # all samples of one episode share one reward (its return), so their advantages are equal
    by_episode = defaultdict(list)
    for sample in rollout.samples:
        by_episode[sample.episode].append(sample)
    assert len(by_episode) == 4 * K
    for members in by_episode.values():
        assert len({m.reward for m in members}) == 1 and len({m.advantage for m in members}) == 1
    # each instance's K episode advantages are centred: the baseline is the mean of the K returns
    for instance in range(4):
        episodes = [m[0] for m in by_episode.values() if m[0].instance == instance]
        assert len(episodes) == K
        assert sum(e.advantage for e in episodes) == pytest.approx(0.0, abs=1e-9)
        assert [e.advantage for e in episodes] == pytest.approx(
            [e.reward - np.mean([o.reward for o in episodes]) for e in episodes]
        )


def test_trajectory_advantages_are_computed_over_the_k_episodes_not_their_steps():
    # 2x2 grids: random moves solve some episodes early and fail others after every turn
    rollout = engine(grouping="trajectory", env_kwargs={"size": 2}).collect(range(6))
    compute_advantages(rollout.samples, scale_rewards="group")
    returns = np.array([sum(episode.returns.values()) for episode in rollout.episodes])
    lengths = Counter(sample.episode for sample in rollout.samples)
    assert len(set(lengths.values())) > 1, "the check needs episodes of different lengths"
    for sample in rollout.samples:
        assert rollout.episodes[sample.episode].instance == sample.instance
        peers = returns[[i for i, e in enumerate(rollout.episodes) if e.instance == sample.instance]]
        std = peers.std(ddof=1)
        expected = 0.0 if std == 0 else (returns[sample.episode] - peers.mean()) / (std + 1e-4)
        assert sample.reward == pytest.approx(returns[sample.episode])
        assert sample.advantage == pytest.approx(expected)


def test_batch_scaling_divides_every_group_by_the_std_of_the_whole_batch():
    from pettingllms.rollout.samples import Sample

    rewards = {"a": [0.0, 1.0], "b": [0.0, 10.0], "c": [3.0, 3.0]}
    samples = [
        Sample(group, 0, 0, "plan", "p", "", "", r, 0.0, r, Generation(""))
        for group, values in rewards.items()
        for r in values
    ]
    batch_std = np.std([0.0, 1.0, 0.0, 10.0, 3.0, 3.0], ddof=1)
    stds = compute_advantages(samples, scale_rewards="batch")
    assert [s.advantage for s in samples] == pytest.approx(
        [
            -0.5 / (batch_std + 1e-4),
            0.5 / (batch_std + 1e-4),
            -5 / (batch_std + 1e-4),
            5 / (batch_std + 1e-4),
            0,
            0,
        ]
    )
    assert stds == pytest.approx({"a": np.std([0, 1], ddof=1), "b": np.std([0, 10], ddof=1), "c": 0.0})
    compute_advantages(samples, scale_rewards="group")
    assert samples[0].advantage == pytest.approx(
        samples[2].advantage, abs=1e-3
    )  # per group: both ~ -1/sqrt(2)
    with pytest.raises(ValueError, match="scale_rewards"):
        compute_advantages(samples, scale_rewards="policy")


def test_a_long_failed_episode_does_not_pull_the_baseline_down():
    from pettingllms.rollout.samples import Sample

    # four episodes of one instance: returns 0, 1, 1, 0 over 4, 1, 2 and 3 steps
    samples = [
        Sample("0", 0, turn, "plan", "p", "", "", ret, 0.0, ret, Generation(""), episode=episode)
        for episode, (ret, steps) in enumerate([(0.0, 4), (1.0, 1), (1.0, 2), (0.0, 3)])
        for turn in range(steps)
    ]
    compute_advantages(samples, scale_rewards="none")
    # the baseline is the mean of the four returns, 0.5 (a mean over the ten steps would be 0.3)
    assert [s.advantage for s in samples] == [-0.5] * 4 + [0.5] * 3 + [-0.5] * 3
    samples[0].reward = 1.0
    with pytest.raises(ValueError, match="different rewards"):
        compute_advantages(samples)


def test_random_commit_is_seeded_and_commits_other_than_the_best():
    first = engine(commit="random", seed=1).collect(range(4))
    second = engine(commit="random", seed=1).collect(range(4))
    assert [s.committed for s in first.samples] == [s.committed for s in second.samples]
    recorder = recorded_team(commit="random", seed=1, instances=8)
    contested = [
        (step.candidates, step.chosen)
        for step, _ in recorder.steps
        if len({candidate.reward for candidate in step.candidates}) > 1
    ]
    assert contested and any(chosen != int(np.argmax([r.reward for r in rows])) for rows, chosen in contested)


def test_a_per_role_commit_draws_the_tool_at_random_and_commits_the_best_plan():
    recorder = recorded_team(commit="tool=random", seed=3, instances=12)
    best = {"tool": 0, "plan": 0}
    other = {"tool": 0, "plan": 0}
    for step, _ in recorder.steps:
        rewards = [candidate.reward for candidate in step.candidates]
        if len(set(rewards)) > 1:
            (best if step.chosen == int(np.argmax(rewards)) else other)[step.agent] += 1
    assert other["plan"] == 0 and best["plan"] > 0
    assert other["tool"] > 0  # some tool commits were not the best candidate


@pytest.mark.parametrize(
    ("spec", "modes"),
    [
        ("greedy", {"*": "greedy"}),
        ("random", {"*": "random"}),
        ("tool=random", {"*": "greedy", "tool": "random"}),
        ("tool=random, plan=greedy", {"*": "greedy", "tool": "random", "plan": "greedy"}),
    ],
)
def test_commit_specs_parse(spec, modes):
    from pettingllms.rollout.engine import parse_commit

    assert parse_commit(spec) == modes


@pytest.mark.parametrize("spec", ["best", "tool=best", "tool", "=random", "tool=random,tool=greedy"])
def test_bad_commit_specs_are_refused_with_the_allowed_forms(spec):
    from pettingllms.core.errors import ConfigError
    from pettingllms.rollout.engine import parse_commit
    from pettingllms.trainers.settings.config import ATGRPOConfig

    with pytest.raises(ValueError, match="role=mode"):
        parse_commit(spec)
    with pytest.raises(ConfigError, match="commit"):
        ATGRPOConfig(output_dir="unused", commit=spec)


def test_single_agent_workflow_trains_the_plan_agent_alone():
    rollout = engine(workflow="single").collect(range(3))
    assert {s.agent for s in rollout.samples} == {"plan"}


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="grouping"):
        engine(grouping="instance")
    with pytest.raises(ValueError, match="commit"):
        engine(commit="best")
    with pytest.raises(ValueError, match="not in policies"):
        RolloutEngine(lambda: None, {}, {"plan": "missing"}, {}, num_generations=2)


def test_outcome_rewards_keep_grouping_and_commit_and_zero_groups_carry_no_signal():
    def respond(prompt, rng):
        return "<answer>" + " ".join(rng.choice(list("UDLR"), size=int(rng.integers(1, 8)))) + "</answer>"

    outcome = RolloutEngine(
        functools.partial(pettingllms.make, "plan-path-v0", reward="outcome"),
        {"p": ScriptedPolicy(respond, seed=2)},
        {"tool": "p", "plan": "p"},
        {"p": SamplingConfig()},
        num_generations=K,
        seed=0,
    )
    rollout = outcome.collect(range(8))
    assert all(s.reward_local == 0.0 for s in rollout.samples)
    assert {s.reward for s in rollout.samples} <= {0.0, 1.0}
    stds = compute_advantages(rollout.samples)
    groups = defaultdict(list)
    for sample in rollout.samples:
        groups[sample.group_id].append(sample)
    for group_id, members in groups.items():
        assert len(members) == K and sum(m.committed for m in members) == 1
        if all(m.reward == 0.0 for m in members):
            assert stds[group_id] == 0.0 and all(m.advantage == 0.0 for m in members)
        else:  # a candidate that solved the grid is committed (greedy) and gets the positive advantage
            best = max(members, key=lambda m: m.reward)
            assert best.committed and best.advantage > 0
    assert any(stds[g] > 0 for g in stds) and any(stds[g] == 0 for g in stds)


@pytest.mark.parametrize(
    "grouping, key", [("agent", lambda s: (s.instance, s.agent)), ("turn", lambda s: (s.instance, s.turn))]
)
def test_grouping_ablations_pool_one_key_over_the_same_samples(grouping, key):
    reference = engine(seed=5).collect(range(4))
    ablation = engine(grouping=grouping, seed=5).collect(range(4))
    assert [(s.completion, s.reward, s.committed) for s in ablation.samples] == [
        (s.completion, s.reward, s.committed) for s in reference.samples
    ]
    groups = defaultdict(set)
    for sample in ablation.samples:
        groups[sample.group_id].add(key(sample))
    assert all(len(keys) == 1 for keys in groups.values())
    assert (
        len(groups) == len({key(s) for s in ablation.samples}) < len({s.group_id for s in reference.samples})
    )
    pooled = [g for g in groups if len({s.prompt for s in ablation.samples if s.group_id == g}) > 1]
    assert pooled  # groups now mix different prompts: what agent-and-turn grouping avoids


def test_trajectory_returns_hold_what_a_tool_agent_is_settled_when_its_team_acts():
    # the tool proposes the solution every turn and the plan agent answers nothing: the tool is paid its
    # simulated progress (+1) at its step and settled back (-1) at the plan's, so the team's return is the
    # plan agent's four parse penalties, not 4 x (+1) for proposals nobody executed
    from pettingllms.backends.baselines import OraclePolicy

    env_fn = functools.partial(pettingllms.make, "plan-path-v0", workflow="mas")
    rollout = RolloutEngine(
        env_fn,
        {"oracle": OraclePolicy(), "silent": ScriptedPolicy(lambda prompt, rng: "", seed=0)},
        {"tool": "oracle", "plan": "silent"},
        {"oracle": SamplingConfig(), "silent": SamplingConfig()},
        num_generations=2,
        grouping="trajectory",
    ).collect(range(2))
    assert all(episode.returns == pytest.approx({"tool": 0.0, "plan": -0.4}) for episode in rollout.episodes)
    assert [sample.reward for sample in rollout.samples] == pytest.approx([-0.4] * len(rollout.samples))


def test_an_episodes_turns_count_the_turns_its_team_acted_and_the_eval_record_keeps_them():
    from pettingllms.backends.baselines import OraclePolicy
    from pettingllms.eval.runner import episode_records
    from pettingllms.eval.suites import build_suite

    def play(policy, max_turns):
        env_fn = functools.partial(pettingllms.make, "plan-path-v0", max_turns=max_turns)
        return RolloutEngine(
            env_fn, {"p": policy}, {"tool": "p", "plan": "p"}, {"p": SamplingConfig()}, num_generations=1
        ).evaluate([0, 1])

    solved = play(OraclePolicy(), 4)  # the oracle team solves in its first turn
    assert [(e.success, e.turns) for e in solved.episodes] == [(True, 1), (True, 1)]
    silent = play(ScriptedPolicy(lambda prompt, rng: "", seed=0), 3)  # never solves: every turn is used
    assert [(e.success, e.turns) for e in silent.episodes] == [(False, 3), (False, 3)]
    suite = build_suite("plan-path-v0", episodes=2)
    assert [r.turns for r in episode_records(suite.episodes, solved)] == [1, 1]  # one meaning, no patching


def test_the_observer_sees_every_committed_step_and_changes_nothing():
    recorder = Recorder()
    watched = RolloutEngine(**_engine_kwargs(), observer=recorder).collect(range(3))
    plain = engine().collect(range(3))
    assert [s.to_row(0) for s in watched.samples] == [s.to_row(0) for s in plain.samples]
    committed = [s for s in watched.samples if s.committed]
    assert len(recorder.steps) == len(committed)
    # each episode's steps come in play order; episodes interleave as their requests return (async schedule)
    observed = sorted((step for step, _ in recorder.steps), key=lambda step: step.instance)
    for step, sample in zip(observed, committed, strict=True):
        chosen = step.candidates[step.chosen]
        assert (step.instance, step.turn, step.agent, step.prompt) == (
            sample.instance,
            sample.turn,
            sample.agent,
            sample.prompt,
        )
        assert (chosen.generation.text, chosen.reward) == (sample.completion, sample.reward)
