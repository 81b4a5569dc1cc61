"""Every environment as a Prime Intellect `verifiers` environment (the `verifiers` extra, `verifiers==0.4.0`).

    vf-eval pettingllms-verifiers -m MODEL --client.base-url URL/v1 \\
        --env.taskset.env-id plan-path-v0 --env.taskset.agent plan --env.taskset.others oracle \\
        --env.taskset.split eval --env.taskset.n 20 --env.player.harness.id null --env.player.runtime.type subprocess

    from pettingllms.integrations.verifiers_env import load_environment
    env = load_environment(env_id="plan-path-v0", agent="plan", others="oracle", split="eval", n=20)

verifiers 0.4.0 has no `MultiTurnEnv` or `Rubric`: its multi-turn environment is an `Env` whose `run(task, agents)`
plays the turns through `agents.player.interaction(task)`, and rewards and metrics are recorded on the episode's
trace. This module defines a taskset as `vf-eval` loads one (`__all__` exports one `Taskset` and one `Env`), under
the id `pettingllms-verifiers` (the top-level package `pettingllms_verifiers` re-exports it: verifiers resolves ids
to top-level modules):

- `PettingLLMsTaskset`: one task per instance of `env_id` (at `tier`, under `env_kwargs`) on its own `split`
  (`train`, `val` or `eval`): the first `n` distinct instances from seed `seed` up, as `pettingllms-eval`'s suites
  draw them (`pettingllms.eval.suites.distinct_seeds`; a dataset env's `eval` split walks its problems).
- `PettingLLMsVerifiersEnv`: one episode per task. The env is reset on the task's seed; the agents other than
  `agent` (default: the env's first agent) are played by `others` (`oracle`: the env's solver; `random`: random
  answers from a generator seeded by the task's seed); each time `agent` is to act its whole observation (its
  prompt, with the env's error text after a malformed answer) is the user's turn and the model's reply is its
  action, until the episode ends or the model's run stops. The trace's reward `episode_return` is `agent`'s summed
  reward (weight 1), its metrics `success` (1 when the team solved the instance), `progress` (the env's
  progression score, 0 to 100), `parse_errors` (the model's answers the env could not parse) and `env_errors`
  (its answers with an error of any kind: unparseable, or an action the env could not apply); its `info` keeps
  the turns and the model's answers, in order.

The conversation accumulates in the model's context as verifiers keeps it (each turn adds the env's full prompt),
unlike `pettingllms-train`, where each turn's prompt stands alone. Bad arguments are `ConfigError`s naming the
field and the allowed values.
"""

from __future__ import annotations

from collections.abc import Iterator
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


class PettingLLMsTasksetConfig(vf.TasksetConfig):
    """Which instances, of which env, with whom: the module docstring."""

    env_id: str = "plan-path-v0"
    """A registered environment id (`pettingllms list`)."""
    agent: str | None = None
    """The agent the model plays (default: the env's first agent)."""
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


def settings(config: PettingLLMsTasksetConfig) -> tuple[dict[str, Any], str]:
    """The env arguments of `config` (its tier's, then `env_kwargs`) and the agent the model plays; a `ConfigError`
    names a bad env id, tier or agent and the allowed values."""
    if config.env_id not in pettingllms.registry:
        raise ConfigError(
            f"env_id={config.env_id!r} is not registered; allowed: {sorted(pettingllms.registry)}"
        )
    env_kwargs = {**tier_arguments(spec(config.env_id), config.tier), **config.env_kwargs}
    agents = list(pettingllms.make(config.env_id, **env_kwargs).possible_agents)
    agent = config.agent or agents[0]
    if agent not in agents:
        raise ConfigError(f"agent={agent!r}: {config.env_id} has agents {agents}")
    return env_kwargs, agent


class PettingLLMsTaskData(vf.TaskData):
    """One instance: `info` holds the env id, its arguments, the agent, the others' policy and the reset."""

    info: dict[str, Any]


class PettingLLMsTask(vf.Task[PettingLLMsTaskData, vf.State, vf.TaskConfig]):
    """One instance of a PettingLLMs env (`PettingLLMsTaskData`)."""


class PettingLLMsEnvConfig(vf.EnvConfig):
    """One model-played agent, `player`."""

    player: vf.AgentConfig = vf.AgentConfig()


class PettingLLMsVerifiersEnv(vf.Env[PettingLLMsEnvConfig]):
    """Plays one task's episode (module docstring)."""

    async def run(self, task: PettingLLMsTask, agents: Any) -> None:
        info = task.data.info
        env = pettingllms.make(info["env_id"], **info["env_kwargs"])
        env.reset(seed=info["seed"], options=info["options"])
        episode = _Episode(env, info["agent"], info["others"], np.random.default_rng(info["seed"]))
        episode.play_others()
        async with agents.player.interaction(task) as interaction:
            while not episode.over():
                segment = await interaction.turn(str(env.observe(info["agent"])))
                if segment.terminated:
                    break
                episode.act(segment.last_reply)
        trace = interaction.trace
        trace.record_reward("episode_return", episode.returns, 1.0)
        trace.record_metrics(
            {
                "success": float(env.unwrapped.success),
                "progress": float(env.unwrapped.progress()),
                "parse_errors": float(episode.parse_errors),
                "env_errors": float(episode.env_errors),
            }
        )
        trace.info.update(turns=int(env.unwrapped.turn), answers=episode.answers)


def recordable(text: str) -> str:
    """`text` as a JSON trace can hold it: each lone surrogate (invalid UTF-8 that a client decoded leniently), which
    verifiers' serializer refuses and would lose the episode's trace for, written as its escape (`\\udcff`)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class _Episode:
    """An env with one model-played agent, the others played by `others`: the model's return so far."""

    def __init__(self, env: Any, agent: str, others: str, rng: np.random.Generator):
        self.env, self.agent, self.others, self.rng = env, agent, others, rng
        self.returns, self.parse_errors, self.env_errors = 0.0, 0, 0
        self.answers: list[str] = []  # the model's, in order, as JSON holds them (the trace keeps them)

    def over(self) -> bool:
        acting = self.env.agent_selection
        return not self.env.agents or self.env.terminations[acting] or self.env.truncations[acting]

    def act(self, answer: str) -> None:
        """Step the model's `answer` for its agent, then the others until it is to act again or the episode ends."""
        self.answers.append(recordable(answer))
        self.env.step(answer)
        self.returns += float(self.env.unwrapped.rewards[self.agent])
        info = self.env.infos[self.agent]
        self.parse_errors += int(bool(info.get("parse_error")))
        self.env_errors += int("error" in info)
        self.play_others()

    def play_others(self) -> None:
        raw = self.env.unwrapped
        while not self.over() and self.env.agent_selection != self.agent:
            other = self.env.agent_selection
            self.env.step(
                raw.solution(other) if self.others == "oracle" else raw.random_answer(other, self.rng)
            )
            self.returns += float(raw.rewards[self.agent])


class PettingLLMsTaskset(vf.Taskset[PettingLLMsTask, PettingLLMsTasksetConfig]):
    """The instances of the configured env and split (module docstring)."""

    def load(self) -> Iterator[PettingLLMsTask]:
        config = self.config
        env_kwargs, agent = settings(config)
        for seed, options in instances(config.env_id, env_kwargs, config.split, config.n, config.seed):
            info = {
                "env_id": config.env_id,
                "env_kwargs": env_kwargs,
                "agent": agent,
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
    seed: int = 0,
    tier: str | None = None,
    **env_kwargs: Any,
) -> PettingLLMsVerifiersEnv:
    """The verifiers environment of `env_id` (module docstring), as `vf-eval` builds it from the same settings."""
    if others not in OTHERS:
        raise ConfigError(f"others={others!r}: choose one of {list(OTHERS)}")
    if split not in ("train", "val", "eval"):
        raise ConfigError(f"split={split!r}: choose one of ['train', 'val', 'eval']")
    taskset = PettingLLMsTasksetConfig(
        id="pettingllms-verifiers",
        env_id=env_id,
        agent=agent,
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
