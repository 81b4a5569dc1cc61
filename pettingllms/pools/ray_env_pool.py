"""`RayEnvPool`: the env pool with Ray actors as workers, for more than one machine (`pip install '.[ray]'`).

Same contract as `pettingllms.pools.env_pool.EnvPool`: `step_all([(env, action), ...])` returns stepped copies in job
order, the same envs as in-process; a free actor takes the next job; an actor that dies is replaced and its job
re-run from the same pickled state (after `max_attempts` a job raises `PoolError`); `restarts` and `retried_jobs`
count what happened. A failed batch never mixes into the next: each step is its own Ray call whose result comes
back through its own object ref, so a reply can only reach the job that asked for it (steps of a failed batch
still queued on an actor are dropped when they finish).

Cluster: with `address` (e.g. "auto" or "ray://head:10001") it joins an existing cluster; otherwise it starts a
local one, unless Ray is already initialised in this process, which it then uses. `close()` kills only the actors
this pool created, and shuts Ray down only if this pool started it: it never touches processes it did not start.
"""

from __future__ import annotations

import pickle
from collections import deque
from collections.abc import Sequence
from typing import Any

from pettingllms.pools.env_pool import PoolError
from pettingllms.pools.ray_cluster import NodeLostError, connect, import_ray

DEFAULT_WORKERS = 2
"""The trainer's Ray env workers when `env_workers` is 0 (`ray_env_workers`)."""
WORKER_CPUS = 1.0
"""The CPUs each env actor reserves (outside the policies' placement groups)."""


class WorkersLostError(NodeLostError, PoolError):
    """Env jobs that no env actor ran for `job_timeout` seconds: the actors died and their replacements found no
    free CPU (a node lost)."""


def ray_env_workers(env_workers: int) -> int:
    """How many Ray env actors a trainer with `env_workers` starts (0: `DEFAULT_WORKERS`)."""
    return env_workers or DEFAULT_WORKERS


class _EnvWorker:
    """The Ray actor: steps pickled (env, action) jobs."""

    def step(self, payload: bytes) -> bytes:
        env, action = pickle.loads(payload)
        env.step(action)
        return pickle.dumps(env, protocol=pickle.HIGHEST_PROTOCOL)

    def pid(self) -> int:
        import os

        return os.getpid()


class RayEnvPool:
    """Env steps on Ray actors (see the module docstring).

    Args:
        workers: number of actors (each reserves `num_cpus` CPUs).
        address: a cluster to join; None starts a local cluster (or uses the one already initialised).
        num_cpus: CPUs each actor reserves.
        max_attempts: attempts per job before `PoolError`.
        job_timeout: seconds a step may wait with no job finishing before `WorkersLostError` (env jobs take
            seconds; a replacement actor that the cluster cannot place would wait forever).
    """

    def __init__(
        self,
        workers: int = DEFAULT_WORKERS,
        *,
        address: str | None = None,
        num_cpus: float = WORKER_CPUS,
        max_attempts: int = 3,
        job_timeout: float = 300.0,
    ):
        if workers < 1 or max_attempts < 1:
            raise ValueError(f"workers={workers} and max_attempts={max_attempts} must be >= 1")
        ray = import_ray()
        self._started_ray = connect(address)
        self._actor_class = ray.remote(num_cpus=num_cpus, max_restarts=0)(_EnvWorker)
        self.max_attempts, self.job_timeout = max_attempts, job_timeout
        self.restarts = 0
        self.retried_jobs = 0
        self._actors = [self._actor_class.remote() for _ in range(workers)]
        self._closed = False

    @property
    def size(self) -> int:
        return len(self._actors)

    def pids(self) -> list[int]:
        """The actors' process ids."""
        ray = import_ray()
        return ray.get([actor.pid.remote() for actor in self._actors])

    def step_all(self, jobs: Sequence[tuple[Any, str | None]]) -> list[Any]:
        """Step a copy of each env with its action; return the stepped copies in job order."""
        if self._closed:
            raise PoolError("the pool is closed")
        ray = import_ray()
        payloads = [pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL) for job in jobs]
        results: list[Any] = [None] * len(jobs)
        attempts = [0] * len(jobs)
        pending = deque(range(len(jobs)))
        running: dict[Any, tuple[int, int]] = {}  # object ref -> (job, actor slot)
        idle = deque(range(len(self._actors)))
        while pending or running:
            while pending and idle:
                job, slot = pending.popleft(), idle.popleft()
                attempts[job] += 1
                running[self._actors[slot].step.remote(payloads[job])] = (job, slot)
            done, _ = ray.wait(list(running), num_returns=1, timeout=self.job_timeout)
            if not done:
                raise WorkersLostError(
                    f"{len(running)} env job(s) waited {self.job_timeout:g} s with none finished: the env workers "
                    f"died and their replacements found no free CPU (a node lost?); the cluster has "
                    f"{ray.available_resources().get('CPU', 0):g} CPU free"
                )
            for ref in done:
                job, slot = running.pop(ref)
                try:
                    results[job] = pickle.loads(ray.get(ref))
                except ray.exceptions.RayActorError as error:
                    self._actors[slot] = self._actor_class.remote()
                    self.restarts += 1
                    if attempts[job] >= self.max_attempts:
                        raise PoolError(f"job {job} failed in {attempts[job]} attempts: {error}") from error
                    self.retried_jobs += 1
                    pending.appendleft(job)
                except ray.exceptions.RayTaskError as error:
                    raise PoolError(f"job {job} raised in its actor:\n{error}") from error
                idle.append(slot)
        return results

    def close(self) -> None:
        """Kill this pool's actors; shut Ray down if this pool started it (idempotent)."""
        if self._closed:
            return
        self._closed = True
        ray = import_ray()
        for actor in self._actors:
            ray.kill(actor)
        if self._started_ray:
            ray.shutdown()

    def __enter__(self) -> RayEnvPool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
