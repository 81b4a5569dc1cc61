"""Rollouts for AT-GRPO (SPEC section 2) and its trajectory-grouped baseline. No torch here.

AT-GRPO (`grouping="agent_turn"`), for every instance, turn and agent in workflow order:
1. the prompt is the agent's observation of the one shared current state;
2. K completions come from the agent's policy in one request (`n=K`), served with the other episodes' ready
   requests (the schedule, below);
3. each candidate is stepped on its own copy (`env.clone()`) of that state; its reward is
   `alpha * team + local`, where `local` is its own step's local reward and `team` is the team reward of the
   turn it starts: its own step's plus that of the later agents of the same turn answering greedily (n = 1,
   temperature 0, their own policies) on a further copy (`team_credit="turn"`, the default). An agent whose
   step pays no team reward by itself (the tool agent proposes; the plan agent's moves are what succeed) is
   thereby credited with the outcome its answer leads to, which the paper's `alpha * r_team + r_local` for
   every agent asks for; the last agent of a turn is scored by its own step alone. The greedy
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

Schedule (`pettingllms.rollout.scheduler`): each episode is a coroutine that asks for what it needs next (its
agent's K candidates; the greedy probes of its K copies, all later agents' at once; its copies stepped in the pool)
and goes on as soon as its own answers return. `schedule="async"` (the default) serves every request as it becomes
ready, each policy's generator in a thread of its own (policies that share one model share it), so the policies of
a per-role team generate at the same time and no episode waits for another's completions; a backend that batches
concurrent calls itself (vLLM's engine, `serves_concurrently`) gets every ready request at once for its
continuous batching. `schedule="lockstep"` serves rounds: every episode waits, then one call per policy, in turn.
Each `Rollout` returned carries its own counters: seconds spent stepping environments, turn-credit probe completions,
and the schedule's wall time with each server's calls, items and busy time (`ScheduleStats`).

The engine is deterministic for a given seed, whatever the schedule, the order in which completions arrive and
how requests are grouped into calls: instances come from their seeds; every `collect` draws one sample seed from
the engine's generator (`evaluate` takes one), and prompt i of episode e is seeded `derive_seed(sample seed, e, i)`
(a backend with a `seeds` parameter draws that prompt's completions from it alone: `backends.base`); an episode's
random commits come from a generator of its own. Samples come in episode order, each episode's in play order; the
observer sees each episode's steps in play order, episodes interleaved as their answers arrive.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Generator, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from pettingllms.backends.base import Generation, PolicyBackend, SamplingConfig, StatePolicy, call_seeded
from pettingllms.core.env import agent_role
from pettingllms.core.errors import ConfigError
from pettingllms.core.protocol import RolloutEnv, check_rollout_env
from pettingllms.core.seeding import derive_seed
from pettingllms.pools.base import StepPool
from pettingllms.rollout.grouping import GROUPINGS, Grouping
from pettingllms.rollout.samples import EpisodeResult, Rollout, Sample
from pettingllms.rollout.scheduler import SCHEDULES, Request, Server, run_episodes

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
    start: RolloutEnv
    candidates: tuple[ScoredCandidate, ...]
    chosen: int
    committed: RolloutEnv


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
        env_fn: builds a fresh environment (e.g. `functools.partial(pettingllms.make, "plan-path-v0")`) with the
            members of `pettingllms.core.protocol.RolloutEnv`: every env built is checked once reset, and one that
            lacks any is an `EnvProtocolError` naming them (a plain PettingZoo env: `pettingllms.AECEnvAdapter`).
        policies: policy name -> backend (a `PolicyBackend`, or a `StatePolicy` that reads the env's state).
        agent_policy: agent name -> policy name (every agent of the workflow must be mapped).
        sampling: policy name -> sampling settings.
        num_generations: K.
        grouping: the name of one of `grouping.GROUPINGS` (its `Grouping` says how the rollout samples and what
            reward its samples carry): "agent_turn" (AT-GRPO), "trajectory" (the baseline),
            "trajectory_turn" (multi-turn GRPO), "anchor_state" (GiGPO), or the ablations "agent" / "turn"
            (module docstring).
        commit: "greedy" (the best candidate), "random", or per-role pairs such as "tool=random" (`parse_commit`).
        team_credit: "turn" (a candidate's team reward includes its turn's greedy completion) or "step".
        seed: seeds the engine's own generator, which draws each `collect`'s sample seed (module docstring).
        pool: a `StepPool` (`pettingllms.pools`: worker processes or Ray actors) that steps the K candidate
            copies (None: in-process); results are the same either way.
        observer: called with a `CommittedStep` after every commit, in the order the engine commits (None: no
            observer; with one, each step's starting states are copied for it). It must not change what it reads.
        schedule: "async" (requests served as they become ready) or "lockstep" (`pettingllms.rollout.scheduler`);
            the samples are the same either way.
        max_items_per_call: the most prompts a batching server takes in one call (None: every waiting one).
    """

    def __init__(
        self,
        env_fn: Callable[[], RolloutEnv],
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
        schedule: str = "async",
        max_items_per_call: int | None = None,
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
        if schedule not in SCHEDULES:
            raise ConfigError(
                f"rollout_schedule={schedule!r} is not supported; allowed values: {list(SCHEDULES)}"
            )
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
        self.grouping: Grouping = GROUPINGS[grouping]
        self.team_credit = team_credit
        self.rng = np.random.default_rng(seed)
        self.pool = pool
        self.observer = observer
        self.schedule = schedule
        self.max_items_per_call = max_items_per_call
        self._server_of, self._servers = _servers(policies, sampling, pool)

    def server_names(self) -> dict[Hashable, str]:
        """Each server of a rollout's `schedule` named by the policies it serves ("tool+plan" for adapters of one model;
        "env-pool" for the pool)."""
        names: dict[Hashable, list[str]] = {}
        for policy, key in self._server_of.items():
            names.setdefault(key, []).append(policy)
        return {**{key: "+".join(policies) for key, policies in names.items()}, _POOL: _POOL}

    def collect(self, seeds: Sequence[int], options: Mapping[str, Any] | None = None) -> Rollout:
        """Play one instance per seed (reset with `seed` and `options`) and return every sample; the requests'
        seeds derive from one sample seed drawn from the engine's generator."""
        sample_seed = int(self.rng.integers(2**32))
        if self.grouping.sampling == "episodes":
            return self._collect_trajectories(seeds, options, sample_seed)
        envs = [self._new_env(seed, options) for seed in seeds]
        belongs = [_Episode(index) for index in range(len(seeds))]
        return self._play(envs, belongs, self.num_generations, self.grouping, self.team_credit, sample_seed)

    def evaluate(
        self,
        seeds: Sequence[int],
        options: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        *,
        sample_seed: int | None = None,
    ) -> Rollout:
        """Play one episode per seed with one completion per step (no candidates); samples included.

        `options` are the reset options of every episode, or a sequence of them, one per seed. The requests' seeds
        derive from `sample_seed` (None: one drawn from the engine's generator).
        """
        per_episode = [options] * len(seeds) if options is None or isinstance(options, Mapping) else options
        if len(per_episode) != len(seeds):
            raise ConfigError(f"{len(per_episode)} option mappings for {len(seeds)} seeds")
        if sample_seed is None:
            sample_seed = int(self.rng.integers(2**32))
        envs = [self._new_env(seed, opts) for seed, opts in zip(seeds, per_episode, strict=True)]
        belongs = [_Episode(index) for index in range(len(seeds))]
        return self._play(envs, belongs, 1, GROUPINGS["agent_turn"], "step", sample_seed)

    def _collect_trajectories(
        self, seeds: Sequence[int], options: Mapping[str, Any] | None, sample_seed: int
    ) -> Rollout:
        """K independent episodes per instance (a grouping whose `sampling` is "episodes"); every sample rewarded,
        once its episode has ended, with the episode's return (`reward="episode_return"`) or with its return-to-go:
        its step's reward and every later step's (`"return_to_go"`)."""
        k = self.num_generations
        envs = [self._new_env(seed, options) for seed in seeds for _ in range(k)]
        belongs = [_Episode(index // k, index) for index in range(len(envs))]
        played = self._play(envs, belongs, 1, self.grouping, "step", sample_seed)
        if self.grouping.reward == "episode_return":
            team_returns = [sum(episode.returns.values()) for episode in played.episodes]
            return dataclasses.replace(
                played,
                samples=[dataclasses.replace(s, reward=team_returns[s.episode]) for s in played.samples],
            )
        remaining = [0.0] * len(envs)
        to_go = []
        # each episode's samples are in play order (its later steps after its earlier ones): sum them from the end
        for sample in reversed(played.samples):
            remaining[sample.episode] += sample.step_reward
            to_go.append(dataclasses.replace(sample, reward=remaining[sample.episode]))
        return dataclasses.replace(played, samples=to_go[::-1])

    def _new_env(self, seed: int, options: Mapping[str, Any] | None) -> RolloutEnv:
        """A fresh env from `env_fn`, reset; `EnvProtocolError` naming what it lacks of `RolloutEnv` (every env of
        training and evaluation comes from here, so one that cannot be played fails before any generation)."""
        env = self.env_fn()
        env.reset(seed=int(seed), options=dict(options or {}))
        check_rollout_env(env)
        return env

    # ----------------------------------------------------------------- the loop
    def _play(
        self,
        envs: list[RolloutEnv],
        belongs: list[_Episode],
        n: int,
        grouping: Grouping,
        team_credit: str,
        sample_seed: int,
    ) -> Rollout:
        """Play every env to its end under the engine's schedule, `n` candidates per agent step (n = 1: plain
        sampling), each sample keyed by `grouping` and its candidates scored by `team_credit`; the requests of
        episode i are seeded from `(sample_seed, i)`. Samples come in episode order, each episode's in play order."""
        tally = _Tally()
        episodes = [
            self._episode(env, belong, n, grouping, team_credit, _RequestSeeds(sample_seed, index), tally)
            for index, (env, belong) in enumerate(zip(envs, belongs, strict=True))
        ]
        played, stats = run_episodes(
            episodes, self._servers, schedule=self.schedule, max_items_per_call=self.max_items_per_call
        )
        if _POOL in stats.servers:
            tally.env_seconds += stats.servers[_POOL].busy_s
        return Rollout(
            [sample for samples, _ in played for sample in samples],
            [result for _, result in played],
            env_seconds=tally.env_seconds,
            probe_completions=tally.probe_completions,
            schedule=stats,
        )

    def _episode(
        self,
        env: RolloutEnv,
        belong: _Episode,
        n: int,
        grouping: Grouping,
        team_credit: str,
        seeds: _RequestSeeds,
        tally: _Tally,
    ) -> Generator[list[Request], list[Any], tuple[list[Sample], EpisodeResult]]:
        """One episode as a coroutine of the scheduler: its samples and result once it has ended."""
        samples: list[Sample] = []
        returns = dict.fromkeys(env.possible_agents, 0.0)
        turns_used = 0
        while (agent := _next_to_act(env)) is not None:
            step = yield from self._act(env, belong, agent, n, team_credit, seeds, tally)
            env = step.committed
            paid = {agent: float(env.rewards[agent]), **_settled(env, agent)}
            samples.extend(_samples(step, self.agent_policy[agent], grouping, sum(paid.values())))
            for receiver, amount in paid.items():  # the env's rewards, not the candidate's score
                returns[receiver] += amount
            turns_used = step.turn + 1
        result = EpisodeResult(
            belong.instance, bool(env.unwrapped.success), turns_used, returns, _progress(env)
        )
        return samples, result

    def _act(
        self,
        env: RolloutEnv,
        belong: _Episode,
        agent: str,
        n: int,
        team_credit: str,
        seeds: _RequestSeeds,
        tally: _Tally,
    ) -> Generator[list[Request], list[Any], CommittedStep]:
        """`agent` acts on `env`: `n` candidates, stepped on copies and scored, one committed (the episode goes on
        from its copy). Returns the `CommittedStep` (also given to the observer)."""
        turn = int(env.unwrapped.turn)  # the turn the step happens in
        start = env.clone() if self.observer is not None else env
        prompt = str(env.observe(agent))
        ((generations,),) = yield [self._ask(agent, [env], [prompt], n, seeds, greedy=False)]
        copies = yield from self._step(
            [(env, generation.action) for generation in generations], tally, in_place=n == 1
        )
        credits = (
            (yield from self._turn_credit(agent, copies, seeds, tally)) if team_credit == "turn" else None
        )
        scored = self._score(agent, generations, copies, credits)
        chosen = self._choose(agent, scored, seeds.commits)
        step = CommittedStep(
            instance=belong.instance,
            episode=belong.episode,
            agent=agent,
            turn=turn,
            prompt=prompt,
            start=start,
            candidates=scored,
            chosen=chosen,
            committed=copies[chosen],
        )
        if self.observer is not None:
            self.observer(step)
        return step

    def _ask(
        self,
        agent: str,
        envs: Sequence[RolloutEnv],
        prompts: Sequence[str],
        n: int,
        seeds: _RequestSeeds,
        *,
        greedy: bool,
    ) -> Request:
        """The request for `n` generations per prompt from `agent`'s policy (`greedy`: temperature 0), each prompt
        with the next seed of its episode."""
        policy = self.agent_policy[agent]
        state_policy = isinstance(self.policies[policy], StatePolicy)
        items = tuple(_Ask(env, prompt, seeds.next()) for env, prompt in zip(envs, prompts, strict=True))
        return Request(self._server_of[policy], (policy, agent if state_policy else None, n, greedy), items)

    def _step(
        self, jobs: Sequence[tuple[RolloutEnv, str]], tally: _Tally, *, in_place: bool
    ) -> Generator[list[Request], list[Any], list[RolloutEnv]]:
        """Each `(env, action)` job's env after `step(action)`: on a copy (the env itself when `in_place`), or in
        the pool, which returns stepped copies (the same envs: results do not depend on where steps ran). In-process
        stepping time is added to `tally` (the pool's is its server's busy time)."""
        if self.pool is not None:
            (stepped,) = yield [Request(_POOL, "step", tuple(jobs))]
            return stepped
        start = time.perf_counter()
        stepped = []
        for env, action in jobs:
            copy = env if in_place else env.clone()
            copy.step(action)
            stepped.append(copy)
        tally.env_seconds += time.perf_counter() - start
        return stepped

    def _turn_credit(
        self, agent: str, copies: Sequence[RolloutEnv], seeds: _RequestSeeds, tally: _Tally
    ) -> Generator[list[Request], list[Any], list[_TurnCredit]]:
        """For every candidate copy, what the rest of its turn adds: the team rewards and the direct payments to
        `agent` of the later agents of the turn answering greedily on a probe copy (the copies stay untouched).
        The probes of all copies that wait on one agent are one request, and every agent's is in flight at once."""
        credits = [_TurnCredit(float(copy.infos[agent]["reward_team"])) for copy in copies]
        probes = [
            (column, copy.clone(), copy.infos[agent]["step_turn"]) for column, copy in enumerate(copies)
        ]
        while probes:
            waiting: dict[str, list[tuple[int, RolloutEnv, int]]] = {}
            for column, env, turn in probes:
                next_agent = _next_to_act(env)
                if next_agent is not None and env.unwrapped.turn == turn:  # a later agent of the same turn
                    waiting.setdefault(next_agent, []).append((column, env, turn))
            if not waiting:
                break
            requests = [
                self._ask(
                    next_agent,
                    [env for _, env, _ in group],
                    [str(env.observe(next_agent)) for _, env, _ in group],
                    1,
                    seeds,
                    greedy=True,
                )
                for next_agent, group in waiting.items()
            ]
            answers = yield requests
            groups = [(next_agent, probe) for next_agent, group in waiting.items() for probe in group]
            actions = [generations[0].action for answer in answers for generations in answer]
            tally.probe_completions += len(groups)
            jobs = [(env, action) for (_, (_, env, _)), action in zip(groups, actions, strict=True)]
            stepped = yield from self._step(jobs, tally, in_place=True)
            probes = []
            for (next_agent, (column, _, turn)), after in zip(groups, stepped, strict=True):
                credits[column] = credits[column].plus(
                    float(after.infos[next_agent]["reward_team"]),
                    float(after.infos.get(agent, {}).get("reward_paid", 0.0)),
                )
                probes.append((column, after, turn))
        return credits

    def _score(
        self,
        agent: str,
        generations: Sequence[Generation],
        copies: Sequence[RolloutEnv],
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

    def _choose(self, agent: str, scored: Sequence[ScoredCandidate], rng: np.random.Generator) -> int:
        """The committed candidate's index: the best (the first maximum, a deterministic tie-break) or, where the
        agent's role commits at random, one drawn uniformly from the episode's own generator `rng`."""
        if self.commit_modes.get(agent_role(agent), self.commit_modes["*"]) == "greedy":
            return int(np.argmax([candidate.reward for candidate in scored]))
        return int(rng.integers(len(scored)))


_POOL = "env-pool"
"""The scheduler's name of the env pool's server."""


@dataclasses.dataclass(frozen=True)
class _Ask:
    """One prompt of a generation request: the state it shows (what a `StatePolicy` reads), its text, its seed."""

    env: RolloutEnv
    prompt: str
    seed: int


@dataclasses.dataclass
class _Tally:
    """The counters of one rollout, added to by its episodes (one thread: the scheduler's)."""

    env_seconds: float = 0.0
    probe_completions: int = 0


class _RequestSeeds:
    """The seeds of one episode: its i-th prompt is seeded `derive_seed(base, episode, i)` and its random commits
    come from a generator of its own, so an episode's draws do not depend on when its requests are served."""

    def __init__(self, base: int, episode: int):
        self.base, self.episode, self.count = base, episode, 0
        self.commits = np.random.default_rng(derive_seed(base, episode, "commit"))

    def next(self) -> int:
        seed = derive_seed(self.base, self.episode, self.count)
        self.count += 1
        return seed


@dataclasses.dataclass(frozen=True)
class _PolicyServer:
    """The scheduler's server of one model: the backends of the policies it serves (several for LoRA adapters of
    one model), called with each prompt's seed where the backend takes request seeds."""

    backends: Mapping[str, PolicyBackend | StatePolicy]
    sampling: Mapping[str, SamplingConfig]
    concurrent: bool
    lane: Hashable | None

    def serve(self, shape: Any, items: Sequence[_Ask]) -> list[list[Generation]]:
        policy, agent, n, greedy = shape
        backend = self.backends[policy]
        seeds = [item.seed for item in items]
        if isinstance(backend, StatePolicy):
            return call_seeded(backend.generate_from_state, seeds, [item.env for item in items], agent, n)
        sampling = self.sampling[policy]
        if greedy:
            sampling = dataclasses.replace(sampling, temperature=0.0)
        return call_seeded(backend.generate, seeds, [item.prompt for item in items], n, sampling)


@dataclasses.dataclass(frozen=True)
class _PoolServer:
    """The scheduler's server of the env pool: a call steps every job in the pool's workers (a lane of its own)."""

    pool: StepPool
    concurrent: bool = False
    lane: Hashable | None = None

    def serve(self, shape: Any, items: Sequence[tuple[RolloutEnv, str]]) -> list[RolloutEnv]:
        return self.pool.step_all(list(items))


@dataclasses.dataclass(frozen=True)
class _TurnCredit:
    """What a candidate's turn earned beyond its own local reward: team rewards, and direct payments to it."""

    team: float
    paid: float = 0.0

    def plus(self, team: float, paid: float) -> _TurnCredit:
        return _TurnCredit(self.team + team, self.paid + paid)


def _progress(env: RolloutEnv) -> float | None:
    """The ended episode's progression score (`TextAECEnv.progress`, 0 to 100); None when the env has none (an env
    of another package)."""
    score = getattr(env.unwrapped, "progress", None)
    return None if score is None else float(score())


def _next_to_act(env: RolloutEnv) -> str | None:
    """Step past the agents that are done (PettingZoo's `step(None)`); the agent to act next, or None when the
    episode is over."""
    while env.agents and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        env.step(None)
    return env.agent_selection if env.agents else None


def _samples(step: CommittedStep, policy: str, grouping: Grouping, step_reward: float) -> list[Sample]:
    """One `Sample` per candidate of `step`, keyed by `grouping`; the committed one carries `step_reward`."""
    group_id = grouping.group_id(step.instance, step.turn, step.agent, step.prompt)
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


def _settled(env: RolloutEnv, agent: str) -> dict[str, float]:
    """The local rewards that `agent`'s step (just taken on `env`) paid to the other agents: a proposer's credit
    settled on what its team executed (`pettingllms.core.env`), or a direct payment in a general-sum game."""
    return {
        other: float(info["reward_local"])
        for other, info in env.infos.items()
        if other != agent and info.get("reward_local")
    }


def _servers(
    policies: Mapping[str, PolicyBackend | StatePolicy],
    sampling: Mapping[str, SamplingConfig],
    pool: StepPool | None,
) -> tuple[dict[str, Hashable], dict[Hashable, Server]]:
    """Policy name -> its server's key, and key -> server: one server per model (`model_server(backend)`: the
    LoRA adapters of one model share it), on the model's `lane` (its device: `HFPolicy.lane`), plus the pool's."""
    server_of: dict[str, Hashable] = {}
    grouped: dict[Hashable, dict[str, PolicyBackend | StatePolicy]] = {}
    for name, backend in policies.items():
        key = id(model_server(backend))
        server_of[name] = key
        grouped.setdefault(key, {})[name] = backend
    servers: dict[Hashable, Server] = {}
    for key, backends in grouped.items():
        served = model_server(next(iter(backends.values())))
        servers[key] = _PolicyServer(
            backends,
            {name: sampling[name] for name in backends if name in sampling},
            bool(getattr(served, "serves_concurrently", False)),
            getattr(served, "lane", None),
        )
    if pool is not None:
        servers[_POOL] = _PoolServer(pool)
    return server_of, servers


def model_server(backend: Any) -> Any:
    """What serves `backend`'s generations: its `model_server` (the one model behind several LoRA adapters), else
    the backend itself."""
    return getattr(backend, "model_server", backend)
