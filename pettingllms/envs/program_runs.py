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
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence

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


def run_programs(sandbox: Sandbox | None, programs: Sequence[Program]) -> list[ProgramRun]:
    """Run `programs` in parallel in `sandbox` (None: the shared one); one `ProgramRun` per program, in order.

    An empty batch returns [] without touching the sandbox. `SandboxUnavailable` never escapes: it makes every
    run "unavailable".
    """
    if not programs:
        return []
    try:
        runner = sandbox if sandbox is not None else sandboxing.default_sandbox()
        results = runner.run_batch(programs)
    except sandboxing.SandboxUnavailable as error:
        return [_unavailable(error)] * len(programs)
    return [_read(result) for result in results]


def run_until_timeout(
    sandbox: Sandbox | None, groups: Sequence[Sequence[Program]]
) -> list[list[ProgramRun | None]]:
    """Run each group's programs in order, each group stopping at its first timeout; one list per group, one entry
    per program: its run, or None when an earlier program of its group timed out (it was not run).

    Programs run in parallel waves of the sandbox's `workers`, taken across the groups in order; a program that
    ran in the same wave after its group's first timeout is discarded (None), so which programs count never
    depends on the number of workers. A group whose every program loops costs about one timeout. When the sandbox
    is unavailable every entry is the "unavailable" run.
    """
    try:
        workers = (sandbox if sandbox is not None else sandboxing.default_sandbox()).workers
    except sandboxing.SandboxUnavailable as error:
        return [[_unavailable(error)] * len(group) for group in groups]
    runs: list[list[ProgramRun | None]] = [[None] * len(group) for group in groups]
    stopped = [False] * len(groups)
    # lazy: a program is taken only while its group has not stopped (as of the waves before its own)
    pending = ((g, i) for g, group in enumerate(groups) for i in range(len(group)) if not stopped[g])
    while wave := list(itertools.islice(pending, workers)):
        done = run_programs(sandbox, [groups[g][i] for g, i in wave])
        if done[0].result is None:  # the sandbox is unavailable: nothing ran
            return [[done[0]] * len(group) for group in groups]
        for (g, i), run in zip(wave, done, strict=True):
            if not stopped[g]:
                runs[g][i] = run
                stopped[g] = run.status == "timeout"
    return runs


def _unavailable(error: sandboxing.SandboxUnavailable) -> ProgramRun:
    return ProgramRun("unavailable", "", f"the code could not run: {error}", None)


def _read(result: SandboxResult) -> ProgramRun:
    output = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
    error = None if result.status == "ok" else f"the code did not finish cleanly (status {result.status})"
    return ProgramRun(result.status, output, error, result)
