"""`ToolPlanEnv`: the paper's two-agent workflow for puzzles (games and planning).

Each turn, in order:

1. `tool` (workflow "mas" only) answers either with a fenced ```python block or directly with an answer in
   `<answer>...</answer>`. Code runs in the sandbox (`pettingllms.sandbox`) with the current board on its
   standard input, exactly as the observation shows it under "Current state" (plus a final newline), so a
   program can compute from the board without copying it; its printed output is read for an
   `<answer>...</answer>`, or else its last non-empty line is read as the answer. The proposed actions are
   simulated on a *copy* of the state; the real state does not change. Its step's `info["program"]` says what
   the answer was: "absent" (a direct answer), "solves" (a program whose proposal would solve the puzzle) or
   "fails" (a program that did not finish, printed nothing usable, or proposed moves that would not solve it).
2. `plan` sees the task, the tool agent's code, output and proposed actions with their simulated result, and
   answers in `<answer>...</answer>`. Its actions are executed on the real state, in order, stopping as soon as
   the puzzle is solved.

The episode terminates when the puzzle is solved and is truncated after `max_turns` turns.

Rewards, with `potential(state)` defined per puzzle (`Puzzle.potential`: bounded; 1 iff solved), paid on change
as `pettingllms.core.env` states:
- `plan` (and the aggregator): its potential is the real state's, so its local reward is the progress its moves
  make, `potential(after) - potential(before)`.
- `tool` (each tool agent of an ensemble): at its step its potential becomes its proposal's, simulated on a copy,
  so it is paid `potential(simulated) - potential(real)` at once (the signal that ranks proposals of one state);
  when the plan agent then acts, its potential becomes the real state's again and it is paid the difference
  (`potential(real after) - potential(simulated)`, often negative). Over a turn a tool agent earns exactly the
  progress its team executed: a proposal the team does not carry out earns nothing, however often it is made.
- penalties (any agent, on top): `INVALID_ACTION_PENALTY` (0.05) per action that could not be applied (at most
  `MAX_INVALID_PENALTY`, 0.5 in total), or `PARSE_ERROR_PENALTY` (0.1) when the answer holds no usable action at
  all (no answer, unknown token, code that failed or printed nothing usable).
- team: `SUCCESS_REWARD` (1.0) on the step that solves the puzzle, which ends the episode; else 0.
So every agent's return is at most `(1 - potential(start)) + alpha`, reached by solving.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np

from pettingllms.core.env import AGGREGATOR, StepOutcome, TextAECEnv, agent_role
from pettingllms.core.errors import ConfigError
from pettingllms.core.parsing import ParseError, extract_answer, extract_python_block
from pettingllms.core.splits import check_split, draw_in_split
from pettingllms.core.text import sanitize, truncate
from pettingllms.envs.program_runs import ProgramRun, new_owner, run_programs
from pettingllms.sandbox import Program

PARSE_ERROR_PENALTY = 0.1
INVALID_ACTION_PENALTY = 0.05
MAX_INVALID_PENALTY = 0.5
SUCCESS_REWARD = 1.0
CODE_SHOWN_CHARS = 4_000
OUTPUT_SHOWN_CHARS = 2_000


class Proposal(NamedTuple):
    """What the tool agent proposed this turn, as shown to the plan agent (immutable)."""

    code: str | None
    output: str | None
    status: str | None
    actions: tuple[Any, ...]
    summary: str


class Puzzle(Protocol):
    """A puzzle that `ToolPlanEnv` plays: its texts, its instances and its rules, as functions of a state.

    A state is the puzzle's own mutable object with `copy()` (an independent copy) and `==`; actions are the
    puzzle's own values (moves, placements). A puzzle holds its configuration only (the episode's states are the
    env's), so it pickles and deep-copies with its env. Members that need more than the state take it as an
    argument: the episode's start state (`start`), the random generator (`rng`).
    """

    task: str
    """The task and the legend of the rendered state, shown in every observation above the state."""

    answer_format: str
    """How to write an answer, shown in every observation and in the error of an answer without one."""

    instance_option: str
    """The `reset(options=...)` key whose text `load` reads ("level", "puzzle", "grid")."""

    def generate(self, rng: np.random.Generator) -> tuple[Any, list[Any] | None]:
        """A new instance drawn with `rng` alone: its start state, and an optimal solution of that state when the
        generator knows one (None: `solve` computes it when asked)."""

    def load(self, text: str) -> Any:
        """The start state that `text` (the value of `instance_option`) describes; `ConfigError` naming the option
        when it is not a valid instance."""

    def key(self, state: Any) -> Hashable:
        """A key of the instance whose start state is `state` (equal for equal instances); its hash decides the
        instance's split (`pettingllms.core.splits`)."""

    def parse(self, text: str, state: Any) -> list[Any]:
        """The actions written in `text` (an answer's inside, or a program's answer) for `state`; `ParseError`,
        whose message the model sees, when it holds none."""

    def apply(self, state: Any, action: Any) -> str | None:
        """Apply one action to `state` in place; return why it could not be applied (`state` unchanged), or
        None."""

    def potential(self, state: Any, start: Any) -> float:
        """How far `state` has come from the episode's `start`: bounded, and 1 iff `state` is solved."""

    def progress(self, state: Any, start: Any) -> float:
        """The share of the task that `state` has done since the episode's `start`, in [0, 1]; 1 iff solved (the
        env's progression score, `ToolPlanEnv.progress`, is 100 times it)."""

    def solved(self, state: Any) -> bool:
        """Whether `state` is solved."""

    def solve(self, state: Any) -> list[Any]:
        """An optimal action list that solves `state` (the oracle); [] when there is none to give."""

    def random_actions(self, state: Any, rng: np.random.Generator) -> list[Any]:
        """Random actions for `state` drawn with `rng` (the random baseline); count and values per puzzle."""

    def render_text(self, state: Any) -> str:
        """`state` as text: what observations show under "Current state", what `render()` draws in "ansi" mode,
        and (plus a final newline) what a tool program reads on standard input."""

    def render_rgb(self, state: Any) -> np.ndarray:
        """`state` as an image (`render_mode="rgb_array"`): height x width x 3, uint8."""

    def status(self, state: Any) -> str:
        """One line on how far `state` is from solved, for observations and renders."""

    def format_actions(self, actions: list[Any]) -> str:
        """`actions` as an answer writes them, without the tags (e.g. "U R"); "" for none."""


class ToolPlanEnv(TextAECEnv):
    """Base of the puzzle environments (see the module docstring): plays the `Puzzle` it is given.

    A puzzle env subclasses it, sets `metadata` (its name) and passes its puzzle, built from its own arguments,
    to `__init__`; `reset(options=...)` understands "split" and the puzzle's `instance_option`.

    Args (besides `TextAECEnv`'s):
        puzzle: the `Puzzle` played.
        sandbox: the `pettingllms.sandbox.Sandbox` that runs the tool agent's code (default: the shared one).
        tool_timeout: wall-clock limit of one program, seconds.
        tool_memory_mb: memory limit of one program.
        max_moves_per_turn: at most this many actions of an answer are carried out in a turn (the plan agent's on
            the real state, a proposal's in its simulation); the rest are not applied and cost nothing, and the
            observation says so. None (default): no cap. A cap shorter than an instance's solution makes the
            episode span turns, so that no single turn can finish it.
    """

    REQUIRES: ClassVar[str] = (
        "bubblewrap for the tool agent's programs (without it a program's step reports the error)"
    )
    metadata: ClassVar[dict[str, Any]] = {
        "name": "tool_plan",
        "render_modes": ["ansi", "human", "rgb_array"],
        "is_parallelizable": False,
    }
    WORKFLOWS = {"mas": ("tool", "plan"), "single": ("plan",)}
    OBSERVATION_SANITIZED = True  # `_observation_text` sanitizes each piece where it enters
    ENSEMBLE_PROPOSER = "tool"
    STOP_STRINGS = ("</answer>",)

    def __init__(
        self,
        puzzle: Puzzle,
        *,
        sandbox=None,
        tool_timeout: float = 5.0,
        tool_memory_mb: int = 1024,
        max_moves_per_turn: int | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if max_moves_per_turn is not None and (
            isinstance(max_moves_per_turn, bool)
            or not isinstance(max_moves_per_turn, int)
            or max_moves_per_turn < 1
        ):
            raise ConfigError(
                f"max_moves_per_turn={max_moves_per_turn!r} must be an integer >= 1 (or None: no cap)"
            )
        self.puzzle = puzzle
        self.RESET_OPTIONS = frozenset({"split", puzzle.instance_option})
        self.max_moves_per_turn = max_moves_per_turn
        self._sandbox = sandbox
        self._owner = new_owner()  # its programs queue for sandbox workers under it (its clones' too)
        self.tool_timeout = float(tool_timeout)
        self.tool_memory_mb = int(tool_memory_mb)
        self.state: Any = None
        self.initial_state: Any = None
        self.split = "train"
        self._start_solution: list[Any] | None = None  # the generator's solution of `initial_state`, if any
        self._proposals: dict[str, Proposal] = {}  # this turn's proposals, by tool agent
        self._last_turn_report: str | None = None
        self._headers: dict[str, str] = {}  # the fixed part of each agent's observation, sanitized
        self._shown_state: tuple[str, str] | None = None  # the real state's render and status, sanitized
        self._answer_format = sanitize(puzzle.answer_format)
        self._state_potential = 0.0  # potential of the real state, kept current

    # ----------------------------------------------------------------- public helpers
    @property
    def proposal(self) -> Proposal | None:
        """The (last) tool agent's proposal of the current turn (None before it acts, and after the plan agent
        or the aggregator acts)."""
        return next(reversed(self._proposals.values()), None)

    @property
    def proposals(self) -> dict[str, Proposal]:
        """Every tool agent's proposal of the current turn, by agent (ensembles have several)."""
        return dict(self._proposals)

    def solution(self, agent: str | None = None) -> str:
        """The oracle's answer for the current state, in the answer format (e.g. `<answer>U R</answer>`); the
        same for every agent."""
        return self.answer_text(self.solution_actions())

    def solution_actions(self) -> list[Any]:
        """An optimal action list that solves the current real state (the oracle): the generator's solution
        while the state is the generated start, else the puzzle's `solve`."""
        if self._start_solution is not None and self.state == self.initial_state:
            return list(self._start_solution)
        return self.puzzle.solve(self.state)

    def answer_text(self, actions: Sequence[Any]) -> str:
        """`actions` in the answer format, e.g. `<answer>U R</answer>`."""
        return f"<answer>{self.puzzle.format_actions(list(actions))}</answer>"

    def solves(self, actions: Sequence[Any]) -> bool:
        """Whether `actions`, executed in order from the current real state (on a copy, at most
        `max_moves_per_turn` of them), solve the puzzle this turn."""
        simulated = self.state.copy()
        self._run(simulated, list(actions))
        return self.puzzle.solved(simulated)

    def progress(self) -> float:
        """The progression score, 0 to 100: 100 times the puzzle's `progress` of the real state."""
        return 100.0 * self.puzzle.progress(self.state, self.initial_state)

    def random_answer(self, agent: str, rng: np.random.Generator) -> str:
        """A random answer in the answer format (the random baseline): `random_actions`, formatted."""
        return self.answer_text(self.random_actions(rng))

    def random_actions(self, rng: np.random.Generator) -> list[Any]:
        """Random actions for the current state (the puzzle's `random_actions`)."""
        return self.puzzle.random_actions(self.state, rng)

    # ----------------------------------------------------------------- TextAECEnv hooks
    def _reset_task(self, options: dict[str, Any]) -> None:
        self.split = check_split(options.get("split", "train"))
        text, self._start_solution = options.get(self.puzzle.instance_option), None
        if text is not None:
            self.initial_state = self.puzzle.load(text)
        else:
            self.initial_state, self._start_solution = draw_in_split(
                self.puzzle.generate,
                lambda instance: self.puzzle.key(instance[0]),
                self.np_random,
                self.split,
            )
        self.state = self.initial_state.copy()
        self._shown_state = None
        self.success = self.puzzle.solved(self.state)
        self._state_potential = self._potential(self.state)
        self._proposals = {}
        self._last_turn_report = None

    def _initial_potentials(self) -> dict[str, float]:
        return dict.fromkeys(self.possible_agents, self._state_potential)

    def _act(self, agent: str, action: str) -> StepOutcome:
        if agent_role(agent) == "tool":
            return self._act_tool(agent, action)
        return self._act_plan(agent, action)

    def _act_plan(self, agent: str, action: str) -> StepOutcome:
        actions, error = self._answer_actions(action)
        problems = self._run(self.state, actions)
        self._shown_state = None
        self.success = self.puzzle.solved(self.state)
        self._state_potential = self._potential(self.state)
        error = error or self._describe_problems(problems)
        ignored = len(actions) - len(actions[: self.max_moves_per_turn])
        self._last_turn_report = sanitize(
            f"Turn {self.turn + 1}: the {'aggregator' if agent == AGGREGATOR else 'plan agent'} answered "
            f"{self.puzzle.format_actions(actions) or '(nothing usable)'}"
            + (f" (only the first {self.max_moves_per_turn} were carried out)" if ignored else "")
            + (f" ({error})." if error else ".")
        )
        self._proposals = {}
        return StepOutcome(
            reward_local=-self._penalty(actions, problems),
            reward_team=SUCCESS_REWARD if self.success else 0.0,
            potentials=dict.fromkeys(self.agents, self._state_potential),  # proposers settle on what ran
            error=error,
            parse_error=not actions,
            terminal=self.success,
            info={"actions": len(actions), "invalid_actions": len(problems)},
        )

    def _act_tool(self, agent: str, action: str) -> StepOutcome:
        code = extract_python_block(action)
        run = None
        if code is None:
            actions, error = self._answer_actions(action)
        else:
            run, actions, error = self._program_actions(code)
        simulated = self.state.copy()
        problems = self._run(simulated, actions)
        error = error or self._describe_problems(problems)
        solved = self.puzzle.solved(simulated)
        outcome = (
            "it would solve the puzzle" if solved else f"it would lead to: {self.puzzle.status(simulated)}"
        )
        summary = (
            f"proposed {self.puzzle.format_actions(actions)}; simulated on a copy, {outcome}"
            + (f" ({error})" if error else "")
            if actions
            else f"no usable proposal ({error})"
        )
        status = None if run is None else run.status
        output = None if run is None else run.output
        self._proposals[agent] = Proposal(code, output, status, tuple(actions), summary)
        return StepOutcome(
            reward_local=-self._penalty(actions, problems),
            potentials={agent: self._potential(simulated)},
            error=error,
            parse_error=not actions,
            info={
                "actions": len(actions),
                "invalid_actions": len(problems),
                "code_status": status,
                "program": "absent" if code is None else ("solves" if solved else "fails"),
            },
        )

    # ----------------------------------------------------------------- mechanics
    def _potential(self, state: Any) -> float:
        return self.puzzle.potential(state, self.initial_state)

    def _parse_text(self, text: str) -> tuple[list[Any], str | None]:
        try:
            return self.puzzle.parse(text, self.state), None
        except ParseError as error:
            return [], str(error)

    def _answer_actions(self, text: str) -> tuple[list[Any], str | None]:
        answer = extract_answer(text)
        if answer is None:
            return [], "no <answer>...</answer> found: " + self.puzzle.answer_format
        return self._parse_text(answer)

    def _program_actions(self, code: str) -> tuple[ProgramRun, list[Any], str | None]:
        """Run the tool agent's code on the current board (its standard input); return the run, the actions it
        answered and the error (`pettingllms.envs.program_runs`; its printed `<answer>` or last line)."""
        stdin = self.puzzle.render_text(self.state) + "\n"
        [run] = run_programs(
            self._sandbox, [Program(code, stdin, self.tool_timeout, self.tool_memory_mb)], self._owner
        )
        answer, error = run.answer(extract_answer)
        actions, parse_error = self._parse_text(answer) if answer is not None else ([], None)
        return run, actions, error or parse_error

    def _run(self, state: Any, actions: list[Any]) -> list[str]:
        """Apply actions in order until solved, at most `max_moves_per_turn` of them (the rest are not applied);
        return the problems of those that could not be applied."""
        problems = []
        for index, action in enumerate(actions[: self.max_moves_per_turn]):
            if self.puzzle.solved(state):
                break
            problem = self.puzzle.apply(state, action)
            if problem is not None:
                problems.append(f"action {index + 1} ({self.puzzle.format_actions([action])}): {problem}")
        return problems

    @staticmethod
    def _penalty(actions: list[Any], problems: list[str]) -> float:
        if not actions:
            return PARSE_ERROR_PENALTY
        return min(MAX_INVALID_PENALTY, INVALID_ACTION_PENALTY * len(problems))

    @staticmethod
    def _describe_problems(problems: list[str]) -> str | None:
        if not problems:
            return None
        shown = "; ".join(problems[:3]) + ("; ..." if len(problems) > 3 else "")
        return f"{len(problems)} action(s) could not be applied: {shown}"

    # ----------------------------------------------------------------- observations and rendering
    def _role(self, agent: str) -> str:
        if self.workflow == "single" or (self.workflow == "ensemble" and self.ensemble_size == 1):
            return "You solve the puzzle alone: your answer is executed on the real puzzle."
        if agent == "plan":
            return "You are the PLAN agent: your answer is executed on the real puzzle."
        if agent == AGGREGATOR:
            return (
                f"You are the AGGREGATOR of {self.ensemble_size - 1} tool agents: you see their proposals (each "
                "simulated on a copy); your answer is executed on the real puzzle."
            )
        if self.workflow == "ensemble":
            return (
                f"You are {agent}, one of {self.ensemble_size - 1} TOOL agents proposing independently. You may "
                "write Python that computes the answer: put it in one ```python block; it runs in a sandbox "
                f"(standard library, numpy and sympy, no network, {self.tool_timeout:g} s), reads the current "
                "state as shown below on standard input, and must print the answer. Your proposal is simulated "
                "on a copy and shown to the aggregator, who decides. You may "
                "also answer directly."
            )
        return (
            "You are the TOOL agent. You may write Python that computes the answer (a search such as BFS or A*): "
            "put it in one ```python block; it runs in a sandbox (standard library, numpy and sympy, no network, "
            f"{self.tool_timeout:g} s), reads the current state as shown below on standard input, and must print "
            "the answer, e.g. print('<answer>...</answer>'). Your "
            "proposal is simulated on a copy and shown to the plan agent, who decides. You may also answer directly."
        )

    def _observation_text(self, agent: str) -> str:
        """The agent's prompt, every piece sanitized where it enters (`OBSERVATION_SANITIZED`): the fixed header
        and the answer format once per agent, the real state's render and status once per state, the last turn's
        report when it is written, a proposal's code, output and summary when shown."""
        header = self._headers.get(agent)
        if header is None:
            cap = self.max_moves_per_turn
            limit = (
                ""
                if cap is None
                else f"\nOnly the first {cap} actions of an answer are carried out each turn."
            )
            header = self._headers[agent] = sanitize(
                f"{self._role(agent)}\n{self.puzzle.task}{limit}\n## Current state"
            )
        if self._shown_state is None:
            self._shown_state = (
                sanitize(self.puzzle.render_text(self.state)),
                sanitize(self.puzzle.status(self.state)),
            )
        parts = [
            f"# {self.metadata['name']} - turn {self.display_turn} of {self.max_turns}",
            header,
            *self._shown_state,
        ]
        if self._last_turn_report:
            parts += ["## Last turn", self._last_turn_report]
        if agent_role(agent) != "tool" and self._proposals:
            if self.workflow == "ensemble":
                parts.append(f"## The tool agents' proposals this turn ({len(self._proposals)})")
                for name, proposal in self._proposals.items():
                    parts += [f"### {name}", *self._describe_proposal(proposal)]
            else:
                parts += ["## The tool agent's proposal this turn", *self._describe_proposal(self.proposal)]
        parts += ["## Your answer", self._answer_format]
        return "\n".join(parts)

    @staticmethod
    def _describe_proposal(proposal: Proposal) -> list[str]:
        """The lines that show `proposal`, each sanitized (the code and its output are the model's)."""
        lines = []
        if proposal.code is not None:
            lines += ["Code:", "```python", truncate(proposal.code.rstrip("\n"), CODE_SHOWN_CHARS), "```"]
            lines += [
                f"Output (status {proposal.status}):",
                truncate(proposal.output or "(none)", OUTPUT_SHOWN_CHARS),
            ]
        lines.append("Proposal: " + proposal.summary)
        return [sanitize(line) for line in lines]

    def _render_text(self) -> str:
        return f"{self.puzzle.render_text(self.state)}\nturn {self.display_turn} of {self.max_turns}. {self.puzzle.status(self.state)}"

    def _render_rgb(self) -> np.ndarray:
        return self.puzzle.render_rgb(self.state)
