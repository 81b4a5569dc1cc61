"""How an environment runs an agent's programs in the sandbox (`pettingllms.sandbox`) and reads what came back.

`run_programs(sandbox, programs)` runs a batch and returns one `ProgramRun` per program, in order. A run's
`status` is the sandbox's ("ok", "error", "timeout", "memory", "output_limit", "killed", "crashed"; see
`pettingllms.sandbox`), or "unavailable" when the sandbox could not be used at all (bubblewrap missing or unable
to start: then every program of the batch is "unavailable" and none ran). A run's `error` is None exactly when
its status is "ok"; otherwise it says, for the model, why the run gives nothing:

| status | `error` |
|---|---|
| "ok" | None |
| "unavailable" | "the code could not run: <why the sandbox is unusable>" |
| any other | "the code did not finish cleanly (status <status>)" |

`ProgramRun.answer(marked)` reads a program's answer from what it printed: the marked answer (`marked(stdout)`:
an env's `<answer>...</answer>` or `\\boxed{...}`) when there is one, else the last non-empty printed line
(stripped); a run that printed neither answers nothing, with the error "the code printed nothing".

Limits are each `Program`'s own (`timeout` in seconds of wall-clock time, `memory_mb` of address space per
process), validated by the sandbox before anything runs (an invalid limit raises `ValueError`: a bug of the env,
not of the model); the sandbox also caps what a program prints (status "output_limit") and its processes.
The sandbox is the one the env was given, or the process-wide shared one (`default_sandbox()`) when it was given
None: envs hold None so that a clone shares the shared sandbox rather than copying it.

`run_until_timeout(sandbox, groups)` judges programs as a contest judge runs one solution on its tests: each
group's programs in order, stopping at the group's first timeout (the programs after it are not run). A program
that loops on every test then costs one timeout, not one per test.

Programs queue for the sandbox's workers under an `owner` (`new_owner()`: one per environment), served fairly
across owners (`pettingllms.sandbox.fair_slots`: the owner that has held workers least goes first): another
environment's looping programs delay each of this one's by at most one program's time limit (until a worker frees),
never by their whole queue. `Judged.queued_s` says how long a judgement waited.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from pettingllms import sandbox as sandboxing
from pettingllms.sandbox import Program, Sandbox, SandboxResult


@dataclasses.dataclass(frozen=True)
class ProgramRun:
    """One program's run as an env shows and pays it (see the module docstring).

    Attributes:
        status: the sandbox's status, or "unavailable".
        output: what an observation shows of the run: its stdout, then "\\n[stderr]\\n" and its stderr when it
            wrote any ("" when it did not run).
        error: why the run gives nothing (None iff status is "ok").
        result: the sandbox's result (None when the sandbox was unavailable), for envs that judge it themselves.
    """

    status: str
    output: str
    error: str | None
    result: SandboxResult | None

    def answer(self, marked: Callable[[str], str | None]) -> tuple[str | None, str | None]:
        """`(answer, None)`, or `(None, error)` when the run gives no answer (module docstring).

        >>> printed = SandboxResult("ok", "work\\n  42 \\n\\n", "", 0, 0.1)
        >>> ProgramRun("ok", printed.stdout, None, printed).answer(lambda stdout: None)
        ('42', None)
        """
        if self.error is not None:
            return None, self.error
        stdout = self.result.stdout
        answer = marked(stdout)
        if answer is not None:
            return answer, None
        lines = [line.strip() for line in stdout.splitlines() if line.strip()]
        return (lines[-1], None) if lines else (None, "the code printed nothing")


_OWNERS = itertools.count()


def new_owner() -> int:
    """A key no other environment of this process queues its programs under (an env keeps one; its deep copies,
    an episode's candidates, share it)."""
    return next(_OWNERS)


class Judged(NamedTuple):
    """What `run_until_timeout` returns: each group's runs, and the seconds its programs waited for sandbox
    workers (over the threads that ran them, the longest of each thread's summed waits)."""

    runs: list[list[ProgramRun | None]]
    queued_s: float


def run_programs(
    sandbox: Sandbox | None, programs: Sequence[Program], owner: Hashable | None = None
) -> list[ProgramRun]:
    """Run `programs` in parallel in `sandbox` (None: the shared one), queued as `owner`'s (None: the calling
    thread's); one `ProgramRun` per program, in order.

    An empty batch returns [] without touching the sandbox. `SandboxUnavailable` never escapes: it makes every
    run "unavailable".
    """
    if not programs:
        return []
    try:
        runner = sandbox if sandbox is not None else sandboxing.default_sandbox()
        results = runner.run_batch(programs, owner=owner)
    except sandboxing.SandboxUnavailable as error:
        return [_unavailable(error)] * len(programs)
    return [_read(result) for result in results]


def run_until_timeout(
    sandbox: Sandbox | None, groups: Sequence[Sequence[Program]], owner: Hashable | None = None
) -> Judged:
    """Run each group's programs in order, each group stopping at its first timeout, queued as `owner`'s; in
    `Judged.runs` one list per group, one entry per program: its run, or None when an earlier program of its
    group timed out (it was not run, or it ran meanwhile on another worker and does not count).

    The sandbox's `workers` threads each hold a lease (`Sandbox.lease`: it keeps its worker while `owner` is the
    one to serve) and take the next program, across the groups in order, of a group that has not stopped; so
    which programs count never depends on the number of workers, and a group whose every program loops costs
    about one timeout. `Judged.queued_s` is the longest any thread waited for workers, summed over its programs.
    When the sandbox is unavailable every entry is the "unavailable" run.
    """
    try:
        runner = sandbox if sandbox is not None else sandboxing.default_sandbox()
    except sandboxing.SandboxUnavailable as error:
        return Judged([[_unavailable(error)] * len(group) for group in groups], 0.0)
    results: list[list[SandboxResult | None]] = [[None] * len(group) for group in groups]
    stopped = [False] * len(groups)
    order = iter([(g, i) for g, group in enumerate(groups) for i in range(len(group))])
    taking = threading.Lock()

    def drain() -> float:
        waited = 0.0
        with runner.lease(owner) as lease:
            while True:
                with taking:  # lazy: a program is taken only while its group has not stopped
                    item = next((item for item in order if not stopped[item[0]]), None)
                if item is None:
                    return waited
                g, i = item
                result = lease.run(groups[g][i])
                waited += result.queued_s
                with taking:
                    results[g][i] = result
                    stopped[g] = stopped[g] or result.status == "timeout"

    threads = min(runner.workers, sum(len(group) for group in groups))
    try:
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            waits = [future.result() for future in [pool.submit(drain) for _ in range(threads)]]
    except sandboxing.SandboxUnavailable as error:
        return Judged([[_unavailable(error)] * len(group) for group in groups], 0.0)
    return Judged([_until_first_timeout(group) for group in results], max(waits, default=0.0))


def _until_first_timeout(results: list[SandboxResult | None]) -> list[ProgramRun | None]:
    """A group's runs up to and including its first timeout (programs are taken in order, so every program
    before one that ran has run); None after it."""
    runs: list[ProgramRun | None] = []
    over = False
    for result in results:
        runs.append(None if over or result is None else _read(result))
        over = over or result is None or result.status == "timeout"
    return runs


def _unavailable(error: sandboxing.SandboxUnavailable) -> ProgramRun:
    return ProgramRun("unavailable", "", f"the code could not run: {error}", None)


def _read(result: SandboxResult) -> ProgramRun:
    output = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
    error = None if result.status == "ok" else f"the code did not finish cleanly (status {result.status})"
    return ProgramRun(result.status, output, error, result)
