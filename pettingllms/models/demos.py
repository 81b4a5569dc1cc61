"""Solver demonstrations for the supervised warm start of a model on a puzzle environment.

`collect_demonstrations` plays `pettingllms.make(env_id, workflow=...)` on training seeds. At every agent step
it records `Demo(agent, prompt=str(env.observe(agent)), target=env.unwrapped.solution())` — the oracle's answer
for the current state — and then steps the env with an *executed* answer, which is usually the target but, with
probability `tool_noise` for the `tool` agent and `plan_noise` for every other agent, a perturbed copy
(`perturb_answer`: one move dropped, or replaced by a different move). The targets stay clean; the noise only
shapes the states and prompts the data covers:

- noisy tool proposals (every `tool_i` of an ensemble too) teach the plan agent (or the aggregator) to answer from the map instead of copying the proposal it is shown;
- noisy plan answers leave the puzzle unsolved, so later turns (with their "Last turn" report) appear too.

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

from pettingllms.envs.base import agent_role

MOVES = ("U", "D", "L", "R")
ENSEMBLE_DEMO_SIZES = (1, 2, 3, 5, 7)
"""Team sizes an "ensemble" warm start covers when `env_kwargs` fixes none (episode i plays size i mod 5)."""
TOOL_NOISE = 0.3
PLAN_NOISE = 0.2
_ANSWER = re.compile(r"^<answer>(.*)</answer>$", re.DOTALL)


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


def collect_demonstrations(
    env_id: str,
    seeds: Iterable[int],
    rng: np.random.Generator,
    *,
    workflow: str = "mas",
    env_kwargs: Mapping[str, Any] | None = None,
    tool_noise: float = TOOL_NOISE,
    plan_noise: float = PLAN_NOISE,
) -> list[Demo]:
    """Play one episode per seed (training split) and return every agent step as a `Demo`, in play order.

    Args:
        env_id: a registered environment whose unwrapped env has `solution()` (the puzzle envs).
        seeds: reset seeds, one episode each.
        rng: the source of the noise decisions.
        workflow, env_kwargs: passed to `pettingllms.make`.
        tool_noise: probability that the `tool` agent's executed proposal is perturbed.
        plan_noise: probability that another agent's executed answer is perturbed.
    """
    import pettingllms

    for name, value in (("tool_noise", tool_noise), ("plan_noise", plan_noise)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name}={value} must be in [0, 1]")
    kwargs = dict(env_kwargs or {})
    sizes = ENSEMBLE_DEMO_SIZES if workflow == "ensemble" and "num_agents" not in kwargs else (None,)
    envs = {
        size: pettingllms.make(
            env_id, workflow=workflow, **kwargs, **({} if size is None else {"num_agents": size})
        )
        for size in sizes
    }
    demos: list[Demo] = []
    for seed in seeds:
        env = envs[sizes[int(seed) % len(sizes)]]
        env.reset(seed=int(seed))
        for agent in env.agent_iter():
            _, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            target = env.unwrapped.solution()
            demos.append(Demo(agent, str(env.observe(agent)), target))
            noise = tool_noise if agent_role(agent) == "tool" else plan_noise
            env.step(perturb_answer(target, rng) if rng.random() < noise else target)
    for env in envs.values():
        env.close()
    return demos
