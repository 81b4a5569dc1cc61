"""Rollouts for AT-GRPO (SPEC section 2) and its trajectory-grouped baseline. No torch here.

AT-GRPO (`grouping="agent_turn"`), for every instance, turn and agent in workflow order:
1. the prompt is the agent's observation of the one shared current state;
2. K completions come from the agent's policy in one request (`n=K`), all instances batched together;
3. each candidate is stepped on its own copy (`env.clone()`) of that state; its reward is
   `alpha * team + local`, where `local` is its own step's local reward and `team` is the team reward of the
   turn it starts: its own step's plus that of the later agents of the same turn answering greedily (n = 1,
   temperature 0, their own policies) on a further copy (`team_credit="turn"`, the default). An agent whose
   step pays no team reward by itself (the tool agent proposes; the plan agent's moves are what succeed) is
   thereby credited with the outcome its answer leads to, which the paper's `alpha * r_team + r_local` for
   every agent asks for; the last agent of a turn is scored by its own step alone, as before. The greedy
   completion is a probe only: it is never committed and never trained on. `team_credit="step"` (an
   ablation) scores every candidate by its own step's reward `rewards[agent]` alone;
   In a general-sum game an agent's step may pay another agent directly (`StepOutcome.reward_local` as a
   mapping, `pettingllms.core.env`): what the later agents of the turn pay the candidate's agent is added to its
   local reward, as their team rewards are to its team reward;
4. the K samples form one group keyed `(instance, turn, agent)`, with identical prompts;
5. the best candidate (highest reward, lowest index on ties) is committed: its copy *becomes* the real state,
   so the next agent acts on exactly the state that candidate produced. With `commit="random"` a uniformly
   drawn candidate is committed instead (an ablation); `commit="tool=random"` (comma-separated `role=mode`
   pairs, `parse_commit`) draws the commit of the named roles' agents at random and commits the best for the
   others (the ablation "random tool, greedy plan": the plan agent then trains on the proposals a sampled tool
   makes, not on best-of-K ones).

Trajectory baseline (`grouping="trajectory"`): K independent episodes per instance, one completion per step;
every sample of an episode carries the episode's return (the sum of the rewards of its steps: each acting
agent's reward, plus the local rewards a step settles for other agents, such as a tool agent's credit for the
moves its team executed), and the group is the instance.

Multi-turn GRPO (`grouping="trajectory_turn"`): the same K independent episodes, but a sample's reward is its
return-to-go (the rewards of its step and of every later step of its episode) and its group is the agent at that
turn index across the K episodes (`pettingllms.trainers.advantages` says which baseline stays unbiased).
GiGPO's anchor-state grouping (`grouping="anchor_state"`): the tree's sampling and commits, with a candidate's
group being every candidate sampled from the same state as its agent sees it (`pettingllms.rollout.grouping`).

Grouping ablations (`grouping="agent"` or `"turn"`): the same tree sampling and commits as AT-GRPO, but a group
pools one key only: `(instance, agent)` (all turns of an agent: prompts differ across turns) or
`(instance, turn)` (all agents of a turn: prompts and roles differ) — the grouping mistakes AT-GRPO avoids.

Every env receives a completion's `Generation.action` (its text without a thinking block: what the agent
answered); the sample keeps the whole completion (`completion`, and every token id), which is what is trained.

Every committed step can be watched: `observer` receives a `CommittedStep` (the starting state, the scored
candidates, the committed one) after each commit. An episode's `EpisodeResult.turns` is the number of turns in
which its team acted (a first-turn success is 1).

The engine is deterministic for a given seed: instances come from their seeds, candidates from the policies'
own seeded generators, random commits from the engine's generator.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from pettingzoo import AECEnv

from pettingllms.backends.base import Generation, PolicyBackend, SamplingConfig, StatePolicy
from pettingllms.core.env import agent_role
from pettingllms.core.errors import ConfigError
from pettingllms.rollout.grouping import GROUPINGS, TRAJECTORY_GROUPINGS, group_key
from pettingllms.rollout.samples import EpisodeResult, Rollout, Sample


class StepPool(Protocol):
    """Where candidate copies are stepped outside this process (`pettingllms.pools`): `step_all` returns, in job
    order, each `(env, action)` job's env after `env.step(action)`, the same env stepping it here would give."""

    def step_all(self, jobs: Sequence[tuple[AECEnv, str]]) -> list[AECEnv]: ...


COMMITS = ("greedy", "random")
"""How a turn's committed candidate is picked; `parse_commit` also takes per-role pairs such as "tool=random"."""
TEAM_CREDITS = ("turn", "step")
"""How a candidate's team reward is measured: over the rest of its turn, or its own step alone (module docstring)."""


def parse_commit(spec: str) -> dict[str, str]:
    """`commit` as {role: mode}, with the key "*" for roles not named: "greedy" -> {"*": "greedy"}, "random" ->
    {"*": "random"}, "tool=random" -> {"*": "greedy", "tool": "random"} (pairs separated by commas; a role is an
    agent's name without its `_<index>`). Raises `ConfigError` naming the allowed forms."""
    if spec in COMMITS:
        return {"*": spec}
    modes = {"*": "greedy"}
    for pair in spec.split(","):
        role, _, mode = pair.strip().partition("=")
        if not role or mode not in COMMITS or role in modes:
            raise ConfigError(
                f"commit={spec!r} is not supported; allowed values: {list(COMMITS)} or comma-separated "
                "role=mode pairs with each role once and mode in those values (e.g. 'tool=random')"
            )
        modes[role] = mode
    return modes


@dataclasses.dataclass(frozen=True)
class ScoredCandidate:
    """One of an agent's candidates at one step: its generation, stepped on its own copy of the shared state.

    `info` is the agent's `infos` after the candidate's step; `reward == alpha * reward_team + reward_local` is
    what the candidate is trained on, where (with `team_credit="turn"`) `reward_team` is the team reward of its
    turn and `reward_local` its own step's local reward plus what later agents of the turn paid it directly
    (`infos[agent]["reward_paid"]`, general-sum games); with `team_credit="step"` both are its own step's.
    """

    generation: Generation
    info: dict[str, Any]
    reward: float
    reward_team: float
    reward_local: float


@dataclasses.dataclass(frozen=True)
class CommittedStep:
    """What the engine decided at one agent step of one episode, as an `observer` receives it.

    `start` is a copy of the state every candidate started from, `candidates[chosen]` the committed one, and
    `committed` the env the episode goes on from (the engine's own: an observer reads or clones it, never steps
    it). The greedy probes of turn credit are not steps of an episode and are not observed.
    """

    instance: int
    episode: int | None
    agent: str
    turn: int
    prompt: str
    start: AECEnv
    candidates: tuple[ScoredCandidate, ...]
    chosen: int
    committed: AECEnv


Observer = Callable[[CommittedStep], None]


@dataclasses.dataclass(frozen=True)
class _Episode:
    """Where an env's samples belong: its instance (an index into the rollout's seeds) and, for the trajectory
    baseline, its episode (an index into the rollout's envs; None for tree groups)."""

    instance: int
    episode: int | None = None


class RolloutEngine:
    """Collects samples from environments built by `env_fn` (see the module docstring).

    Args:
        env_fn: builds a fresh environment (e.g. `functools.partial(pettingllms.make, "plan-path-v0")`).
        policies: policy name -> backend (a `PolicyBackend`, or a `StatePolicy` that reads the env's state).
        agent_policy: agent name -> policy name (every agent of the workflow must be mapped).
        sampling: policy name -> sampling settings.
        num_generations: K.
        grouping: "agent_turn" (AT-GRPO), "trajectory" (the baseline), or the ablations "agent" / "turn".
        commit: "greedy" (the best candidate), "random", or per-role pairs such as "tool=random" (`parse_commit`).
        team_credit: "turn" (a candidate's team reward includes its turn's greedy completion) or "step".
        seed: seeds the engine's own generator (random commits).
        pool: a `StepPool` (`pettingllms.pools`: worker processes or Ray actors) that steps the K candidate
            copies (None: in-process); results are the same either way.
        observer: called with a `CommittedStep` after every commit, in the order the engine commits (None: no
            observer; with one, each step's starting states are copied for it). It must not change what it reads.
    """

    def __init__(
        self,
        env_fn: Callable[[], AECEnv],
        policies: Mapping[str, PolicyBackend],
        agent_policy: Mapping[str, str],
        sampling: Mapping[str, SamplingConfig],
        *,
        num_generations: int,
        grouping: str = "agent_turn",
        commit: str = "greedy",
        team_credit: str = "turn",
        seed: int = 0,
        pool: StepPool | None = None,
        observer: Observer | None = None,
    ):
        if grouping not in GROUPINGS:
            raise ConfigError(f"grouping={grouping!r} is not supported; allowed values: {list(GROUPINGS)}")
        self.commit_modes = parse_commit(commit)
        if team_credit not in TEAM_CREDITS:
            raise ConfigError(
                f"team_credit={team_credit!r} is not supported; allowed values: {list(TEAM_CREDITS)}"
            )
        if num_generations < 1:
            raise ConfigError(f"num_generations={num_generations} must be >= 1")
        unknown = sorted(set(agent_policy.values()) - set(policies))
        if unknown:
            raise ConfigError(
                f"agent_policy names policies {unknown} that are not in policies {sorted(policies)}"
            )
        self.env_fn = env_fn
        self.policies = policies
        self.agent_policy = dict(agent_policy)
        self.sampling = sampling
        self.num_generations = num_generations
        self.grouping = grouping
        self.team_credit = team_credit
        self.rng = np.random.default_rng(seed)
        self.pool = pool
        self.observer = observer
        self.env_seconds = 0.0
        """Time spent stepping environments (candidates included) since it was last reset to 0."""
        self.probe_completions = 0
        """Greedy completions generated for turn credit (never trained on) since it was last reset to 0."""

    def collect(self, seeds: Sequence[int], options: Mapping[str, Any] | None = None) -> Rollout:
        """Play one instance per seed (reset with `seed` and `options`) and return every sample."""
        if self.grouping in TRAJECTORY_GROUPINGS:
            return self._collect_trajectories(seeds, options)
        envs = [self._new_env(seed, options) for seed in seeds]
        belongs = [_Episode(index) for index in range(len(seeds))]
        return self._play(envs, belongs, self.num_generations, self.grouping, self.team_credit)

    def evaluate(
        self, seeds: Sequence[int], options: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None
    ) -> Rollout:
        """Play one episode per seed with one completion per step (no candidates); samples included.

        `options` are the reset options of every episode, or a sequence of them, one per seed.
        """
        per_episode = [options] * len(seeds) if options is None or isinstance(options, Mapping) else options
        if len(per_episode) != len(seeds):
            raise ConfigError(f"{len(per_episode)} option mappings for {len(seeds)} seeds")
        envs = [self._new_env(seed, opts) for seed, opts in zip(seeds, per_episode, strict=True)]
        return self._play(envs, [_Episode(index) for index in range(len(seeds))], 1, "agent_turn", "step")

    def _collect_trajectories(self, seeds: Sequence[int], options: Mapping[str, Any] | None) -> Rollout:
        """K independent episodes per instance; every sample rewarded, once its episode has ended, with the
        episode's return (`trajectory`) or with its return-to-go: its step's reward and every later step's
        (`trajectory_turn`)."""
        k = self.num_generations
        envs = [self._new_env(seed, options) for seed in seeds for _ in range(k)]
        belongs = [_Episode(index // k, index) for index in range(len(envs))]
        played = self._play(envs, belongs, 1, self.grouping, "step")
        if self.grouping == "trajectory":
            team_returns = [sum(episode.returns.values()) for episode in played.episodes]
            return Rollout(
                [dataclasses.replace(s, reward=team_returns[s.episode]) for s in played.samples],
                played.episodes,
            )
        remaining = [0.0] * len(envs)
        to_go = []
        # samples are in play order (an episode's later steps after its earlier ones): sum them from the end
        for sample in reversed(played.samples):
            remaining[sample.episode] += sample.step_reward
            to_go.append(dataclasses.replace(sample, reward=remaining[sample.episode]))
        return Rollout(to_go[::-1], played.episodes)

    def _new_env(self, seed: int, options: Mapping[str, Any] | None) -> AECEnv:
        env = self.env_fn()
        env.reset(seed=int(seed), options=dict(options or {}))
        return env

    # ----------------------------------------------------------------- the loop
    def _play(
        self, envs: list[AECEnv], belongs: list[_Episode], n: int, grouping: str, team_credit: str
    ) -> Rollout:
        """Step every env to the end in lockstep, `n` candidates per agent step (n = 1: plain sampling), each
        sample keyed by `grouping` and its candidates scored by `team_credit`."""
        samples: list[Sample] = []
        returns = [dict.fromkeys(env.possible_agents, 0.0) for env in envs]
        turns_used = [0] * len(envs)
        active = list(range(len(envs)))
        while active:
            waiting = _waiting_by_agent(envs, active)
            active = [index for indices in waiting.values() for index in indices]
            for agent, indices in waiting.items():
                steps = self._act(envs, belongs, indices, agent, n, team_credit)
                for index, step in zip(indices, steps, strict=True):
                    paid = {agent: float(step.committed.rewards[agent]), **_settled(envs[index], agent)}
                    samples.extend(_samples(step, self.agent_policy[agent], grouping, sum(paid.values())))
                    for receiver, amount in paid.items():  # the env's rewards, not the candidate's score
                        returns[index][receiver] += amount
                    turns_used[index] = step.turn + 1
        episodes = [
            EpisodeResult(
                belongs[index].instance, bool(env.unwrapped.success), turns_used[index], returns[index]
            )
            for index, env in enumerate(envs)
        ]
        return Rollout(samples, episodes)

    def _act(
        self,
        envs: list[AECEnv],
        belongs: Sequence[_Episode],
        indices: Sequence[int],
        agent: str,
        n: int,
        team_credit: str,
    ) -> list[CommittedStep]:
        """`agent` acts in every env of `indices`: `n` candidates each, stepped on copies and scored, one
        committed (it replaces `envs[index]`). Returns each env's `CommittedStep` (also given to the observer)."""
        acting = [envs[index] for index in indices]
        turns = [int(env.unwrapped.turn) for env in acting]  # the turn each step happens in
        starts = [env.clone() for env in acting] if self.observer is not None else acting
        prompts = [str(env.observe(agent)) for env in acting]
        generations = self._generate(acting, agent, prompts, n)
        stepped = self._step_all(acting, generations)
        credits = self._turn_credit(agent, stepped) if team_credit == "turn" else None
        committed = []
        for position, (index, copies) in enumerate(zip(indices, stepped, strict=True)):
            belong = belongs[index]
            credit = None if credits is None else credits[position]
            scored = self._score(agent, generations[position], copies, credit)
            chosen = self._choose(agent, scored)
            envs[index] = copies[chosen]
            step = CommittedStep(
                instance=belong.instance,
                episode=belong.episode,
                agent=agent,
                turn=turns[position],
                prompt=prompts[position],
                start=starts[position],
                candidates=scored,
                chosen=chosen,
                committed=envs[index],
            )
            committed.append(step)
            if self.observer is not None:
                self.observer(step)
        return committed

    def _step_all(
        self, envs: Sequence[AECEnv], generations: Sequence[Sequence[Generation]]
    ) -> list[list[AECEnv]]:
        """Step one copy of `envs[i]` per candidate of `generations[i]`, in the pool if there is one.

        In-process, a single candidate (n = 1, plain sampling) steps the env itself; the pool returns stepped
        copies, which are the same envs, so results do not depend on where the steps ran.
        """
        start = time.perf_counter()
        if self.pool is None:
            stepped = []
            for env, candidates in zip(envs, generations, strict=True):
                copies = [env.clone() if len(candidates) > 1 else env for _ in candidates]
                for copy, generation in zip(copies, candidates, strict=True):
                    copy.step(generation.action)
                stepped.append(copies)
        else:
            jobs = [
                (env, generation.action)
                for env, candidates in zip(envs, generations, strict=True)
                for generation in candidates
            ]
            flat = iter(self.pool.step_all(jobs))
            stepped = [[next(flat) for _ in candidates] for candidates in generations]
        self.env_seconds += time.perf_counter() - start
        return stepped

    def _generate(
        self, envs: Sequence[AECEnv], agent: str, prompts: Sequence[str], n: int, *, greedy: bool = False
    ) -> list[list[Generation]]:
        """`n` generations per env for `agent` from its policy (`greedy`: temperature 0)."""
        policy = self.agent_policy[agent]
        backend = self.policies[policy]
        if isinstance(backend, StatePolicy):
            return backend.generate_from_state(envs, agent, n)
        sampling = self.sampling[policy]
        return backend.generate(
            prompts, n, dataclasses.replace(sampling, temperature=0.0) if greedy else sampling
        )

    def _turn_credit(self, agent: str, stepped: Sequence[Sequence[AECEnv]]) -> list[list[_TurnCredit]]:
        """For every candidate copy of `stepped`, what the rest of its turn adds: the team rewards and the direct
        payments to `agent` of the later agents of the turn answering greedily, in lockstep, on a probe copy (the
        copies stay untouched)."""
        credits = [
            [_TurnCredit(float(copy.infos[agent]["reward_team"])) for copy in copies] for copies in stepped
        ]
        probes = [
            (row, column, copy.clone(), copy.infos[agent]["step_turn"])
            for row, copies in enumerate(stepped)
            for column, copy in enumerate(copies)
        ]
        while probes:
            waiting: dict[str, list[tuple[int, int, AECEnv, int]]] = {}
            for probe in probes:
                env, turn = probe[2], probe[3]
                next_agent = _next_to_act(env)
                if next_agent is not None and env.unwrapped.turn == turn:  # a later agent of the same turn
                    waiting.setdefault(next_agent, []).append(probe)
            probes = []
            for next_agent, group in waiting.items():
                envs = [env for _, _, env, _ in group]
                prompts = [str(env.observe(next_agent)) for env in envs]
                generations = self._generate(envs, next_agent, prompts, 1, greedy=True)
                self.probe_completions += len(envs)
                for (row, column, _, turn), (after,) in zip(
                    group, self._step_all(envs, generations), strict=True
                ):
                    credits[row][column] = credits[row][column].plus(
                        float(after.infos[next_agent]["reward_team"]),
                        float(after.infos.get(agent, {}).get("reward_paid", 0.0)),
                    )
                    probes.append((row, column, after, turn))
        return credits

    def _score(
        self,
        agent: str,
        generations: Sequence[Generation],
        copies: Sequence[AECEnv],
        credits: Sequence[_TurnCredit] | None,
    ) -> tuple[ScoredCandidate, ...]:
        """Every candidate scored: by its own step's reward (`credits` None) or by its turn (`credits`)."""
        scored = []
        for position, (generation, copy) in enumerate(zip(generations, copies, strict=True)):
            info = dict(copy.infos[agent])
            team, local = float(info["reward_team"]), float(info["reward_local"])
            if credits is None:
                scored.append(ScoredCandidate(generation, info, float(copy.rewards[agent]), team, local))
                continue
            team, local = credits[position].team, local + credits[position].paid
            scored.append(ScoredCandidate(generation, info, copy.unwrapped.alpha * team + local, team, local))
        return tuple(scored)

    def _choose(self, agent: str, scored: Sequence[ScoredCandidate]) -> int:
        """The committed candidate's index: the best (the first maximum, a deterministic tie-break) or, where the
        agent's role commits at random, one drawn uniformly from the engine's generator."""
        if self.commit_modes.get(agent_role(agent), self.commit_modes["*"]) == "greedy":
            return int(np.argmax([candidate.reward for candidate in scored]))
        return int(self.rng.integers(len(scored)))


@dataclasses.dataclass(frozen=True)
class _TurnCredit:
    """What a candidate's turn earned beyond its own local reward: team rewards, and direct payments to it."""

    team: float
    paid: float = 0.0

    def plus(self, team: float, paid: float) -> _TurnCredit:
        return _TurnCredit(self.team + team, self.paid + paid)


def _next_to_act(env: AECEnv) -> str | None:
    """Step past the agents that are done (PettingZoo's `step(None)`); the agent to act next, or None when the
    episode is over."""
    while env.agents and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        env.step(None)
    return env.agent_selection if env.agents else None


def _waiting_by_agent(envs: Sequence[AECEnv], indices: Sequence[int]) -> dict[str, list[int]]:
    """The envs of `indices` whose episode goes on, grouped by the agent to act next (in first-seen order)."""
    waiting: dict[str, list[int]] = {}
    for index in indices:
        agent = _next_to_act(envs[index])
        if agent is not None:
            waiting.setdefault(agent, []).append(index)
    return waiting


def _samples(step: CommittedStep, policy: str, grouping: str, step_reward: float) -> list[Sample]:
    """One `Sample` per candidate of `step`, keyed by `grouping`; the committed one carries `step_reward`."""
    group_id = group_key(grouping, step.instance, step.turn, step.agent, step.prompt)
    return [
        Sample(
            group_id=group_id,
            instance=step.instance,
            turn=step.turn,
            agent=step.agent,
            policy=policy,
            prompt=step.prompt,
            completion=candidate.generation.text,
            reward=candidate.reward,
            reward_team=candidate.reward_team,
            reward_local=candidate.reward_local,
            generation=candidate.generation,
            committed=position == step.chosen,
            error=candidate.info.get("error"),
            parse_error=bool(candidate.info.get("parse_error", False)),
            program=candidate.info.get("program"),
            episode=step.episode,
            step_reward=step_reward if position == step.chosen else None,
        )
        for position, candidate in enumerate(step.candidates)
    ]


def _settled(env: AECEnv, agent: str) -> dict[str, float]:
    """The local rewards that `agent`'s step (just taken on `env`) paid to the other agents: a proposer's credit
    settled on what its team executed (`pettingllms.core.env`), or a direct payment in a general-sum game."""
    return {
        other: float(info["reward_local"])
        for other, info in env.infos.items()
        if other != agent and info.get("reward_local")
    }
