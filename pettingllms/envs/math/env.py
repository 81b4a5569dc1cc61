"""# Math (`math-v0`)

A reasoner answers in `\\boxed{...}`; a tool agent writes Python that prints the answer. Both see each other's
answers; the episode ends when their answers agree. Success: the final answer is correct.

| | |
|---|---|
| agents (workflow "mas") | `reasoner`, `tool` (in that order each turn; the tool agent sees this turn's reasoning) |
| agents (workflow "single") | `reasoner` |
| action, reasoner | any text; the answer is the last `\\boxed{...}` (nested braces allowed) |
| action, tool | any text; a ```python block that prints the answer (run in the sandbox, numpy and sympy importable; a printed `\\boxed{}` is used, else the last printed line), or a direct `\\boxed{...}` |
| observation | text: the problem, both agents' answers so far (the tool's code and output too), and the answer format |
| instances | `dataset` (default `"generated"`: a seeded generator of problems with exact answers, train/eval split by a hash of the problem; or `"gsm8k"`, `"math500"`, `"aime2024"`, `"aime2025"`, `"olympiadbench"` through `datasets`, with `dataset_path` for local files); `reset(options={"problem": {"problem": TEXT, "answer": TEXT}})` loads a problem; `options={"split": "train"|"eval"}`; `options={"index": i}` takes the split's i-th dataset problem (fixed evaluation suites) |

The team's answer is the reasoner's latest answer. In the "mas" workflow the episode terminates after a tool step
whose answer agrees with the reasoner's: equivalent to it (by `math-verify`), or both correct (two correct
answers are one answer, even in forms `math-verify` does not match to each other, such as `7.0` and
`\\text{7}`); in the "single" workflow after the first answer. It is truncated after `max_turns` turns.

## Rewards
Paid on change, as `pettingllms.core.env` states (an agent's local rewards sum to its final potential):
- local, each agent: its potential is 1.0 while its own latest answer is correct (equivalent forms count:
  `\\frac{3}{4}`, `0.75`, `3/4`), else 0.0, so it is paid +1 when its answer becomes correct, -1 when it
  turns wrong, 0 for saying the same again; -0.1 when the answer cannot be found (no `\\boxed{}`, code that
  fails or prints nothing; its previous answer stays).
- team: +1 on the step where the team's answer becomes correct, -1 if a later answer makes it wrong (the team
  rewards of an episode sum to its success), else 0.
So each agent's return is at most `1 + alpha`, reached by answering correctly.

A completion cut by its length budget (`Generation.truncated`; `train/truncated/*` and `truncated_rate` count
them) is scored as written, after any thinking block: cut inside a thinking block or before its `\\boxed{...}`
closes (the tool agent: inside its ```python block), it holds no answer and earns the -0.1 above.

## Progress
`env.unwrapped.progress()` (0 to 100): 100 once the task is solved (`success`), else 0.

## Tiers
`pettingllms.make("math-v0", tier=...)` with `easy`, `medium`, `hard` or `expert`: the arguments and measured
figures of each tier are in [docs/tiers.md](../tiers.md) (`pettingllms.envs.tiers`).

## Arguments
`dataset`, `dataset_path`, `difficulty` (1-3, generated problems), `tool_timeout` (default 5 s),
`tool_memory_mb` (default 1024), `sandbox`, plus `alpha` (default 1.0), `workflow`, `max_turns` (default 3),
`render_mode` ("ansi", "human").

`workflow="ensemble", num_agents=N` (1-16, default 3): reasoners `reasoner_0 .. reasoner_{N-2}` answer
independently (local reward: their own correctness), then `aggregator_0` sees every answer of the turn and gives
the team's answer (local reward: its correctness; team reward as above); the episode ends when every reasoner of
the turn agrees with it (equivalent, or both correct). `reward="outcome"` zeroes every local reward (penalties included), keeping only the
team's +1/-1 on changes of correctness.

## Version history
- v0: initial release; revised before release (2026-12) so that returns mean success: local rewards paid on
  change, and two correct answers agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pettingllms.core.env import AGGREGATOR, StepOutcome, TextAECEnv
from pettingllms.core.errors import ConfigError
from pettingllms.core.parsing import extract_python_block
from pettingllms.core.problems import NATIVE_SPLITS, load_split, pick_problem, problem_option
from pettingllms.core.splits import check_split, draw_in_split, split_of
from pettingllms.core.text import truncate
from pettingllms.data.math.generator import generate_problem
from pettingllms.data.math.grading import extract_boxed, is_equivalent, require_math_verify
from pettingllms.data.math.loaders import load_math_dataset
from pettingllms.data.math.schema import MathProblem, problem_from_dict
from pettingllms.envs.program_runs import new_owner, run_programs
from pettingllms.sandbox import Program

PARSE_ERROR_PENALTY = 0.1
SHOWN_CHARS = 3_000
"""The most characters of a tool's code, its output, or any agent's answer that an observation shows (cut with a
`[truncated]` mark): an answer is the agent's own text, and a 32 KB `\\boxed{}` would crowd out the prompt."""
EVALUATION_SETS = ("math500", "aime2024", "aime2025", "olympiadbench")


def _load_split(dataset: str, path: str | None, split: str) -> tuple[MathProblem, ...]:
    if dataset not in EVALUATION_SETS:
        return load_split(load_math_dataset, dataset, path, split, NATIVE_SPLITS[split])
    if split == "train":
        raise ConfigError(f"dataset {dataset!r} is an evaluation set; use split='eval'")
    return load_split(load_math_dataset, dataset, path, split, None)


class MathEnv(TextAECEnv):
    """Reasoner and tool agent on one math problem (see the module docstring)."""

    REQUIRES = "the [math] extra (make() refuses without it); bubblewrap for the tool agent's programs"
    metadata = {"name": "math-v0", "render_modes": ["ansi", "human"], "is_parallelizable": False}
    WORKFLOWS = {"mas": ("reasoner", "tool"), "single": ("reasoner",)}
    ENSEMBLE_PROPOSER = "reasoner"
    DEFAULT_MAX_TURNS = 3
    RESET_OPTIONS = frozenset({"split", "problem", "index"})

    def __init__(
        self,
        *,
        dataset: str = "generated",
        dataset_path: str | None = None,
        difficulty: int = 1,
        tool_timeout: float = 5.0,
        tool_memory_mb: int = 1024,
        sandbox=None,
        **kwargs: Any,
    ):
        require_math_verify()  # at make(): every reward grades answers with it
        super().__init__(**kwargs)
        if difficulty not in (1, 2, 3):
            raise ConfigError(f"difficulty={difficulty!r} is not supported; allowed values: [1, 2, 3]")
        self.dataset = dataset
        self.dataset_path = dataset_path
        self.difficulty = difficulty
        self.tool_timeout = float(tool_timeout)
        self.tool_memory_mb = int(tool_memory_mb)
        self._sandbox = sandbox
        self._owner = new_owner()  # its programs queue for sandbox workers under it (its clones' too)
        self.problem: MathProblem | None = None
        self.answers: dict[str, str | None] = {}
        self.correct: dict[str, bool] = {}
        self.tool_run: tuple[str, str] | None = None  # the tool agent's last (code, shown output)
        self._team_correct = False

    # ----------------------------------------------------------------- instances
    def problems(self, split: str) -> tuple[MathProblem, ...]:
        """The problems of `split` ("train" or "eval") of this env's dataset (not for generated problems, the
        only ones with a "val" split)."""
        if self.dataset == "generated":
            raise ConfigError("generated problems have no fixed list: they are drawn from seeds")
        return _load_split(self.dataset, self.dataset_path, check_split(split, tuple(NATIVE_SPLITS)))

    def _reset_task(self, options: dict[str, Any]) -> None:
        self.problem = problem_option(options, problem_from_dict)
        if self.problem is None:
            split = check_split(options.get("split", "eval" if self.dataset in EVALUATION_SETS else "train"))
            if self.dataset == "generated":
                if options.get("index") is not None:
                    raise ConfigError(
                        "reset option 'index' needs a dataset; generated problems come from seeds"
                    )
                self.problem = draw_in_split(
                    lambda rng: generate_problem(rng, difficulty=self.difficulty),
                    lambda p: p.id,
                    self.np_random,
                    split,
                )
            else:
                pool = self.problems(split)
                self.problem = pick_problem(pool, options, self.np_random)
        self.answers = dict.fromkeys(self.possible_agents)
        self.correct = dict.fromkeys(self.possible_agents, False)  # whether each latest answer is right
        self.proposals: dict[str, str] = {}  # ensemble: this turn's proposals, by reasoner
        self.tool_run = None
        self._team_correct = False

    def instance_split(self) -> str:
        """The split the current generated problem belongs to (by its id's hash)."""
        return split_of(self.problem.id)

    # ----------------------------------------------------------------- steps
    def _act(self, agent: str, action: str) -> StepOutcome:
        if self.workflow == "ensemble":
            return self._act_ensemble(agent, action)
        if agent == "tool":
            answer, error = self._tool_answer(action)
        else:
            answer = extract_boxed(action)
            error = (
                None if answer is not None else "no \\boxed{...} answer found: end with \\boxed{your answer}"
            )
        if answer is None:
            return StepOutcome(reward_local=-PARSE_ERROR_PENALTY, error=error, parse_error=True)
        self.answers[agent] = answer
        correct = is_equivalent(answer, self.problem.answer)
        self.correct[agent] = correct
        team = 0.0
        if agent == "reasoner":
            team = float(correct) - float(self._team_correct)
            self._team_correct = self.success = correct
        terminal = self.workflow == "single" or (
            agent == "tool" and self.answers["reasoner"] is not None and self._agree("tool", "reasoner")
        )
        return StepOutcome(
            reward_team=team, potentials={agent: float(correct)}, terminal=terminal, info={"correct": correct}
        )

    def _agree(self, agent: str, other: str) -> bool:
        """Whether two agents' latest answers agree: both correct, or equivalent to each other."""
        if self.correct[agent] and self.correct[other]:
            return True
        return is_equivalent(self.answers[agent], self.answers[other])

    def _act_ensemble(self, agent: str, action: str) -> StepOutcome:
        """Proposers answer alone (local: own correctness); the aggregator's answer is the team's (local: the
        team's correctness); the episode ends when every proposal of the turn agrees with the aggregator."""
        answer = extract_boxed(action)
        if answer is None:
            return StepOutcome(
                reward_local=-PARSE_ERROR_PENALTY,
                parse_error=True,
                error="no \\boxed{...} answer found: end with \\boxed{your answer}",
            )
        self.answers[agent] = answer
        correct = self.correct[agent] = is_equivalent(answer, self.problem.answer)
        if agent != AGGREGATOR:
            self.proposals[agent] = answer
            return StepOutcome(potentials={agent: float(correct)}, info={"correct": correct})
        team = float(correct) - float(self._team_correct)
        self._team_correct = self.success = correct
        terminal = all(self._agree(AGGREGATOR, proposer) for proposer in self.proposals)
        self.proposals = {}
        return StepOutcome(
            reward_team=team, potentials={agent: float(correct)}, terminal=terminal, info={"correct": correct}
        )

    def _tool_answer(self, action: str) -> tuple[str | None, str | None]:
        """The tool agent's answer and the error: its direct `\\boxed{}`, or its program's (run without input,
        `pettingllms.envs.program_runs`: a printed non-empty `\\boxed{}`, else its last printed line)."""
        code = extract_python_block(action)
        if code is None:
            answer = extract_boxed(action)
            return (
                answer,
                None if answer is not None else "no ```python block and no \\boxed{...} answer found",
            )
        [run] = run_programs(
            self._sandbox, [Program(code, "", self.tool_timeout, self.tool_memory_mb)], self._owner
        )
        self.tool_run = (code, run.output)
        return run.answer(lambda stdout: extract_boxed(stdout) or None)

    # ----------------------------------------------------------------- observations
    def _observation_text(self, agent: str) -> str:
        parts = [
            f"# {self.metadata['name']} - turn {self.display_turn} of {self.max_turns}",
            self._role(agent),
        ]
        parts += ["## Problem", self.problem.problem.strip()]
        if self.workflow == "ensemble":
            if self.answers.get(AGGREGATOR) is not None:
                parts.append(f"## The team's answer so far\n{_boxed(self.answers[AGGREGATOR])}")
            if agent == AGGREGATOR and self.proposals:
                parts.append(f"## The reasoners' answers this turn ({len(self.proposals)})")
                parts += [f"{name}: {_boxed(answer)}" for name, answer in self.proposals.items()]
            parts += ["## Your answer", self._answer_format(agent)]
            return "\n".join(parts)
        whose = {
            "reasoner": "Your previous" if agent == "reasoner" else "The reasoner's",
            "tool": "Your previous" if agent == "tool" else "The tool agent's",
        }
        if self.answers.get("reasoner") is not None:
            parts.append(f"## {whose['reasoner']} answer\n{_boxed(self.answers['reasoner'])}")
        if self.tool_run is not None:
            code, output = self.tool_run
            parts += [f"## {whose['tool']} code", "```python", truncate(code.rstrip(), SHOWN_CHARS), "```"]
            parts += ["Output:", truncate(output, SHOWN_CHARS)]
        if self.answers.get("tool") is not None:
            parts.append(f"## {whose['tool']} answer\n{truncate(self.answers['tool'], SHOWN_CHARS)}")
        parts += ["## Your answer", self._answer_format(agent)]
        return "\n".join(parts)

    def _role(self, agent: str) -> str:
        if self.workflow == "ensemble":
            others = self.ensemble_size - 1
            if agent == AGGREGATOR:
                return (
                    "You are the AGGREGATOR: solve the problem alone."
                    if others == 0
                    else f"You are the AGGREGATOR of {others} reasoners: weigh their answers and give the team's "
                    "final answer. The episode ends when they all agree with you."
                )
            return f"You are {agent}, one of {others} REASONERS answering independently: solve the problem."
        if agent == "tool":
            return (
                "You are the TOOL agent: compute the answer with Python. The episode ends when your answer agrees "
                "with the reasoner's."
            )
        if self.workflow == "single":
            return "You are the REASONER: solve the problem."
        return (
            "You are the REASONER: solve the problem. A tool agent checks it with code; agree on the answer."
        )

    def _answer_format(self, agent: str) -> str:
        if agent == "tool":
            return (
                f"Write one ```python block that prints the final answer (numpy and sympy available, "
                f"{self.tool_timeout:g} s; the program gets no input, so write the problem's numbers into it), "
                "or give it directly as \\boxed{...}."
            )
        return "Reason step by step, then give the final answer as \\boxed{...}."

    def _render_text(self) -> str:
        answers = ", ".join(f"{agent}: {answer}" for agent, answer in self.answers.items())
        return f"{self.problem.id}: turn {self.display_turn} of {self.max_turns}; answers {answers}; gold {self.problem.answer}"

    # ----------------------------------------------------------------- oracle
    def solution(self, agent: str | None = None) -> str:
        """The gold answer in the reasoner's format (the tool agent accepts it too), for any agent."""
        return f"\\boxed{{{self.problem.answer}}}"

    def random_answer(self, agent: str, rng: np.random.Generator) -> str:
        """A random integer in `\\boxed{}` (the random baseline; both agents accept the format)."""
        return f"\\boxed{{{int(rng.integers(-10, 101))}}}"


def _boxed(answer: str) -> str:
    """An agent's answer as an observation shows it: `\\boxed{...}` around at most `SHOWN_CHARS` of it."""
    return f"\\boxed{{{truncate(answer, SHOWN_CHARS)}}}"
