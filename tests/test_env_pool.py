"""`EnvPool`: parallel env steps that survive killed workers and do not change any result."""

import os
import signal
import time

import pytest

import pettingllms
from pettingllms.backends.base import SamplingConfig, ScriptedPolicy
from pettingllms.core.env import StepOutcome, TextAECEnv
from pettingllms.pools.env_pool import EnvPool, PoolError
from pettingllms.rollout.engine import RolloutEngine


class SlowEnv(TextAECEnv):
    """Sleeps `delay` seconds per step (a slow program); rewards the length of the answer."""

    metadata = {"name": "slow", "render_modes": ["ansi"], "is_parallelizable": False}
    WORKFLOWS = {"mas": ("a",), "single": ("a",)}
    DEFAULT_MAX_TURNS = 1

    def __init__(self, delay=0.3, **kwargs):
        super().__init__(**kwargs)
        self.delay = delay

    def _reset_task(self, options):
        self.value = int(self.np_random.integers(100))

    def _act(self, agent, action):
        if action == "raise":
            raise RuntimeError("a broken env")
        time.sleep(self.delay)
        self.value += len(action) + int(self.np_random.integers(1000))
        return StepOutcome(reward_local=float(self.value), terminal=True)

    def _observation_text(self, agent):
        return f"value {self.value}"

    def _render_text(self):
        return str(self.value)


def _jobs(count, delay=0.3):
    jobs = []
    for seed in range(count):
        env = SlowEnv(delay=delay)
        env.reset(seed=seed)
        jobs.append((env, "x" * seed))
    return jobs


def _expected(jobs):
    out = []
    for env, action in jobs:
        copy = env.clone()
        copy.step(action)
        out.append(copy.value)
    return out


def test_results_match_in_process_steps_in_order():
    jobs = _jobs(6, delay=0.0)
    with EnvPool(workers=2) as pool:
        stepped = pool.step_all(jobs)
    assert [env.value for env in stepped] == _expected(jobs)
    assert all(
        env.value != original.value for env, (original, _) in zip(stepped, jobs)
    )  # originals untouched


def test_a_killed_worker_is_replaced_and_nothing_is_lost():
    jobs = _jobs(8, delay=0.4)
    with EnvPool(workers=2) as pool:
        pool.step_all(_jobs(2, delay=0.0))  # both workers started and idle
        victim = pool.pids()[0]

        def kill_soon():
            time.sleep(0.2)  # both workers are busy with 0.4 s steps by now
            os.kill(victim, signal.SIGKILL)  # exactly one worker of this pool

        import threading

        killer = threading.Thread(target=kill_soon)
        killer.start()
        stepped = pool.step_all(jobs)
        killer.join()
        assert [env.value for env in stepped] == _expected(jobs)
        assert pool.restarts >= 1 and pool.retried_jobs >= 1
        assert victim not in pool.pids()
        assert [env.value for env in pool.step_all(jobs[:2])] == _expected(jobs[:2])  # the new worker works


def test_a_stuck_step_times_out_and_fails_after_its_attempts():
    with EnvPool(workers=1, job_timeout=0.5, max_attempts=2) as pool:
        with pytest.raises(PoolError, match="failed in 2 attempts"):
            pool.step_all(_jobs(1, delay=5.0))
        assert pool.restarts == 2


def test_an_exception_in_a_step_is_reported_with_its_traceback():
    env = SlowEnv(delay=0.0)
    env.reset(seed=0)
    with EnvPool(workers=1) as pool, pytest.raises(PoolError, match="a broken env"):
        pool.step_all([(env, "raise")])


@pytest.mark.parametrize("env_id", ["plan-path-v0", "math-v0"])
def test_rollouts_are_identical_with_no_pool_one_worker_or_two(env_id):
    def respond(prompt, rng):
        if env_id == "math-v0":
            return f"\\boxed{{{int(rng.integers(0, 20))}}}"
        return "<answer>" + " ".join(rng.choice(list("UDLR"), size=int(rng.integers(1, 6)))) + "</answer>"

    def collect(pool):
        env_fn = lambda: pettingllms.make(env_id)  # noqa: E731
        agents = env_fn().possible_agents
        engine = RolloutEngine(
            env_fn,
            {"p": ScriptedPolicy(respond, seed=7)},
            dict.fromkeys(agents, "p"),
            {"p": SamplingConfig()},
            num_generations=4,
            seed=1,
            pool=pool,
        )
        rollout = engine.collect(range(5))
        return [(s.group_id, s.completion, s.reward, s.committed) for s in rollout.samples], [
            e.success for e in rollout.episodes
        ]

    reference = collect(None)
    with EnvPool(workers=1) as one:
        assert collect(one) == reference
    with EnvPool(workers=2) as two:
        assert collect(two) == reference


def _mixed_jobs(delays):
    """One job per delay (seed = position): `delays[i]` seconds for job i."""
    jobs = []
    for seed, delay in enumerate(delays):
        env = SlowEnv(delay=delay)
        env.reset(seed=seed)
        jobs.append((env, "x" * seed))
    return jobs


def test_a_failed_batch_never_mixes_into_the_next():
    """A batch fails while the other worker is still busy with it: the next batch gets exactly its own envs."""
    with EnvPool(workers=2) as pool:
        broken = SlowEnv(delay=0.0)
        broken.reset(seed=0)
        with pytest.raises(PoolError, match="a broken env"):
            pool.step_all([(broken, "raise"), *_mixed_jobs([0.8])])  # job 1 still runs when job 0 fails
        jobs = _mixed_jobs([0.0, 0.0, 0.0, 0.0])
        stepped = pool.step_all(jobs)
        assert [env.value for env in stepped] == _expected(jobs)  # no None, no env of the failed batch
        time.sleep(1.0)  # the failed batch's slow job would have answered by now
        assert [env.value for env in pool.step_all(jobs)] == _expected(jobs)


def test_the_timeout_error_names_the_slow_job_even_after_a_failed_batch():
    # job_timeout leaves the quick jobs 2 s even on a loaded machine (0.6 s flaked under the full suite)
    with EnvPool(workers=2, job_timeout=2.0, max_attempts=1) as pool:
        broken = SlowEnv(delay=0.0)
        broken.reset(seed=0)
        with pytest.raises(PoolError, match="a broken env"):
            pool.step_all([*_mixed_jobs([1.5]), (broken, "raise")])  # job 0 still runs when job 1 fails
        with pytest.raises(PoolError, match=r"^job 2 failed in 1 attempts \(it ran past job_timeout=2.0s"):
            pool.step_all(_mixed_jobs([0.0, 0.0, 5.0, 0.0]))
        jobs = _mixed_jobs([0.0, 0.0, 0.0])
        assert [env.value for env in pool.step_all(jobs)] == _expected(jobs)  # still usable
