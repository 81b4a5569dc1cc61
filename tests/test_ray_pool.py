"""`RayEnvPool` on a local CPU-only Ray cluster (marked `ray`: `.ci/run` installs Ray and runs them)."""

import os
import signal

import pytest

ray = pytest.importorskip("ray")

import pettingllms  # noqa: E402
from pettingllms.backends.base import SamplingConfig, ScriptedPolicy  # noqa: E402
from pettingllms.pools.env_pool import PoolError  # noqa: E402
from pettingllms.pools.ray_env_pool import RayEnvPool  # noqa: E402
from pettingllms.rollout.engine import RolloutEngine  # noqa: E402

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def pool():
    with RayEnvPool(workers=2) as started:
        yield started
    assert not ray.is_initialized()  # it started the local cluster, so it shut it down


def _jobs(count):
    jobs = []
    for seed in range(count):
        env = pettingllms.make("plan-path-v0")
        env.reset(seed=seed)
        jobs.append((env, env.unwrapped.solution("tool") if seed % 2 else "<answer>U U</answer>"))
    return jobs


def _in_process(jobs):
    out = []
    for env, action in jobs:
        copy = env.clone()
        copy.step(action)
        out.append(copy)
    return out


def test_results_match_in_process_steps(pool):
    jobs = _jobs(6)
    stepped = pool.step_all(jobs)
    expected = _in_process(jobs)
    assert [e.rewards for e in stepped] == [e.rewards for e in expected]
    assert [e.unwrapped.proposal.actions for e in stepped] == [e.unwrapped.proposal.actions for e in expected]


def test_a_killed_actor_is_replaced_and_its_job_rerun(pool):
    victim = pool.pids()[0]
    os.kill(victim, signal.SIGKILL)  # exactly this pool's actor
    jobs = _jobs(4)
    stepped = pool.step_all(jobs)
    assert [e.rewards for e in stepped] == [e.rewards for e in _in_process(jobs)]
    assert pool.restarts >= 1 and pool.retried_jobs >= 1
    assert victim not in pool.pids()


def test_the_rollout_engine_gives_the_same_rollout_on_ray(pool):
    def collect(env_pool):
        def respond(prompt, rng):
            return "<answer>" + " ".join(rng.choice(list("UDLR"), size=int(rng.integers(1, 5)))) + "</answer>"

        engine = RolloutEngine(
            lambda: pettingllms.make("plan-path-v0"),
            {"p": ScriptedPolicy(respond, seed=3)},
            {"tool": "p", "plan": "p"},
            {"p": SamplingConfig()},
            num_generations=3,
            pool=env_pool,
        )
        return [(s.group_id, s.completion, s.reward, s.committed) for s in engine.collect(range(3)).samples]

    assert collect(pool) == collect(None)


def test_a_closed_pool_refuses_work():
    existing = ray.is_initialized()
    extra = RayEnvPool(workers=1)
    extra.close()
    with pytest.raises(PoolError, match="closed"):
        extra.step_all(_jobs(1))
    assert ray.is_initialized() == existing  # it shut down only a cluster it started itself


def test_jobs_no_worker_can_run_end_the_step_with_a_reason_instead_of_a_hang(pool):
    """Workers the cluster cannot place (here: asking for 1,000 CPUs; after a lost node: the CPUs that left) leave
    the jobs waiting: after `job_timeout` seconds the step raises `WorkersLostError` (a `NodeLostError`, which the
    trainer recovers from), not a wait without end."""
    from pettingllms.pools.ray_cluster import NodeLostError
    from pettingllms.pools.ray_env_pool import WorkersLostError

    stranded = RayEnvPool(workers=1, num_cpus=1000, job_timeout=2)
    try:
        with pytest.raises(WorkersLostError, match="1 env job\\(s\\) waited 2 s with none finished") as lost:
            stranded.step_all(_jobs(1))
        assert isinstance(lost.value, NodeLostError) and isinstance(lost.value, PoolError)
    finally:
        stranded.close()


def test_trainer_config_selects_the_ray_pool(tmp_path):
    from pettingllms.trainers.at_grpo import make_pool
    from pettingllms.trainers.settings.arguments import parse

    args = parse(["--output_dir", str(tmp_path), "--distributed", "ray", "--env_workers", "1"])
    made = make_pool(args)
    try:
        assert isinstance(made, RayEnvPool) and made.size == 1
    finally:
        made.close()
