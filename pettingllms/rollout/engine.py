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

Grouping ablations (`grouping="agent"` or `"turn"`): the same tree sampling and commits as AT-GRPO, but a group
pools one key only: `(instance, agent)` (all turns of an agent: prompts differ across turns) or
`(instance, turn)` (all agents of a turn: prompts and roles differ) — the grouping mistakes AT-GRPO avoids.

Every env receives a completion's `Generation.action` (its text without a thinking block: what the agent
answered); the sample keeps the whole completion (`completion`, and every token id), which is what is trained.

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
from pettingllms.rollout.grouping import GROUPINGS, assign_groups
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
class _Candidate:
    generation: Generation
    info: dict[str, Any]
    reward: float
    reward_team: float


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
        self.env_seconds = 0.0
        """Time spent stepping environments (candidates included) since it was last reset to 0."""
        self.probe_completions = 0
        """Greedy completions generated for turn credit (never trained on) since it was last reset to 0."""

    def collect(self, seeds: Sequence[int], options: Mapping[str, Any] | None = None) -> Rollout:
        """Play one instance per seed (reset with `seed` and `options`) and return every sample."""
        if self.grouping == "trajectory":
            return self._collect_trajectories(seeds, options)
        rollout = self._collect_tree(seeds, options)
        assign_groups(rollout.samples, self.grouping)
        return rollout

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
        played = self._play(envs, list(range(len(seeds))), n=1, trajectory=False, credit_turn=False)
        assign_groups(played.samples, "agent_turn")
        return played

    # ----------------------------------------------------------------- AT-GRPO
    def _collect_tree(self, seeds: Sequence[int], options: Mapping[str, Any] | None) -> Rollout:
        envs = [self._new_env(seed, options) for seed in seeds]
        return self._play(
            envs,
            list(range(len(seeds))),
            n=self.num_generations,
            trajectory=False,
            credit_turn=self.team_credit == "turn",
        )

    # ----------------------------------------------------------------- trajectory baseline
    def _collect_trajectories(self, seeds: Sequence[int], options: Mapping[str, Any] | None) -> Rollout:
        k = self.num_generations
        envs = [self._new_env(seed, options) for seed in seeds for _ in range(k)]
        instances = [index for index in range(len(seeds)) for _ in range(k)]
        played = self._play(envs, instances, n=1, trajectory=True, credit_turn=False)
        for sample in played.samples:
            sample.reward = sum(played.episodes[sample.episode].returns.values())
        assign_groups(played.samples, "trajectory")
        return played

    # ----------------------------------------------------------------- the loop
    def _new_env(self, seed: int, options: Mapping[str, Any] | None) -> AECEnv:
        env = self.env_fn()
        env.reset(seed=int(seed), options=dict(options or {}))
        return env

    def _play(
        self, envs: list[AECEnv], instances: list[int], *, n: int, trajectory: bool, credit_turn: bool
    ) -> Rollout:
        """Step every env to the end in lockstep; `n` candidates per step (n = 1: plain sampling).

        `credit_turn`: score each candidate with the team reward of its turn completed greedily (`_turn_team`).
        """
        samples: list[Sample] = []
        returns = [dict.fromkeys(env.possible_agents, 0.0) for env in envs]
        active = list(range(len(envs)))
        while active:
            waiting: dict[str, list[int]] = {}
            for index in active:
                env = envs[index]
                while env.agents and (
                    env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
                ):
                    env.step(None)
                if env.agents:
                    waiting.setdefault(env.agent_selection, []).append(index)
            active = [index for agents in waiting.values() for index in agents]
            for agent, indices in waiting.items():
                for index, chosen_reward, rows in self._act(envs, indices, agent, n, credit_turn):
                    for sample in rows:
                        sample.instance = instances[index]
                        sample.episode = index if trajectory else None
                    samples.extend(rows)
                    returns[index][agent] += chosen_reward
                    for other, settled in _settled(envs[index], agent).items():
                        returns[index][other] += settled
        episodes = [
            EpisodeResult(
                instances[index],
                bool(env.unwrapped.success),
                env.unwrapped.turn,
                returns[index],
            )
            for index, env in enumerate(envs)
        ]
        return Rollout(samples, episodes)

    def _act(
        self, envs: list[AECEnv], indices: Sequence[int], agent: str, n: int, credit_turn: bool
    ) -> list[tuple[int, float, list[Sample]]]:
        """`agent` acts in every env of `indices`: `n` candidates each, stepped on copies and scored, one
        committed (it replaces `envs[index]`). Returns, per env, its index, the committed candidate's reward and
        one sample per candidate (their `instance`, `episode` and `group_id` are the caller's to set)."""
        policy = self.agent_policy[agent]
        prompts = [str(envs[index].observe(agent)) for index in indices]
        generations = self._generate([envs[index] for index in indices], agent, prompts, n)
        stepped = self._step_all([envs[index] for index in indices], generations)
        teams = self._turn_team(agent, stepped) if credit_turn else None
        acted = []
        for position, (index, prompt, candidates, copies) in enumerate(
            zip(indices, prompts, generations, stepped, strict=True)
        ):
            team = None if teams is None else teams[position]
            envs[index], rows, chosen = self._commit(agent, candidates, copies, team)
            turn = rows[chosen].info["turn"]
            samples = [
                Sample(
                    group_id="",
                    instance=index,
                    turn=turn,
                    agent=agent,
                    policy=policy,
                    prompt=prompt,
                    completion=row.generation.text,
                    reward=row.reward,
                    reward_team=row.reward_team,
                    reward_local=row.info["reward_local"],
                    generation=row.generation,
                    committed=candidate == chosen,
                    error=row.info.get("error"),
                    parse_error=bool(row.info.get("parse_error", False)),
                )
                for candidate, row in enumerate(rows)
            ]
            acted.append((index, rows[chosen].reward, samples))
        return acted

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
                for env, candidates in zip(envs, generations)
                for generation in candidates
            ]
            flat = iter(self.pool.step_all(jobs))
            stepped = [[next(flat) for _ in candidates] for candidates in generations]
        self.env_seconds += time.perf_counter() - start
        return stepped

    def _generate(self, envs: Sequence[AECEnv], agent: str, prompts: Sequence[str], n: int, *, greedy=False):
        """`n` completions per env for `agent` from its policy (`greedy`: temperature 0)."""
        policy = self.agent_policy[agent]
        backend = self.policies[policy]
        if isinstance(backend, StatePolicy):
            return backend.generate_from_state(envs, agent, n)
        sampling = self.sampling[policy]
        return backend.generate(
            prompts, n, dataclasses.replace(sampling, temperature=0.0) if greedy else sampling
        )

    def _turn_team(self, agent: str, stepped: Sequence[Sequence[AECEnv]]) -> list[list[float]]:
        """For every candidate copy of `stepped`, the team reward of its turn: its own step's plus what the later
        agents of the turn earn answering greedily, in lockstep, on a probe copy (the copies stay untouched)."""
        teams = [[float(copy.infos[agent]["reward_team"]) for copy in copies] for copies in stepped]
        probes = [
            (row, column, copy.clone(), copy.infos[agent]["turn"])
            for row, copies in enumerate(stepped)
            for column, copy in enumerate(copies)
        ]
        while probes:
            waiting: dict[str, list[tuple[int, int, AECEnv, int]]] = {}
            for probe in probes:
                env, turn = probe[2], probe[3]
                while env.agents and (
                    env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
                ):
                    env.step(None)
                if env.agents and env.unwrapped.turn == turn:  # a later agent of the same turn acts next
                    waiting.setdefault(env.agent_selection, []).append(probe)
            probes = []
            for next_agent, group in waiting.items():
                envs = [env for _, _, env, _ in group]
                prompts = [str(env.observe(next_agent)) for env in envs]
                generations = self._generate(envs, next_agent, prompts, 1, greedy=True)
                self.probe_completions += len(envs)
                for (row, column, _, turn), (after,) in zip(
                    group, self._step_all(envs, generations), strict=True
                ):
                    teams[row][column] += float(after.infos[next_agent]["reward_team"])
                    probes.append((row, column, after, turn))
        return teams

    def _commit(
        self,
        agent: str,
        candidates: Sequence[Generation],
        copies: Sequence[AECEnv],
        team: Sequence[float] | None = None,
    ) -> tuple[AECEnv, list[_Candidate], int]:
        """Every candidate's row, and the committed copy: the best (first maximum) or, where the agent's role
        commits at random, a uniformly drawn one. `team`: each candidate's team reward of its turn (None: its own
        step's)."""
        rows = []
        for position, (generation, copy) in enumerate(zip(candidates, copies, strict=True)):
            info = dict(copy.infos[agent])
            if team is None:
                rows.append(
                    _Candidate(generation, info, float(copy.rewards[agent]), float(info["reward_team"]))
                )
            else:
                reward = copy.unwrapped.alpha * team[position] + float(info["reward_local"])
                rows.append(_Candidate(generation, info, reward, team[position]))
        if self.commit_modes.get(agent_role(agent), self.commit_modes["*"]) == "greedy":
            chosen = int(
                np.argmax([row.reward for row in rows])
            )  # the first maximum: a deterministic tie-break
        else:
            chosen = int(self.rng.integers(len(candidates)))
        return copies[chosen], rows, chosen


def _settled(env: AECEnv, agent: str) -> dict[str, float]:
    """The local rewards that `agent`'s step (just taken on `env`) paid to the other agents: a proposer's credit
    settled on what its team executed (`pettingllms.core.env`)."""
    return {
        other: float(info["reward_local"])
        for other, info in env.infos.items()
        if other != agent and info.get("reward_local")
    }
