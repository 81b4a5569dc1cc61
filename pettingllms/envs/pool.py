"""`EnvPool`: environment steps in parallel across CPU worker processes, robust to workers that die.

`pool.step_all([(env, action), ...])` returns, in the same order, a stepped copy of each env: what
`env.clone(); copy.step(action)` gives in-process. Each job ships the env by pickle to a free worker, which
steps it and ships it back. Free workers take the next job as soon as they finish, so one slow step (a program
that runs to its time limit) holds one worker, not the batch.

Robustness: a worker that dies (killed, out of memory) or exceeds `job_timeout` is killed if needed and replaced,
and its job is re-run from the same pickled state (an env carries its own seeded generator, so the retry is the
same step); after `max_attempts` a job raises `PoolError`. `restarts` and `retried_jobs` count what happened.
Results do not depend on the number of workers: the same jobs give the same envs with 1 or N workers.

Workers are started with the "spawn" method (safe beside torch and threads) and closed by `close()` or at exit.
A sandbox held by an env travels as "the receiving process's default sandbox" (`Sandbox.__reduce__`).
"""

from __future__ import annotations

import atexit
import dataclasses
import multiprocessing
import pickle
import time
import traceback
from collections import deque
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from pettingllms.errors import PettingLLMsError


class PoolError(PettingLLMsError):
    """A job failed in every attempt, or raised inside the worker."""


def _worker_main(connection: Connection) -> None:
    """A worker: receive (job id, pickled (env, action)), step, send (job id, pickled env or error text)."""
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        job_id, payload = message
        try:
            env, action = pickle.loads(payload)
            env.step(action)
            connection.send((job_id, True, pickle.dumps(env, protocol=pickle.HIGHEST_PROTOCOL)))
        except Exception:  # noqa: BLE001 - reported to the parent with its traceback, which raises PoolError
            connection.send((job_id, False, traceback.format_exc()))


@dataclasses.dataclass
class _Worker:
    process: Any
    connection: Connection
    job: int | None = None
    started: float = 0.0


class EnvPool:
    """A pool of `workers` processes that step environments (see the module docstring).

    Args:
        workers: number of worker processes (>= 1).
        job_timeout: seconds one step may take before its worker is replaced and the job retried.
        max_attempts: attempts per job before `PoolError`.
    """

    def __init__(self, workers: int = 2, *, job_timeout: float = 120.0, max_attempts: int = 3):
        if workers < 1 or max_attempts < 1 or job_timeout <= 0:
            raise ValueError(
                f"workers={workers} and max_attempts={max_attempts} must be >= 1, job_timeout={job_timeout} > 0"
            )
        self.job_timeout = job_timeout
        self.max_attempts = max_attempts
        self.restarts = 0
        self.retried_jobs = 0
        self._context = multiprocessing.get_context("spawn")
        self._workers = [self._start() for _ in range(workers)]
        self._closed = False
        atexit.register(self.close)

    @property
    def size(self) -> int:
        return len(self._workers)

    def pids(self) -> list[int]:
        """The worker processes' ids (for monitoring and tests)."""
        return [worker.process.pid for worker in self._workers]

    def step_all(self, jobs: Sequence[tuple[Any, str | None]]) -> list[Any]:
        """Step a copy of each env with its action; return the stepped copies in job order."""
        if self._closed:
            raise PoolError("the pool is closed")
        payloads = [pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL) for job in jobs]
        results: list[Any] = [None] * len(jobs)
        attempts = [0] * len(jobs)
        pending = deque(range(len(jobs)))
        remaining = len(jobs)
        while remaining:
            for index, worker in enumerate(self._workers):
                if worker.job is None and pending:
                    job = pending.popleft()
                    try:
                        worker.connection.send((job, payloads[job]))
                    except (BrokenPipeError, OSError):  # it died while idle: replace it, the job never ran
                        pending.appendleft(job)
                        self._replace(index, pending, attempts)
                        continue
                    attempts[job] += 1
                    worker.job, worker.started = job, time.monotonic()
            busy = [w for w in self._workers if w.job is not None]
            ready = wait([w.connection for w in busy] + [w.process.sentinel for w in busy], timeout=1.0)
            for index, worker in enumerate(self._workers):
                if worker.job is None:
                    continue
                job = worker.job
                if worker.connection in ready:
                    try:
                        job_id, ok, body = worker.connection.recv()
                    except (EOFError, OSError):
                        self._replace(index, pending, attempts)
                        continue
                    worker.job = None
                    if not ok:
                        raise PoolError(f"job {job_id} raised in its worker:\n{body}")
                    results[job_id] = pickle.loads(body)
                    remaining -= 1
                elif worker.process.sentinel in ready or not worker.process.is_alive():
                    self._replace(index, pending, attempts)
                elif time.monotonic() - worker.started > self.job_timeout:
                    worker.process.kill()
                    self._replace(index, pending, attempts)
        return results

    def close(self) -> None:
        """Stop every worker (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for worker in self._workers:
            try:
                worker.connection.send(None)
            except (BrokenPipeError, OSError):
                pass  # already gone
            worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.connection.close()

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # ----------------------------------------------------------------- internals
    def _start(self) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_worker_main, args=(child,), daemon=True)
        process.start()
        child.close()
        return _Worker(process, parent)

    def _replace(self, index: int, pending: deque, attempts: list[int]) -> None:
        """Replace dead or stuck worker `index` and requeue its job (or fail it after `max_attempts`)."""
        worker = self._workers[index]
        job = worker.job
        worker.process.join(timeout=5)
        worker.connection.close()
        self._workers[index] = self._start()
        self.restarts += 1
        if job is None:
            return
        if attempts[job] >= self.max_attempts:
            raise PoolError(
                f"job {job} failed in {attempts[job]} attempts (its worker died or timed out each time)"
            )
        self.retried_jobs += 1
        pending.appendleft(job)
