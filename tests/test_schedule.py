"""The rollout engine's schedules (`pettingllms.rollout.scheduler`): the same samples whatever order completions
arrive in, whatever the call sizes, with or without an env pool; requests of different policies and episodes in
flight together under "async"; errors raised, not lost. Scripted policies: no model needed."""

import functools
import threading
import time

import numpy as np
import pytest

import pettingllms
from pettingllms.backends import SamplingConfig, ScriptedPolicy
from pettingllms.backends.baselines import RandomPolicy
from pettingllms.core.errors import ConfigError
from pettingllms.pools.env_pool import EnvPool
from pettingllms.rollout.engine import RolloutEngine
from pettingllms.rollout.scheduler import Request, run_episodes, serve_with


def answers(prompt: str, rng: np.random.Generator) -> str:
    """A plan agent's random moves or a tool agent's random program, from `rng` alone."""
    if "python" in prompt.lower() and "```" not in prompt[-10:]:
        return f"```python\nprint({int(rng.integers(9))})\n```"
    return "<answer>" + " ".join(rng.choice(list("UDLR"), size=int(rng.integers(1, 6)))) + "</answer>"


class Jittered(ScriptedPolicy):
    """A scripted policy whose calls take a random time from a generator of their own (seeded `jitter`), so that
    two runs with different `jitter` see completions arrive in different orders; it counts its calls and prompts."""

    def __init__(self, seed: int, jitter: int):
        super().__init__(answers, seed=seed)
        self.delays = np.random.default_rng(jitter)
        self.lock = threading.Lock()
        self.calls = self.prompts = 0

    def generate(self, prompts, n, sampling, seeds=None):
        with self.lock:
            delay = float(self.delays.uniform(0, 0.004))
            self.calls += 1
            self.prompts += len(prompts)
        time.sleep(delay)
        return super().generate(prompts, n, sampling, seeds)


def per_role_engine(jitter: int, *, pool=None, grouping="agent_turn", commit="tool=random", **kwargs):
    env_fn = functools.partial(pettingllms.make, "plan-path-v0", workflow="mas")
    policies = {"tool": Jittered(1, jitter), "plan": Jittered(2, jitter + 1)}
    return RolloutEngine(
        env_fn,
        policies,
        {"tool": "tool", "plan": "plan"},
        dict.fromkeys(policies, SamplingConfig()),
        num_generations=3,
        grouping=grouping,
        commit=commit,
        seed=7,
        pool=pool,
        **kwargs,
    )


def played(rollout):
    return [s.to_row(0) for s in rollout.samples], [
        (e.instance, e.success, e.turns, e.returns) for e in rollout.episodes
    ]


@pytest.mark.parametrize("grouping", ["agent_turn", "trajectory"])
def test_the_samples_do_not_depend_on_the_schedule_the_arrival_order_or_the_call_sizes(grouping):
    reference = per_role_engine(0, grouping=grouping, schedule="lockstep")
    expected = played(reference.collect(range(6)))
    assert len(expected[0]) > 20 and len({row["completion"] for row in expected[0]}) > 5
    for jitter, schedule, limit in [(1, "async", None), (2, "async", 1), (3, "async", 4), (4, "lockstep", 2)]:
        engine = per_role_engine(jitter, grouping=grouping, schedule=schedule, max_items_per_call=limit)
        assert played(engine.collect(range(6))) == expected, (jitter, schedule, limit)
    # a second collect of the same engine draws a new sample seed: new samples, the same again from a fresh engine
    assert played(reference.collect(range(6))) != expected


def test_the_samples_are_the_same_with_an_env_pool_and_random_commits():
    expected = played(per_role_engine(0, schedule="lockstep").collect(range(4)))
    with EnvPool(workers=2) as pool:
        assert played(per_role_engine(5, pool=pool).collect(range(4))) == expected


def test_a_random_baseline_takes_request_seeds_and_an_evaluation_is_fixed_by_its_sample_seed():
    env_fn = functools.partial(pettingllms.make, "plan-path-v0", workflow="mas")
    policies = {"random": RandomPolicy(seed=3)}
    engine = RolloutEngine(
        env_fn, policies, {"tool": "random", "plan": "random"}, {}, num_generations=1, schedule="async"
    )
    first = played(engine.evaluate(range(5), sample_seed=11))
    assert (
        played(engine.evaluate(range(5), sample_seed=11)) == first
    )  # the policy's own generator is not read
    assert played(engine.evaluate(range(5), sample_seed=12)) != first
    # an episode's draws are its own: the first two episodes are the same when played alone
    alone = played(engine.evaluate(range(2), sample_seed=11))
    assert alone[1] == first[1][:2]


class Overlap(ScriptedPolicy):
    """A scripted policy whose calls take 20 ms and record whether a call of `other` ran during them (`met`)."""

    def __init__(self, seed: int):
        super().__init__(answers, seed=seed)
        self.running = self.started = 0
        self.met, self.other = [], None

    def generate(self, prompts, n, sampling, seeds=None):
        self.running += 1
        self.started += 1
        try:
            others_started = self.other.started
            time.sleep(0.02)
            self.met.append(self.other.running > 0 or self.other.started != others_started)
            return super().generate(prompts, n, sampling, seeds)
        finally:
            self.running -= 1


def test_under_async_two_policies_generate_at_the_same_time_and_under_lockstep_one_at_a_time():
    """A per-role team, one episode's request per call: once episode 0 is at the plan agent, the plan's call for
    it runs while the tool's call for episode 1 does (async); lockstep makes one call at a time."""
    for schedule, overlap in [("async", True), ("lockstep", False)]:
        tool, plan = Overlap(1), Overlap(2)
        tool.other, plan.other = plan, tool
        env_fn = functools.partial(pettingllms.make, "plan-path-v0", workflow="mas")
        engine = RolloutEngine(
            env_fn,
            {"tool": tool, "plan": plan},
            {"tool": "tool", "plan": "plan"},
            {"tool": SamplingConfig(), "plan": SamplingConfig()},
            num_generations=2,
            schedule=schedule,
            max_items_per_call=1,
        )
        stats = engine.collect(range(3)).schedule
        assert any(tool.met + plan.met) is overlap
        names = engine.server_names()
        assert sorted(names[key] for key in stats.servers) == ["plan", "tool"]
        assert all(0.0 <= server.idle_share(stats.wall_s) <= 1.0 for server in stats.servers.values())


def test_an_episode_advances_while_another_episodes_request_is_still_in_flight():
    """Under async an episode's next request is made before a slow request of another episode has returned (no
    barrier across episodes); under lockstep it is not."""

    def episode(index, log):
        for step in range(3):
            yield [Request("slow" if index == 0 else "fast", "g", (f"{index}:{step}",))]
            log.append((index, step))
        return index

    def slow(shape, items):
        time.sleep(0.3)
        return list(items)

    for schedule, overtakes in [("async", True), ("lockstep", False)]:
        log = []
        results, stats = run_episodes(
            [episode(0, log), episode(1, log)],
            {
                "slow": serve_with(slow, concurrent=False),
                "fast": serve_with(lambda s, i: list(i), concurrent=False),
            },
            schedule=schedule,
        )
        assert results == [0, 1]
        assert (log[:3] == [(1, 0), (1, 1), (1, 2)]) is overtakes, log
        assert stats.servers["slow"].calls == 3 and stats.servers["fast"].items == 3


def test_batching_servers_merge_waiting_requests_of_one_shape_within_the_item_limit():
    calls = []

    def record(shape, items):
        calls.append((shape, list(items)))
        return [item * 10 for item in items]

    def episode(index):
        (got,) = yield [Request("s", "a" if index % 2 else "b", (index, index))]
        return got

    results, stats = run_episodes(
        [episode(i) for i in range(5)], {"s": serve_with(record, concurrent=False)}, schedule="lockstep"
    )
    assert results == [[i * 10, i * 10] for i in range(5)]
    assert [shape for shape, _ in calls] == ["b", "a"] and stats.servers["s"].items == 10
    calls.clear()
    run_episodes(
        [episode(i) for i in range(5)],
        {"s": serve_with(record, concurrent=False)},
        schedule="lockstep",
        max_items_per_call=3,
    )
    assert [len(items) for _, items in calls] == [2, 2, 2, 2, 2]  # a request of 2 items is never split


def test_a_failing_call_is_raised_and_bad_settings_are_refused():
    def episode():
        yield [Request("s", "g", (1,))]

    def fail(shape, items):
        raise RuntimeError("the server broke")

    for schedule in ("async", "lockstep"):
        with pytest.raises(RuntimeError, match="the server broke"):
            run_episodes([episode()], {"s": serve_with(fail, concurrent=False)}, schedule=schedule)
    with pytest.raises(RuntimeError, match="1 items"):
        run_episodes([episode()], {"s": serve_with(lambda s, i: [], concurrent=True)})
    with pytest.raises(ConfigError, match="allowed values"):
        run_episodes([], {}, schedule="eager")
    with pytest.raises(ConfigError, match="rollout_schedule='eager'"):
        per_role_engine(0, schedule="eager")


def test_batching_servers_of_one_lane_take_turns_and_those_of_different_lanes_overlap():
    def episode(first, second):
        for server in (first, second, first):
            yield [Request(server, "g", (server,))]

    for lane, most in [("cpu", 1), (None, 2)]:
        running, peak, lock = [0], [0], threading.Lock()

        def slow(shape, items, running=running, peak=peak, lock=lock):
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.02)
            with lock:
                running[0] -= 1
            return list(items)

        servers = {key: serve_with(slow, concurrent=False, lane=lane) for key in ("a", "b")}
        run_episodes([episode("a", "b"), episode("b", "a")], servers)
        assert peak[0] == most, lane
