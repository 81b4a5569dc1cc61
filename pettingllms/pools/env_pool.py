"""`EnvPool`: environment steps in parallel across CPU worker processes, robust to workers that die.

`pool.step_all([(env, action), ...])` returns, in the same order, a stepped copy of each env: what
`env.clone(); copy.step(action)` gives in-process. Each job ships the env by pickle to a free worker, which
steps it and ships it back. Free workers take the next job as soon as they finish, so one slow step (a program
that runs to its time limit) holds one worker, not the batch.

Robustness: a worker that dies (killed, out of memory) or exceeds `job_timeout` is killed if needed and replaced,
and its job is re-run from the same pickled state (an env carries its own seeded generator, so the retry is the
same step); after `max_attempts` a job raises `PoolError`, naming that job and why (died or timed out).
`restarts` and `retried_jobs` count what happened. Results do not depend on the number of workers: the same jobs
give the same envs with 1 or N workers.

A failed batch never mixes into the next: every job is tagged with its batch's id and the worker echoes it; a
reply of another batch (or another job) is dropped. When `step_all` raises (`PoolError`, Ctrl-C, anything), every
worker still busy with that batch is killed and replaced before the exception leaves, so the pool is usable
afterwards and its next batch starts from fresh, idle workers.

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

from pettingllms.core.errors import PettingLLMsError


class PoolError(PettingLLMsError):
    """A job failed in every attempt, or raised inside the worker."""


def _worker_main(connection: Connection) -> None:
    """A worker: receive (tag, pickled (env, action)), step, send (tag, ok, pickled env or error text), where the
    tag is the parent's (batch id, job index), echoed unchanged."""
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        tag, payload = message
        try:
            env, action = pickle.loads(payload)
            env.step(action)
            connection.send((tag, True, pickle.dumps(env, protocol=pickle.HIGHEST_PROTOCOL)))
        except Exception:  # noqa: BLE001 - reported to the parent with its traceback, which raises PoolError
            connection.send((tag, False, traceback.format_exc()))


@dataclasses.dataclass
class _Worker:
    process: Any
    connection: Connection
    job: int | None = None
    """The index (in the current batch) of the job it is running, or None when idle."""
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
        self._batch = 0
        self._closed = False
        atexit.register(self.close)

    @property
    def size(self) -> int:
        return len(self._workers)

    def pids(self) -> list[int]:
        """The worker processes' ids (for monitoring and tests)."""
        return [worker.process.pid for worker in self._workers]

    def step_all(self, jobs: Sequence[tuple[Any, str | None]]) -> list[Any]:
        """Step a copy of each env with its action; return the stepped copies in job order.

        Raises `PoolError` when a job raised in its worker or failed `max_attempts` times; the pool stays usable
        (see the module docstring)."""
        if self._closed:
            raise PoolError("the pool is closed: create a new EnvPool")
        self._batch += 1
        try:
            return self._run(self._batch, jobs)
        except BaseException:
            self._reset_busy()
            raise

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
    def _run(self, batch: int, jobs: Sequence[tuple[Any, str | None]]) -> list[Any]:
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
                        worker.connection.send(((batch, job), payloads[job]))
                    except (BrokenPipeError, OSError):  # it died while idle: replace it, the job never ran
                        pending.appendleft(job)
                        self._replace(index)
                        continue
                    attempts[job] += 1
                    worker.job, worker.started = job, time.monotonic()
            busy = [w for w in self._workers if w.job is not None]
            ready = wait([w.connection for w in busy] + [w.process.sentinel for w in busy], timeout=1.0)
            for index, worker in enumerate(self._workers):
                job = worker.job
                if job is None:
                    continue
                if worker.connection in ready:
                    try:
                        tag, ok, body = worker.connection.recv()
                    except (EOFError, OSError):
                        self._retry(index, job, attempts, pending, "its worker died")
                        continue
                    if tag != (batch, job):
                        continue  # not this job's reply (another batch's): dropped, the job still runs
                    worker.job = None
                    if not ok:
                        raise PoolError(f"job {job} raised in its worker:\n{body}")
                    results[job] = pickle.loads(body)
                    remaining -= 1
                elif worker.process.sentinel in ready or not worker.process.is_alive():
                    self._retry(index, job, attempts, pending, "its worker died")
                elif time.monotonic() - worker.started > self.job_timeout:
                    worker.process.kill()
                    self._retry(index, job, attempts, pending, f"it ran past job_timeout={self.job_timeout}s")
        return results

    def _retry(self, index: int, job: int, attempts: list[int], pending: deque, why: str) -> None:
        """Worker `index` failed `job` (`why`): replace the worker and requeue the job, or raise `PoolError` naming
        the job once it has had `max_attempts` attempts."""
        self._replace(index)
        if attempts[job] >= self.max_attempts:
            raise PoolError(
                f"job {job} failed in {attempts[job]} attempts ({why} the last time); a step that is this slow "
                f"needs a larger job_timeout, one that kills its worker needs fixing"
            )
        self.retried_jobs += 1
        pending.appendleft(job)

    def _reset_busy(self) -> None:
        """Kill and replace every worker still running a job of the batch that failed: none of their replies may
        reach a later batch."""
        for index, worker in enumerate(self._workers):
            if worker.job is not None:
                worker.process.kill()
                self._replace(index)

    def _start(self) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_worker_main, args=(child,), daemon=True)
        process.start()
        child.close()
        return _Worker(process, parent)

    def _replace(self, index: int) -> None:
        """Replace dead, stuck or stale worker `index` by a fresh idle one."""
        worker = self._workers[index]
        worker.process.join(timeout=5)
        worker.connection.close()
        self._workers[index] = self._start()
        self.restarts += 1
