"""Every environment as a Prime Intellect `verifiers` environment (the `verifiers` extra, `verifiers==0.4.0`).

    vf-eval pettingllms-verifiers -m MODEL --client.base-url URL/v1 \\
        --env.taskset.env-id plan-path-v0 --env.taskset.agent plan --env.taskset.others oracle \\
        --env.taskset.split eval --env.taskset.n 20 --env.player.harness.id null --env.player.runtime.type subprocess

    from pettingllms.integrations.verifiers_env import load_environment
    env = load_environment(env_id="plan-path-v0", agent="plan", others="oracle", split="eval", n=20)
    team = load_environment(env_id="plan-path-v0", agents="all", frozen=["plan"])   # every agent a seat

    vf-eval pettingllms-verifiers -m MODEL --client.base-url URL/v1 --env.taskset.agents all \
        --env.tool.harness.id null --env.tool.runtime.type subprocess \
        --env.plan.harness.id null --env.plan.runtime.type subprocess --env.plan.model OTHER_MODEL

verifiers 0.4.0 has no `MultiTurnEnv` or `Rubric`: its multi-turn environment is an `Env` whose `run(task, agents)`
plays the turns through `agents.player.interaction(task)`, and rewards and metrics are recorded on the episode's
trace. This module defines a taskset as `vf-eval` loads one (`__all__` exports one `Taskset` and one `Env`), under
the id `pettingllms-verifiers` (the top-level package `pettingllms_verifiers` re-exports it: verifiers resolves ids
to top-level modules):

- `PettingLLMsTaskset`: one task per instance of `env_id` (at `tier`, under `env_kwargs`) on its own `split`
  (`train`, `val` or `eval`): the first `n` distinct instances from seed `seed` up, as `pettingllms-eval`'s suites
  draw them (`pettingllms.eval.suites.distinct_seeds`; a dataset env's `eval` split walks its problems).
- `PettingLLMsVerifiersEnv`: one episode per task. The env is reset on the task's seed. With `agents="one"` (the
  default) the model plays `agent` (default: the env's first agent), seated as `player`, and the other agents are
  played by `others` (`oracle`: the env's solver; `random`: random answers from a generator seeded by the task's
  seed). With `agents="all"` every agent of the env is a verifiers agent of its own, seated under its own name (the
  env config's fields `TEAM_SEATS`: `--env.tool.model`, `--env.plan.client.base-url`, ...), with its own
  conversation, its own trace and its own trainable flag (`frozen` names the seats whose traces are marked
  untrainable, verifiers' `Agent.trainable`); turns go in the AEC env's order (`agent_selection`), so in
  plan-path the plan agent's prompt holds the tool agent's proposal of the same turn. Each time a seated agent is to
  act its whole observation (its prompt, with the env's error text after a malformed answer) is the user's turn of
  its conversation and its model's reply is its action, until the episode ends or a seat's run stops. Each seat's
  trace: reward `episode_return`, that agent's summed reward as the env pays it (`alpha` x team + local, weight 1);
  metrics `team_reward` and `local_reward` (the two parts, summed over the episode), `success` (1 when the team
  solved the instance, on every trace), `progress` (the env's progression score, 0 to 100), `parse_errors` (the
  agent's answers the env could not parse) and `env_errors` (its answers with an error of any kind: unparseable, or
  an action the env could not apply); its `info` keeps the turns and that agent's answers, in order. A seat whose
  agent never acted (the episode ended first) has no trace.

The conversation accumulates in the model's context as verifiers keeps it (each turn adds the env's full prompt),
unlike `pettingllms-train`, where each turn's prompt stands alone. Bad arguments are `ConfigError`s naming the
field and the allowed values.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AsyncExitStack
from typing import Any, Literal

import numpy as np
import verifiers.v1 as vf
from pydantic import Field, model_validator

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.core.registration import spec, tier_arguments
from pettingllms.eval.suites import build_suite, distinct_seeds

OTHERS = ("oracle", "random")
"""The policies that can play the agents the model does not."""
TEAM_SEATS = ("seller", "buyer", "coder", "tester", "reasoner", "tool", "plan")
"""The seats of `agents="all"`: every agent name of the registered envs (`PettingLLMsEnvConfig` declares each as
a field, as verifiers requires of a seat and as `vf-eval --env.<seat>.*` addresses it)."""


class PettingLLMsTasksetConfig(vf.TasksetConfig):
    """Which instances, of which env, with whom: the module docstring."""

    env_id: str = "plan-path-v0"
    """A registered environment id (`pettingllms list`)."""
    agents: Literal["one", "all"] = "one"
    """`one`: the model plays `agent` and `others` the rest; `all`: every agent is a seat of its own."""
    agent: str | None = None
    """With agents='one': the agent the model plays (default: the env's first agent)."""
    frozen: list[str] = Field(default_factory=list)
    """With agents='all': the agents whose traces are marked untrainable."""
    others: Literal["oracle", "random"] = "oracle"
    """Who plays the other agents: the env's solver, or random answers."""
    split: Literal["train", "val", "eval"] = "eval"
    n: int = Field(default=20, ge=1)
    """Instances (tasks)."""
    seed: int = 0
    """The first seed drawn."""
    tier: str | None = None
    """A difficulty tier (easy, medium, hard, expert: docs/tiers.md), under `env_kwargs`."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> PettingLLMsTasksetConfig:
        settings(self)  # raises a ConfigError (a ValueError, as pydantic expects) naming the field
        return self


def settings(config: PettingLLMsTasksetConfig) -> tuple[dict[str, Any], str, list[str]]:
    """The env arguments of `config` (its tier's, then `env_kwargs`), the agent the model plays with agents='one'
    and the seated agents (every agent with agents='all'); a `ConfigError` names a bad env id, tier, agent or
    frozen agent and the allowed values."""
    if config.env_id not in pettingllms.registry:
        raise ConfigError(
            f"env_id={config.env_id!r} is not registered; allowed: {sorted(pettingllms.registry)}"
        )
    env_kwargs = {**tier_arguments(spec(config.env_id), config.tier), **config.env_kwargs}
    agents = list(pettingllms.make(config.env_id, **env_kwargs).possible_agents)
    agent = config.agent or agents[0]
    if agent not in agents:
        raise ConfigError(f"agent={agent!r}: {config.env_id} has agents {agents}")
    if config.agents == "one":
        if config.frozen:
            raise ConfigError(
                f"frozen={config.frozen}: the model plays one agent with agents='one'; freeze seats of agents='all'"
            )
        return env_kwargs, agent, [agent]
    unseated = [a for a in agents if a not in TEAM_SEATS]
    if unseated:
        raise ConfigError(
            f"agents='all': {config.env_id} under {env_kwargs} has agents {unseated} that are no seat of "
            f"{list(TEAM_SEATS)}; play it with agents='one'"
        )
    unknown = sorted(set(config.frozen) - set(agents))
    if unknown:
        raise ConfigError(f"frozen={config.frozen}: {unknown} not among {config.env_id}'s agents {agents}")
    return env_kwargs, agent, agents


class PettingLLMsTaskData(vf.TaskData):
    """One instance: `info` holds the env id, its arguments, the agent, the others' policy and the reset."""

    info: dict[str, Any]


class PettingLLMsTask(vf.Task[PettingLLMsTaskData, vf.State, vf.TaskConfig]):
    """One instance of a PettingLLMs env (`PettingLLMsTaskData`)."""


def _seat() -> vf.AgentConfig:
    """A seat's default: verifiers' tool-less chat program (the `null` harness) run on this machine (the
    `subprocess` runtime): the envs need no tools, and a seat in a remote runtime would make verifiers open a tunnel
    for every seat, the unused ones included."""
    return vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig())


class PettingLLMsEnvConfig(vf.EnvConfig):
    """The seats: `player` (the model's agent with agents='one') and one per agent name (`TEAM_SEATS`, agents='all'),
    each `_seat()` unless set; a seat an episode does not use never runs."""

    player: vf.AgentConfig = _seat()
    seller: vf.AgentConfig = _seat()
    buyer: vf.AgentConfig = _seat()
    coder: vf.AgentConfig = _seat()
    tester: vf.AgentConfig = _seat()
    reasoner: vf.AgentConfig = _seat()
    tool: vf.AgentConfig = _seat()
    plan: vf.AgentConfig = _seat()


class PettingLLMsVerifiersEnv(vf.Env[PettingLLMsEnvConfig]):
    """Plays one task's episode (module docstring)."""

    async def run(self, task: PettingLLMsTask, agents: Any) -> None:
        info = task.data.info
        env = pettingllms.make(info["env_id"], **info["env_kwargs"])
        env.reset(seed=info["seed"], options=info["options"])
        one = info["agents"] == "one"
        seats = {agent: agents.player if one else getattr(agents, agent) for agent in info["seated"]}
        for agent in info["frozen"]:
            seats[agent].trainable = False  # stamped on the agent's trace when its interaction opens
        episode = _Episode(env, set(seats), info["others"], np.random.default_rng(info["seed"]))
        episode.play_others()
        chats: dict[str, Any] = {}  # agent -> its open interaction, opened at its first turn
        async with AsyncExitStack() as stack:
            while not episode.over():
                acting = env.agent_selection
                if acting not in chats:
                    chats[acting] = await stack.enter_async_context(seats[acting].interaction(task))
                segment = await chats[acting].turn(str(env.observe(acting)))
                if segment.terminated:
                    break
                episode.act(segment.last_reply)
        for agent, chat in chats.items():
            episode.record(chat.trace, agent)


def recordable(text: str) -> str:
    """`text` as a JSON trace can hold it: each lone surrogate (invalid UTF-8 that a client decoded leniently), which
    verifiers' serializer refuses and would lose the episode's trace for, written as its escape (`\\udcff`)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class _Episode:
    """An env whose `seated` agents answer through verifiers, the others played by `others`: every agent's return
    so far (and its team and local parts), the seated agents' errors and answers."""

    def __init__(self, env: Any, seated: set[str], others: str, rng: np.random.Generator):
        self.env, self.seated, self.others, self.rng = env, seated, others, rng
        agents = env.possible_agents
        self.returns = dict.fromkeys(agents, 0.0)
        self.team, self.local = dict.fromkeys(agents, 0.0), dict.fromkeys(agents, 0.0)
        self.parse_errors, self.env_errors = dict.fromkeys(agents, 0), dict.fromkeys(agents, 0)
        self.answers: dict[str, list[str]] = {a: [] for a in agents}  # as JSON holds them, for the traces

    def over(self) -> bool:
        acting = self.env.agent_selection
        return not self.env.agents or self.env.terminations[acting] or self.env.truncations[acting]

    def act(self, answer: str) -> None:
        """Step `answer` for the seated agent to act, then the others until a seated agent is to act again or the
        episode ends."""
        acting = self.env.agent_selection
        self.answers[acting].append(recordable(answer))
        self._play(answer)
        info = self.env.infos[acting]
        self.parse_errors[acting] += int(bool(info.get("parse_error")))
        self.env_errors[acting] += int("error" in info)
        self.play_others()

    def play_others(self) -> None:
        raw = self.env.unwrapped
        while not self.over() and self.env.agent_selection not in self.seated:
            other = self.env.agent_selection
            self._play(raw.solution(other) if self.others == "oracle" else raw.random_answer(other, self.rng))

    def _play(self, answer: str) -> None:
        self.env.step(answer)
        for agent, reward in self.env.unwrapped.rewards.items():
            self.returns[agent] += float(reward)
            info = self.env.infos[agent]
            self.team[agent] += float(info["reward_team"])
            self.local[agent] += float(info["reward_local"])

    def record(self, trace: Any, agent: str) -> None:
        """`agent`'s reward, metrics and answers on its verifiers `trace` (module docstring)."""
        raw = self.env.unwrapped
        trace.record_reward("episode_return", self.returns[agent], 1.0)
        trace.record_metrics(
            {
                "success": float(raw.success),
                "progress": float(raw.progress()),
                "team_reward": self.team[agent],
                "local_reward": self.local[agent],
                "parse_errors": float(self.parse_errors[agent]),
                "env_errors": float(self.env_errors[agent]),
            }
        )
        trace.info.update(turns=int(raw.turn), answers=self.answers[agent])


class PettingLLMsTaskset(vf.Taskset[PettingLLMsTask, PettingLLMsTasksetConfig]):
    """The instances of the configured env and split (module docstring)."""

    def load(self) -> Iterator[PettingLLMsTask]:
        config = self.config
        env_kwargs, agent, seated = settings(config)
        for seed, options in instances(config.env_id, env_kwargs, config.split, config.n, config.seed):
            info = {
                "env_id": config.env_id,
                "env_kwargs": env_kwargs,
                "agents": config.agents,
                "agent": agent,
                "seated": seated,
                "frozen": list(config.frozen),
                "others": config.others,
                "seed": seed,
                "options": options,
            }
            name = f"{config.env_id}/{config.split}/{seed}" + (
                f"/{options['index']}" if "index" in options else ""
            )
            yield PettingLLMsTask(PettingLLMsTaskData(name=name, prompt=None, info=info), config.task)


def instances(
    env_id: str, env_kwargs: dict[str, Any], split: str, n: int, seed: int
) -> list[tuple[int, dict]]:
    """(seed, reset options) of the first `n` distinct instances of `split` from `seed` up (`pettingllms-eval`'s
    suite for `val` and `eval`, dataset suites included)."""
    if split != "train":
        suite = build_suite(env_id, n, seed, env_kwargs, split=split)
        return [(episode.seed, dict(episode.options)) for episode in suite.episodes]
    if env_kwargs.get("dataset") not in (None, "generated"):
        raise ConfigError(
            f"split='train' of {env_id}'s {env_kwargs['dataset']!r} dataset is not served; use 'eval'"
        )
    env = pettingllms.make(env_id, **env_kwargs).unwrapped
    seeds, _ = distinct_seeds(env, seed, n, "train")
    return [(s, {"split": "train"}) for s in seeds]


def load_environment(
    env_id: str = "plan-path-v0",
    agent: str | None = None,
    others: str = "oracle",
    split: str = "eval",
    n: int = 20,
    *,
    agents: str = "one",
    frozen: Iterable[str] = (),
    seed: int = 0,
    tier: str | None = None,
    **env_kwargs: Any,
) -> PettingLLMsVerifiersEnv:
    """The verifiers environment of `env_id` (module docstring), as `vf-eval` builds it from the same settings."""
    if agents not in ("one", "all"):
        raise ConfigError(f"agents={agents!r}: choose one of ['one', 'all']")
    if others not in OTHERS:
        raise ConfigError(f"others={others!r}: choose one of {list(OTHERS)}")
    if split not in ("train", "val", "eval"):
        raise ConfigError(f"split={split!r}: choose one of ['train', 'val', 'eval']")
    taskset = PettingLLMsTasksetConfig(
        id="pettingllms-verifiers",
        env_id=env_id,
        agents=agents,
        agent=agent,
        frozen=list(frozen),
        others=others,
        split=split,
        n=n,
        seed=seed,
        tier=tier,
        env_kwargs=env_kwargs,
    )
    return PettingLLMsVerifiersEnv(PettingLLMsEnvConfig(taskset=taskset))


__all__ = [
    "PettingLLMsEnvConfig",
    "PettingLLMsTask",
    "PettingLLMsTaskData",
    "PettingLLMsTaskset",
    "PettingLLMsTasksetConfig",
    "PettingLLMsVerifiersEnv",
    "load_environment",
]
