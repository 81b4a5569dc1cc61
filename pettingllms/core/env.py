"""`TextAECEnv`: the base class of every environment in this package.

Contract shared by all environments (subclasses implement the task; this class implements the protocol):

- Agents act in the order of their workflow (`WORKFLOWS[workflow]`); one *turn* is one action of every agent.
  After the last agent of a turn acts, the turn counter advances; when it reaches `max_turns` without the task
  being finished, every agent is truncated. When the task ends (`StepOutcome.terminal`), every agent is
  terminated at once.
- Observations are `TextObservation`s (a `str` subclass) of at most `OBSERVATION_MAX_CHARS` characters, all in
  `printable_charset()`; actions are any `str` (the raw model completion). Text that cannot be used is never an
  exception: it earns a penalty and `infos[agent]["error"]` explains why.
- After every step, for *every* live agent `a`:
  `rewards[a] == alpha * infos[a]["reward_team"] + infos[a]["reward_local"]`, where the team reward is shared by
  the team and the local reward is `a`'s own: the change of `a`'s potential at this step (below), plus the
  step's direct reward to `a` (`StepOutcome.reward_local`: by default the acting agent's, the penalties of
  unusable answers; a mapping pays any agents, as a general-sum game needs, below).
  `infos[a]` always holds `reward_team`, `reward_local`, `turn` (the turn number the observations now show,
  1-based as in their "turn 2 of 4": `display_turn`), `step_turn` (the 0-based index of the turn in which the
  step happened; 0 after `reset`), `success` (whether the task is solved so far); the acting agent's also holds `parse_error` (nothing in the
  action was usable) and, when its action could not be used fully or partly, `error` saying why; an agent that
  another agent's step paid directly also holds `reward_paid`, that payment (already inside its `reward_local`).
- General-sum games: PettingZoo lets any agent be rewarded at any step, and so does `StepOutcome`: with
  `reward_local={"buyer": 0.3, "seller": 0.7}` the buyer's accept pays both parties their shares of the deal.
  The team reward stays one number paid to every agent (the cooperative part: in `bargain-v0`, a deal both gain
  from); what differs between agents is local. Such a game states its own returns contract in its docstring
  (`bargain-v0`: the solver's profile is one no scripted deviation beats, checked by `check_returns`).
- Returns mean success (the reward contract). Every agent has a *potential*, a bounded level that the env
  declares (`_initial_potentials` at reset, `StepOutcome.potentials` after a step: the acting agent's, and a
  proposer's when its team executes); an agent is paid its potential's *change*, so its local rewards over an
  episode sum to its final potential minus its initial one, whatever happened in between. Team rewards are paid
  on change of success likewise (they sum to the final success), and the episode ends when the task is solved.
  So an agent's return is bounded, and is maximised by the team solving the instance: stalling, repeating an
  answer, oscillating, sabotaging a teammate or guessing earn no more than honest solver play (penalties only
  lower a return). `pettingllms.testing.check_returns` plays a battery of such strategies against the oracle.
- A completion cut by its length budget is an action like any other: the env sees what the model wrote (after
  any thinking block, `Generation.action`) and scores what it holds; each env's docstring says what a cut answer
  earns (mostly the parse-error penalty: the answer never closed).
- Randomness comes only from `self.np_random`, seeded by `reset(seed=...)` (a new seed draws a new generator;
  `reset()` without a seed continues the current one).
- `clone()` (or `copy.deepcopy`) returns an exact, independent copy; stepping the copy never changes the
  original. Shared services (the code sandbox) are shared, not copied.
- Ensembles (`workflow="ensemble", num_agents=N`, envs that set `ENSEMBLE_PROPOSER`): N - 1 proposers named
  `<proposer>_0 .. <proposer>_{N-2}` (PettingZoo's name_index convention) act first in each turn, each seeing
  the same state and none of the others' proposals of this turn; then `aggregator_0` sees every proposal and
  gives the team's answer. With N = 1 the aggregator plays alone. `num_agents` is the team size.
- `reward="outcome"` keeps only the team's reward (the final success signal): every local reward is 0.0 (parse
  penalties included; `infos[a]["error"]` still explains unusable answers). `reward="shaped"` (default) keeps
  the env's local rewards.
"""

from __future__ import annotations

import copy
import hashlib
import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

import numpy as np
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from pettingllms.core.errors import ConfigError
from pettingllms.core.seeding import check_reset_seed
from pettingllms.core.text import (
    OBSERVATION_MAX_CHARS,
    AnyText,
    PrintableText,
    TextObservation,
    sanitize,
    truncate,
)

REWARD_MODES = ("shaped", "outcome")
AGGREGATOR = "aggregator_0"
"""The aggregator's name in the "ensemble" workflow."""
DEFAULT_ENSEMBLE_SIZE = 3
MAX_ENSEMBLE = 16


def ensemble_agents(proposer: str, num_agents: int) -> list[str]:
    """The agents of an ensemble of `num_agents`: `num_agents - 1` proposers, then the aggregator.

    >>> ensemble_agents("reasoner", 3)
    ['reasoner_0', 'reasoner_1', 'aggregator_0']
    """
    return [f"{proposer}_{index}" for index in range(num_agents - 1)] + [AGGREGATOR]


def agent_role(agent: str) -> str:
    """An agent's role: its name without the `_<index>` suffix (`tool_2` -> `tool`, `plan` -> `plan`)."""
    base, _, index = agent.rpartition("_")
    return base if base and index.isdigit() else agent


_NOTHING: Mapping[str, Any] = MappingProxyType({})


class StepOutcome(NamedTuple):
    """What one agent's action did (immutable; a named tuple, which one step of every env builds cheaply).

    Attributes:
        reward_local: the step's direct reward, paid as is on top of the potentials' change: a number is the
            acting agent's (the penalty of an unusable answer: the puzzles pay nothing positive here, progress
            is a potential, so that it telescopes); a mapping pays each agent it names (general-sum games: an
            accept that pays both parties), the acting agent only what it names.
        reward_team: the team's reward for this step (given to every agent).
        potentials: the new potential of each agent named (the acting agent's, or a proposer's whose proposal
            the team just acted on); each is paid the change from its previous potential as local reward.
            Agents not named keep theirs.
        error: why the action could not be used (fully or partly), or None.
        parse_error: nothing in the action could be used at all (a malformed answer), not just part of it.
        terminal: the task has ended (solved, or finished for good).
        info: extra entries for the acting agent's `infos` (documented by each env).
    """

    reward_local: float | Mapping[str, float] = 0.0
    reward_team: float = 0.0
    potentials: Mapping[str, float] = _NOTHING
    error: str | None = None
    parse_error: bool = False
    terminal: bool = False
    info: Mapping[str, Any] = _NOTHING


class TextAECEnv(AECEnv):
    """Base class: turn-based text environment with team and local rewards (see the module docstring).

    Subclasses set `WORKFLOWS`, `DEFAULT_MAX_TURNS`, `RESET_OPTIONS` and `metadata["name"]`, and implement
    `_reset_task`, `_act`, `_observation_text` and `_render_text` (and `_render_rgb` for grid games; and
    `_initial_potentials` when an agent's potential does not start at 0).

    Args:
        alpha: weight of the team reward in `rewards[agent] = alpha * reward_team + reward_local`.
        workflow: which team plays, a key of `WORKFLOWS` (`"mas"`: the full team; `"single"`: one agent alone).
        max_turns: number of turns before truncation (default: `DEFAULT_MAX_TURNS`).
        max_cycles: PettingZoo's name for `max_turns` (a cycle is one turn: every agent acts once); give one.
        render_mode: one of `metadata["render_modes"]`, or None.
        num_agents: team size of the "ensemble" workflow (1 to `MAX_ENSEMBLE`, default 3); only with it.
        reward: "shaped" (local and team rewards) or "outcome" (team reward only; local rewards are 0).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "text_aec",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
    }
    WORKFLOWS: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    STOP_STRINGS: ClassVar[tuple[str, ...]] = ()
    """Strings that end an agent's answer: generation may stop there (nothing after them is read)."""
    ENSEMBLE_PROPOSER: ClassVar[str | None] = None
    """The proposers' name in the "ensemble" workflow (None: the env has no ensemble workflow)."""
    DEFAULT_MAX_TURNS: ClassVar[int] = 4
    OBSERVATION_SANITIZED: ClassVar[bool] = False
    """True when every piece of `_observation_text` is already inside the printable charset (each untrusted piece,
    such as a model's answer or a program's output, passed through `pettingllms.core.text.sanitize` where it
    enters): `observe` then skips the scan of the whole text, which gives the same text."""
    RESET_OPTIONS: ClassVar[frozenset[str]] = frozenset()
    """Keys that `reset(options=...)` understands; others draw a warning."""
    REQUIRES: ClassVar[str] = ""
    """What the env needs beyond the core install, in words (`pettingllms list` shows it)."""

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        workflow: str = "mas",
        max_turns: int | None = None,
        render_mode: str | None = None,
        num_agents: int | None = None,
        reward: str = "shaped",
        max_cycles: int | None = None,
    ):
        super().__init__()
        max_turns = _resolve_max_turns(max_turns, max_cycles, self.DEFAULT_MAX_TURNS)
        num_agents = self._check_team(workflow, num_agents)
        if reward not in REWARD_MODES:
            raise ConfigError(f"reward={reward!r} is not supported; allowed values: {list(REWARD_MODES)}")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not np.isfinite(alpha):
            raise ConfigError(f"alpha={alpha!r} must be a finite number (the weight of the team reward)")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(
                f"render_mode={render_mode!r} is not supported; allowed values: {self.metadata['render_modes']} or None"
            )
        self.metadata = copy.deepcopy(type(self).metadata)  # wrappers that edit it edit this env's only
        self.alpha = float(alpha)
        self.workflow = workflow
        self.max_turns = max_turns
        self.render_mode = render_mode
        self.reward_mode = reward
        self.ensemble_size = num_agents
        self.possible_agents = (
            ensemble_agents(self.ENSEMBLE_PROPOSER, num_agents)
            if workflow == "ensemble"
            else list(self.WORKFLOWS[workflow])
        )
        self._observation_spaces = {a: PrintableText(OBSERVATION_MAX_CHARS) for a in self.possible_agents}
        self._action_spaces = {a: AnyText() for a in self.possible_agents}
        self.np_random, self.np_random_seed = seeding.np_random(None)
        self.turn = 0
        self.success = False
        self._potentials = dict.fromkeys(self.possible_agents, 0.0)
        self._observations: dict[str, TextObservation] = {}

    def _check_team(self, workflow: str, num_agents: int | None) -> int | None:
        """`num_agents` checked against `workflow` (the ensemble's default size filled in); `ConfigError` else."""
        workflows = sorted(self.WORKFLOWS) + (["ensemble"] if self.ENSEMBLE_PROPOSER else [])
        if workflow not in workflows:
            raise ConfigError(f"workflow={workflow!r} is not supported; allowed values: {workflows}")
        if workflow != "ensemble":
            if num_agents is not None:
                raise ConfigError(f"num_agents={num_agents!r} needs workflow='ensemble' (got {workflow!r})")
            return None
        num_agents = DEFAULT_ENSEMBLE_SIZE if num_agents is None else num_agents
        if (
            isinstance(num_agents, bool)
            or not isinstance(num_agents, int)
            or not 1 <= num_agents <= MAX_ENSEMBLE
        ):
            raise ConfigError(f"num_agents={num_agents!r} must be an integer in [1, {MAX_ENSEMBLE}]")
        return num_agents

    # ----------------------------------------------------------------- subclass hooks
    def _reset_task(self, options: dict[str, Any]) -> None:
        """Start a new task instance, drawing randomness from `self.np_random`; use and remove known options."""
        raise NotImplementedError

    def _act(self, agent: str, action: str) -> StepOutcome:
        """Apply `agent`'s text action to the task; never raise on any string."""
        raise NotImplementedError

    def _observation_text(self, agent: str) -> str:
        """The full prompt of `agent` for the current state."""
        raise NotImplementedError

    def _initial_potentials(self) -> Mapping[str, float]:
        """Each agent's potential for the task `_reset_task` just started (agents not named start at 0.0)."""
        return {}

    def _render_text(self) -> str:
        """A human-readable picture of the current state."""
        raise NotImplementedError

    def _render_rgb(self) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} has no rgb_array rendering")

    # ----------------------------------------------------------------- the oracle API (baselines, play, demos)
    def solution(self, agent: str | None = None) -> str:
        """An action text that is right for `agent` (default: the agent to act) in the current state: the
        solver's answer or the reference solution. The `oracle` policy and `pettingllms play --demo` use it."""
        raise NotImplementedError(f"{type(self).__name__} declares no solution(); the oracle cannot play it")

    def random_answer(self, agent: str, rng: np.random.Generator) -> str:
        """A uniformly random action text in `agent`'s answer format, drawn from `rng` (the `random` policy)."""
        raise NotImplementedError(
            f"{type(self).__name__} declares no random_answer(); the random policy cannot play it"
        )

    def progress(self) -> float:
        """The episode's progression score so far, 0 to 100: how much of the task is done by the env's own measure
        (each env's docstring, "Progress"), 100 once solved. Here: 100 when solved, else 0; envs with a finer
        measure override it."""
        return 100.0 if self.success else 0.0

    def instance_key(self) -> str:
        """A content key of the instance just reset (call it before any step): two resets that start the same
        instance give the same key, two different instances different keys (evaluation suites hold each instance
        once: `pettingllms.eval.suites`). Here: the sha256 of the state's rendering at reset; an env whose
        rendering leaves out part of its instance overrides it."""
        return hashlib.sha256(self._render_text().encode()).hexdigest()

    def potential(self, agent: str) -> float:
        """`agent`'s potential now: what its local rewards since reset sum to, penalties aside (module docstring)."""
        return self._potentials[agent]

    # ----------------------------------------------------------------- PettingZoo API
    @property
    def display_turn(self) -> int:
        """The turn number shown in observations and renders: 1-based, and `max_turns` once the turns are spent
        (a truncated episode reads "turn 4 of 4", not "turn 5 of 4")."""
        return min(self.turn + 1, self.max_turns)

    def observation_space(self, agent: str) -> PrintableText:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> AnyText:
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        seed = check_reset_seed(seed)
        if seed is not None:
            self.np_random, self.np_random_seed = seeding.np_random(seed)
        options = dict(options or {})
        unknown = sorted(set(options) - self.RESET_OPTIONS)
        if unknown:
            warnings.warn(
                f"{type(self).__name__}.reset ignores unknown option(s) {unknown}; "
                f"understood: {sorted(self.RESET_OPTIONS)}",
                stacklevel=2,
            )
        self.turn = 0
        self.success = False
        self._reset_task(options)
        self._potentials = dict.fromkeys(self.possible_agents, 0.0)
        self._potentials.update(self._initial_potentials())
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: self._initial_info() for a in self.agents}
        self.agent_selection = self.agents[0]
        self._observations = {}

    def step(self, action: str | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        outcome = self._act(agent, action)
        self._observations = {}
        acting_turn = self.turn
        changes = self._settle_potentials(outcome.potentials)
        direct = self._direct_rewards(agent, outcome.reward_local)
        for a, amount in direct.items():
            changes[a] = changes.get(a, 0.0) + amount
        agents = self.agents
        index = agents.index(agent)
        if outcome.terminal:
            self.terminations = dict.fromkeys(agents, True)
        elif index == len(agents) - 1:
            self.turn += 1
            if self.turn >= self.max_turns:
                self.truncations = dict.fromkeys(agents, True)
        shown_turn = self.display_turn  # the turn the observations now show, advanced or not
        shaped = self.reward_mode == "shaped"
        team = float(outcome.reward_team)
        team_share, success, rewards, infos = self.alpha * team, self.success, self.rewards, self.infos
        for a in agents:
            local = changes.get(a, 0.0) if shaped else 0.0
            rewards[a] = team_share + local
            # `_initial_info`'s entries, built inline: this loop runs for every agent at every step
            infos[a] = {
                "reward_team": team,
                "reward_local": local,
                "turn": shown_turn,
                "step_turn": acting_turn,
                "success": success,
            }
            if a != agent and a in direct and shaped:
                infos[a]["reward_paid"] = direct[a]
        info = self.infos[agent]
        info.update(outcome.info)
        info["parse_error"] = bool(outcome.parse_error)
        if outcome.error is not None:
            info["error"] = outcome.error
        self.agent_selection = agents[(index + 1) % len(agents)]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> TextObservation:
        observation = self._observations.get(agent)
        if observation is None:
            text = self._observation_text(agent)
            if not self.OBSERVATION_SANITIZED:
                text = sanitize(text)
            text = truncate(text, OBSERVATION_MAX_CHARS)
            observation = self._observations[agent] = TextObservation(text)
        return observation

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            warnings.warn("render() called without a render_mode; pass render_mode= to make()", stacklevel=2)
            return None
        if self.render_mode == "rgb_array":
            return self._render_rgb()
        text = self._render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release: shared services (the sandbox) outlive environments."""

    def clone(self) -> TextAECEnv:
        """Return an exact, independent copy (same state, same random generator state)."""
        return copy.deepcopy(self)

    # ----------------------------------------------------------------- helpers
    def _settle_potentials(self, potentials: Mapping[str, float]) -> dict[str, float]:
        """Record the new `potentials`; return each named agent's change (its local reward of this step)."""
        changes = {}
        for a, level in potentials.items():
            changes[a] = float(level) - self._potentials[a]
            self._potentials[a] = float(level)
        return changes

    def _direct_rewards(self, agent: str, reward_local: float | Mapping[str, float]) -> dict[str, float]:
        """`StepOutcome.reward_local` as agent -> amount (a number is `agent`'s); naming an agent that is not in
        the episode is a bug of the env (`ValueError`)."""
        if not isinstance(reward_local, Mapping):  # a number: the acting agent's
            return {agent: float(reward_local)}
        unknown = sorted(set(reward_local) - set(self.agents))
        if unknown:
            raise ValueError(
                f"{type(self).__name__}: StepOutcome.reward_local pays {unknown}, not in {self.agents}"
            )
        return {a: float(amount) for a, amount in reward_local.items()}

    def _initial_info(self) -> dict[str, Any]:
        """An agent's info at reset (`step` writes the same entries with the step's values)."""
        return {
            "reward_team": 0.0,
            "reward_local": 0.0,
            "turn": self.display_turn,
            "step_turn": 0,
            "success": self.success,
        }


def _resolve_max_turns(max_turns: int | None, max_cycles: int | None, default: int) -> int:
    """The episode's turn limit from `max_turns` or its PettingZoo name `max_cycles` (default: `default`)."""
    if max_cycles is not None:
        if max_turns is not None and max_turns != max_cycles:
            raise ConfigError(
                f"max_cycles={max_cycles!r} and max_turns={max_turns!r}: max_cycles is PettingZoo's name for "
                "max_turns; give one"
            )
        max_turns = max_cycles
    max_turns = default if max_turns is None else max_turns
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise ConfigError(f"max_turns={max_turns!r} must be an integer >= 1")
    return max_turns
