"""Solver demonstrations for the supervised warm start of a model on a puzzle environment or `math-v0`.

`collect_demonstrations` plays `pettingllms.make(env_id, workflow=...)` on training seeds. At every agent step
it records `Demo(agent, prompt=str(env.observe(agent)), target)` and then steps the env with an *executed*
answer:

- a `tool` agent's target is, with probability `tool_programs`, a program that computes the answer
  (`pettingllms.warmstart.tool_programs`: the env's solver, or with probability `program_bugs` one of its
  imperfect variants, uniformly), executed as written; otherwise the oracle's answer for the current state
  (`env.unwrapped.solution()`), executed as is or, with probability `tool_noise`, as a perturbed copy
  (`perturb_answer`: one move dropped, or replaced by a different move);
- any other agent's target is the tool's proposal of this turn, copied, when that proposal solves the puzzle
  (`env.unwrapped.solves`), else the oracle's answer; it is executed as is or, with probability `plan_noise`,
  perturbed.

So the plan agent learns to keep a right proposal and to answer from the map when the proposal is wrong
(perturbed direct answers, buggy programs), and never to edit a right one; perturbed plan answers leave the
puzzle unsolved, so later turns (with their "Last turn" report) appear too.

`math-v0` (`MATH_ENV`) has no board: a `tool` program is written for the problem at hand
(`pettingllms.warmstart.math_programs.write_program`, or with probability `program_bugs` one of its
`VARIANTS`), else the gold answer, perturbed with probability `tool_noise` (`perturb_number`); the
`reasoner`'s target is the tool agent's latest answer when that answer is right, else the gold answer (the
generator's exact one), perturbed with probability `plan_noise`.

`code-v0` has demonstrations for its generated problems (`dataset="generated"`): the `coder`'s first program
is, with probability `program_bugs`, one of the problem's near misses (its reference with one realistic bug),
else the reference; a later program (after the tester's cases showed the mismatches) is the reference; the
`tester`'s cases are a drawn subset (3 or more, in order) of the problem's hidden tests. Each is executed as
written, so a buggy first program meets the tester's cases and the second turn shows the fix.

Everything random comes from the `numpy.random.Generator` passed in; the envs are seeded by their seeds.
Perturbation assumes the answer is a space-separated list inside `<answer>...</answer>`; items outside
`MOVES` (e.g. Sudoku placements) can only be dropped.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from pettingllms.core.env import agent_role
from pettingllms.warmstart import math_programs
from pettingllms.warmstart.tool_programs import PROGRAM_ENVS, PROGRAMS, as_tool_call

MOVES = ("U", "D", "L", "R")
ENSEMBLE_DEMO_SIZES = (1, 2, 3, 5, 7)
"""Team sizes an "ensemble" warm start covers when `env_kwargs` fixes none (episode i plays size i mod 5)."""
TOOL_NOISE = 0.3
PLAN_NOISE = 0.2
_ANSWER = re.compile(r"^<answer>(.*)</answer>$", re.DOTALL)
MATH_ENV = "math-v0"
"""The env whose tool programs are written per problem (`pettingllms.warmstart.math_programs`)."""
CODE_ENV, CODE_DATASET = "code-v0", "generated"
"""The code env has demonstrations for its generated problems only (their reference programs and near misses)."""
DEMO_PROGRAM_ENVS = (*PROGRAM_ENVS, MATH_ENV, CODE_ENV)
"""The environments with solver demonstrations (the puzzle envs, `math-v0`, and `code-v0` with
`dataset="generated"`: `missing_demonstrations`); `bargain-v0` has none."""
DEMO_WORDS = f"{', '.join(DEMO_PROGRAM_ENVS[:-1])} and {CODE_ENV} with dataset={CODE_DATASET!r}"


def missing_demonstrations(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> str | None:
    """Why `env_id` made with `env_kwargs` has no solver demonstrations to warm-start a model on, in words that
    name where they exist; None when it has them."""
    dataset = dict(env_kwargs or {}).get("dataset", "bundled")
    if env_id == CODE_ENV and dataset != CODE_DATASET:
        return (
            f"{env_id!r} has no solver demonstrations for dataset={dataset!r} (they exist for {DEMO_WORDS})"
        )
    if env_id not in DEMO_PROGRAM_ENVS:
        return f"{env_id!r} has no solver demonstrations (they exist for {DEMO_WORDS})"
    return None


@dataclasses.dataclass(frozen=True)
class Demo:
    """One supervised example: an agent's observation and the oracle's answer to it."""

    agent: str
    prompt: str
    target: str

    def messages(self) -> list[dict[str, str]]:
        """The example in TRL's conversational format (user = prompt, assistant = target)."""
        return [{"role": "user", "content": self.prompt}, {"role": "assistant", "content": self.target}]


def perturb_answer(answer: str, rng: np.random.Generator) -> str:
    """A corrupted copy of an oracle answer `<answer>a b c</answer>`: one item dropped or replaced.

    An item in `MOVES` is replaced (half the time) by a different move; otherwise an item is dropped, except that
    a lone item is always replaced if it is a move. Text that is not a plain answer is returned unchanged.

    >>> perturb_answer("<answer>U</answer>", np.random.default_rng(0)) in {"<answer>D</answer>", "<answer>L</answer>", "<answer>R</answer>"}
    True
    """
    match = _ANSWER.match(answer)
    items = match.group(1).split() if match else []
    if not items:
        return answer
    index = int(rng.integers(len(items)))
    replaceable = items[index] in MOVES
    if replaceable and (len(items) == 1 or rng.random() < 0.5):
        items[index] = str(rng.choice([move for move in MOVES if move != items[index]]))
    else:
        del items[index]
    return f"<answer>{' '.join(items)}</answer>"


def perturb_number(answer: str, rng: np.random.Generator) -> str:
    """A wrong copy of a math answer: its first number moved by 1 to 3 either way (e.g. `\\boxed{7}` to
    `\\boxed{5}`; for a fraction, its numerator); text without a number is returned unchanged.

    >>> perturb_number("\\boxed{-\\frac{25}{4}}", np.random.default_rng(0)) != "\\boxed{-\\frac{25}{4}}"
    True
    """
    shift = int(rng.choice([-3, -2, -1, 1, 2, 3]))

    def moved(match: re.Match) -> str:
        number = int(match.group())
        return str(
            number + shift if number + shift > 0 else number + abs(shift)
        )  # never itself, never signed

    return re.sub(r"\d+", moved, answer, count=1)


def collect_demonstrations(
    env_id: str,
    seeds: Iterable[int],
    rng: np.random.Generator,
    *,
    workflow: str = "mas",
    env_kwargs: Mapping[str, Any] | None = None,
    tool_noise: float = TOOL_NOISE,
    plan_noise: float = PLAN_NOISE,
    tool_programs: float = 0.0,
    program_bugs: float = 0.0,
    per_role: int | None = None,
) -> list[Demo]:
    """Play one episode per seed (training split) and return every agent step as a `Demo`, in play order.

    Args:
        env_id: a registered environment whose unwrapped env has `solution()` (the puzzle envs).
        seeds: reset seeds, one episode each (may be endless when `per_role` is set).
        rng: the source of the noise and program decisions.
        workflow, env_kwargs: passed to `pettingllms.make`.
        tool_noise: probability that the `tool` agent's executed direct answer is perturbed.
        plan_noise: probability that another agent's executed answer is perturbed.
        tool_programs: probability that a `tool` demonstration is a program (only for `PROGRAM_ENVS`).
        program_bugs: probability that such a program is one of the imperfect variants.
        per_role: stop once every role of the workflow has this many demonstrations, and keep the first
            `per_role` of each (warm starts of different workflows then see as many per role).
    """
    import pettingllms

    kwargs = dict(env_kwargs or {})
    _check_demo_settings(env_id, kwargs, tool_noise, plan_noise, tool_programs, program_bugs, per_role)
    sizes = ENSEMBLE_DEMO_SIZES if workflow == "ensemble" and "num_agents" not in kwargs else (None,)
    envs = {
        size: pettingllms.make(
            env_id, workflow=workflow, **kwargs, **({} if size is None else {"num_agents": size})
        )
        for size in sizes
    }
    roles = {agent_role(agent) for env in envs.values() for agent in env.possible_agents}
    demos: list[Demo] = []
    counts = dict.fromkeys(roles, 0)
    for seed in seeds:
        if per_role is not None and min(counts.values()) >= per_role:
            break
        env = envs[sizes[int(seed) % len(sizes)]]
        env.reset(seed=int(seed))
        for demo in _play_demonstration(env, rng, tool_noise, plan_noise, tool_programs, program_bugs):
            demos.append(demo)
            counts[agent_role(demo.agent)] += 1
    for env in envs.values():
        env.close()
    if per_role is None:
        return demos
    if min(counts.values()) < per_role:
        raise ValueError(f"the seeds gave fewer than per_role={per_role} demonstrations for a role: {counts}")
    return _first_per_role(demos, per_role)


def _play_demonstration(env, rng, tool_noise, plan_noise, tool_programs, program_bugs) -> Iterable[Demo]:
    """Play the episode `env` was reset to, yielding each agent step's demonstration as it is played."""
    for agent in env.agent_iter():
        _, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            continue
        target, executed = _demonstrate(
            env.unwrapped, agent, rng, tool_noise, plan_noise, tool_programs, program_bugs
        )
        yield Demo(agent, str(env.observe(agent)), target)
        env.step(executed)


def _check_demo_settings(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    tool_noise: float,
    plan_noise: float,
    tool_programs: float,
    program_bugs: float,
    per_role: int | None,
) -> None:
    missing = missing_demonstrations(env_id, env_kwargs)
    if missing is not None:
        raise ValueError(missing)
    for name, value in (
        ("tool_noise", tool_noise),
        ("plan_noise", plan_noise),
        ("tool_programs", tool_programs),
        ("program_bugs", program_bugs),
    ):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name}={value} must be in [0, 1]")
    if per_role is not None and per_role < 1:
        raise ValueError(f"per_role={per_role} must be >= 1")


def _first_per_role(demos: list[Demo], per_role: int) -> list[Demo]:
    """The first `per_role` demonstrations of each role, in play order."""
    kept: dict[str, int] = {}
    trimmed = []
    for demo in demos:
        role = agent_role(demo.agent)
        if kept.get(role, 0) < per_role:
            kept[role] = kept.get(role, 0) + 1
            trimmed.append(demo)
    return trimmed


def correct_program(env: Any) -> str:
    """The exact solver program of the unwrapped `env`'s current instance: its env's `PROGRAMS` entry (one
    program reads any board on standard input), or for `math-v0` the program written for the problem at hand
    (`math_programs.write_program`, which raises `UnknownProblem` for a problem it cannot read)."""
    name = env.metadata["name"]
    if name == MATH_ENV:
        return math_programs.write_program(env.problem.problem)
    if name not in PROGRAMS:
        raise ValueError(f"{name!r} has no tool programs; these do: {list(DEMO_PROGRAM_ENVS)}")
    return PROGRAMS[name].correct


def _demonstrate(
    env: Any,
    agent: str,
    rng: np.random.Generator,
    tool_noise: float,
    plan_noise: float,
    tool_programs: float,
    program_bugs: float,
) -> tuple[str, str]:
    """(target, executed answer) of one step (module docstring)."""
    if env.metadata["name"] == MATH_ENV:
        noise = tool_noise if agent_role(agent) == "tool" else plan_noise
        return _demonstrate_math(env, agent, rng, noise, (tool_programs, program_bugs))
    if env.metadata["name"] == CODE_ENV:
        target = _demonstrate_code(env, agent, rng, program_bugs)
        return target, target
    if agent_role(agent) == "tool":
        if tool_programs > 0 and rng.random() < tool_programs:
            programs = PROGRAMS[env.metadata["name"]]
            if rng.random() < program_bugs:
                program = programs.variants[
                    sorted(programs.variants)[int(rng.integers(len(programs.variants)))]
                ]
            else:
                program = correct_program(env)
            call = as_tool_call(program)
            return call, call
        target = env.solution()
        return target, perturb_answer(target, rng) if rng.random() < tool_noise else target
    proposal = env.proposal
    if proposal is not None and proposal.actions and env.solves(proposal.actions):
        target = env.answer_text(proposal.actions)
    else:
        target = env.solution()
    return target, perturb_answer(target, rng) if rng.random() < plan_noise else target


def _demonstrate_math(
    env: Any, agent: str, rng: np.random.Generator, noise: float, programs: tuple[float, float]
) -> tuple[str, str]:
    """(target, executed answer) of one `math-v0` step (module docstring); `noise` is the agent's perturbation
    probability, `programs` the (tool_programs, program_bugs) probabilities."""
    tool_programs, program_bugs = programs
    if agent_role(agent) == "tool":
        if tool_programs > 0 and rng.random() < tool_programs:
            program = correct_program(env)
            if rng.random() < program_bugs:
                variants = sorted(math_programs.VARIANTS)
                program = math_programs.VARIANTS[variants[int(rng.integers(len(variants)))]](program)
            call = as_tool_call(program)
            return call, call
        target = env.solution()
        return target, perturb_number(target, rng) if rng.random() < noise else target
    tool_answer = env.answers.get("tool")
    right = tool_answer is not None and env.correct.get("tool")
    target = f"\\boxed{{{tool_answer}}}" if right else env.solution()
    return target, perturb_number(target, rng) if rng.random() < noise else target


def _demonstrate_code(env: Any, agent: str, rng: np.random.Generator, program_bugs: float) -> str:
    """The target of one `code-v0` step on a generated problem (module docstring): the coder's first program is,
    with probability `program_bugs`, one of the problem's near misses (uniformly), else the reference, and any
    later program is the reference (the fix after the tester's mismatches); the tester's cases are 3 or more of
    the hidden tests, in order (a drawn number of them)."""
    if agent == "coder":
        misses = env.generated.near_misses
        if env.code is None and rng.random() < program_bugs:
            return f"```python\n{misses[int(rng.integers(len(misses)))].code}\n```"
        return env.solution("coder")
    lines = env.solution("tester").removeprefix("```python\n").removesuffix("\n```").splitlines()
    keep = int(rng.integers(min(3, len(lines)), len(lines) + 1))
    chosen = sorted(rng.choice(len(lines), size=keep, replace=False))
    return "```python\n" + "\n".join(lines[i] for i in chosen) + "\n```"
