"""Every environment served as an OpenEnv environment (`openenv-core`, the `openenv` extra), and its client.

    pettingllms serve plan-path-v0 --port 8000                        # the client acts for every agent in turn
    pettingllms serve plan-path-v0 --port 8000 --others oracle --agent tool   # the client is `tool`

    from pettingllms.integrations.openenv_server import AnswerAction, PettingLLMsClient
    with PettingLLMsClient(base_url="http://127.0.0.1:8000") as client:
        result = client.reset(seed=0)              # result.observation.agent: whose prompt this is
        result = client.step(AnswerAction(answer="<answer>R R D</answer>"))

The server is OpenEnv's own (`create_app`): `WS /ws` holds one session per connection, each with its own env
(`--max-sessions`, default 8); `POST /reset`, `POST /step` and `GET /state` are OpenEnv's stateless HTTP
endpoints (each request builds a fresh env, so an HTTP `/step` without a session is refused); `GET /health`,
`GET /schema` and `GET /metadata` describe it. Types:

- `AnswerAction.answer`: the text answer of the agent to act.
- `AgentObservation`: `agent` (who acts next: this prompt is theirs), `text` (that prompt), `done`, and `reward`
  and `info` of the step just taken: the acting agent's reward (with the scripted others' steps that followed,
  when `--others` plays them) and its `info` as right after its step (`error`, `reward_team`, `reward_local`,
  `parse_error`, ...) but with `success` and `turn` as they stand after the others' steps. At reset, reward is
  None and `info` is the agent-to-act's.
- `EpisodeState`: `episode_id`, `step_count` (steps taken by the client), `env_id`, `agent`, `turn`, `success`,
  `done`, `returns` (every agent's summed reward this episode).

Without `--others` the client acts for whichever agent `agent` names. With `--others SPEC` the agents other than
`--agent` (default: the env's first agent) are played on the server, frozen, and the client acts only for `--agent`:
`oracle` and `random` are the env's `solution(agent)` and `random_answer(agent, rng)` (rng seeded from the reset
seed); any other spec is what `pettingllms-eval --policy` takes (a run folder, a checkpoint, a model folder,
`tiny`, `openai:MODEL@URL`, or `agent=spec` pairs naming every other agent), loaded once when the server starts,
answering greedily, one call at a time across sessions. `--tier` serves the env at a difficulty tier
(`pettingllms.envs.tiers`).
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

import pettingllms
from pettingllms.core.errors import ConfigError

BASELINES = ("oracle", "random")
"""The `--others` played from the env's own state, with per-episode seeded randomness; any other spec is loaded
as `pettingllms-eval --policy` loads it (`pettingllms serve` does, then passes it to `build_app`)."""

Answerer = Callable[[Any, str], str]
"""`answer(env, agent) -> str`: a frozen policy's answer for `agent` at the env's current state."""


class AnswerAction(Action):
    """One agent's answer: the text an LLM would write (e.g. `<answer>R R D</answer>`)."""

    answer: str = Field(..., description="the text answer of the agent to act")


class AgentObservation(Observation):
    """The prompt of the agent to act, with the reward and info of the step just taken (module docstring)."""

    agent: str = Field(..., description="the agent to act next: `text` is its prompt")
    text: str = Field(default="", description="the agent's observation (its whole prompt)")
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info for the step just taken")


class EpisodeState(State):
    """Where the session's episode stands."""

    env_id: str = ""
    agent: str | None = None
    turn: int = 0
    success: bool = False
    done: bool = False
    returns: dict[str, float] = Field(default_factory=dict)


class PettingLLMsEnvironment(Environment[AnswerAction, AgentObservation, EpisodeState]):
    """`pettingllms.make(env_id, **env_kwargs)` behind OpenEnv's `Environment` API; one instance per session."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each instance owns its env; nothing is shared between sessions

    def __init__(
        self,
        env_id: str,
        others: str | None = None,
        agent: str | None = None,
        env_kwargs: dict | None = None,
        answer: Answerer | None = None,
    ):
        """`others`: None (the client acts for every agent), a baseline of `BASELINES`, or a spec whose loaded
        policy is `answer` (required then, shared by every session: see `build_app`)."""
        super().__init__()
        if others is not None and others not in BASELINES and answer is None:
            raise ConfigError(f"--others {others!r} needs its loaded policy (build_app loads it)")
        self.env_id, self.others, self.answer = env_id, others, answer
        self.env = pettingllms.make(env_id, **(env_kwargs or {}))
        self.raw = self.env.unwrapped
        self.agent = agent
        self._rng = np.random.default_rng()
        self._state = EpisodeState(env_id=env_id)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> AgentObservation:
        self.env.reset(seed=seed)
        self._rng = np.random.default_rng(seed)
        self._state = EpisodeState(
            env_id=self.env_id,
            episode_id=episode_id or str(uuid.uuid4()),
            returns=dict.fromkeys(self.raw.possible_agents, 0.0),
        )
        self._play_others(None)
        acting = self.env.agent_selection
        return self._observation(None, dict(self.env.infos.get(acting, {})))

    def step(self, action: AnswerAction, timeout_s: float | None = None, **kwargs: Any) -> AgentObservation:
        """Play `action.answer` for the agent to act, then the scripted others; refused after the episode ends."""
        if self._state.episode_id is None or self._over():
            raise RuntimeError(f"{self.env_id}: no episode in progress; call reset() first")
        acting = self.env.agent_selection
        self.env.step(action.answer)
        self._state.step_count += 1
        self._tally()
        reward, info = float(self.raw.rewards[acting]), dict(self.env.infos[acting])
        reward += self._play_others(acting)
        info.update(
            {key: self.env.infos[acting][key] for key in ("success", "turn")}
        )  # as the episode is now
        return self._observation(reward, info)

    @property
    def state(self) -> EpisodeState:
        return self._state

    def _over(self) -> bool:
        acting = self.env.agent_selection
        return not self.env.agents or self.env.terminations[acting] or self.env.truncations[acting]

    def _tally(self) -> None:
        for agent, reward in self.raw.rewards.items():
            self._state.returns[agent] += float(reward)

    def _play_others(self, client_agent: str | None) -> float:
        """Step the scripted agents until the client's agent is to act or the episode ends; what `client_agent`
        earned meanwhile."""
        earned = 0.0
        while self.others and not self._over() and self.env.agent_selection != self.agent:
            other = self.env.agent_selection
            if self.others == "oracle":
                self.env.step(self.raw.solution(other))
            elif self.others == "random":
                self.env.step(self.raw.random_answer(other, self._rng))
            else:
                self.env.step(self.answer(self.env, other))
            self._tally()
            if client_agent is not None:
                earned += float(self.raw.rewards[client_agent])
        return earned

    def _observation(self, reward: float | None, info: dict[str, Any]) -> AgentObservation:
        acting = self.env.agent_selection
        done = self._over()
        self._state.agent, self._state.done = acting, done
        self._state.turn, self._state.success = int(self.raw.turn), bool(self.raw.success)
        return AgentObservation(
            agent=acting, text=str(self.env.observe(acting)), reward=reward, done=done, info=info
        )


class PettingLLMsClient(EnvClient[AnswerAction, AgentObservation, EpisodeState]):
    """OpenEnv's WebSocket client for a `pettingllms serve` server: one session (one env) per client."""

    def _step_payload(self, action: AnswerAction) -> dict[str, Any]:
        return {"answer": action.answer}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AgentObservation]:
        observation = AgentObservation(
            **payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False)
        )
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> EpisodeState:
        return EpisodeState(**payload)


def build_app(
    env_id: str,
    others: str | None = None,
    agent: str | None = None,
    max_sessions: int = 8,
    env_kwargs: dict | None = None,
    tier: str | None = None,
    answer: Answerer | None = None,
):
    """OpenEnv's FastAPI app serving `env_id` (at `tier`, under `env_kwargs`); the arguments are checked here (a
    bad id, tier or agent fails now, before the server listens). `others` other than a baseline of `BASELINES`
    needs `answer`, its policy loaded once (`pettingllms serve` loads it with
    `pettingllms.play_policy.policy_answerer`), whose calls are serialized by a lock: the sessions' threads
    share one model."""
    if agent is not None and others is None:
        raise ConfigError("--agent names the client's agent among frozen others: pass --others too")
    if others is not None and others not in BASELINES and answer is None:
        raise ConfigError(f"--others {others!r} needs its loaded policy: pass answer=")
    env_kwargs = served_env_kwargs(env_id, tier, env_kwargs)
    agents = list(served_agents(env_id, env_kwargs)[0])
    if agent is not None and agent not in agents:
        raise ConfigError(f"--agent {agent!r}: {env_id} has agents {agents}")
    factory = functools.partial(
        PettingLLMsEnvironment,
        env_id=env_id,
        others=others,
        agent=agent or (agents[0] if others else None),
        env_kwargs=env_kwargs,
        answer=None if answer is None else _serialized(answer),
    )
    return create_app(
        factory, AnswerAction, AgentObservation, env_name=env_id, max_concurrent_envs=max_sessions
    )


def served_env_kwargs(env_id: str, tier: str | None, env_kwargs: dict | None) -> dict:
    """The env arguments a server of `env_id` builds its envs with: `tier`'s, then `env_kwargs` (a bad tier is a
    `ConfigError` naming the allowed ones)."""
    from pettingllms.core.registration import spec, tier_arguments

    return {**tier_arguments(spec(env_id), tier), **(env_kwargs or {})}


def served_agents(env_id: str, env_kwargs: dict) -> tuple[list[str], str]:
    """The agents and the workflow of `env_id` built with `env_kwargs`."""
    probe = pettingllms.make(env_id, **env_kwargs)
    agents, workflow = list(probe.possible_agents), probe.unwrapped.workflow
    probe.close()
    return agents, workflow


def _serialized(answer: Answerer) -> Answerer:
    """`answer` with its calls one at a time (the sessions run in threads and share its model)."""
    lock = threading.Lock()

    def locked(env: Any, agent: str) -> str:
        with lock:
            return answer(env, agent)

    return locked


def serve(env_id: str, host: str, port: int, **app_kwargs: Any) -> None:
    """Build the app (`build_app`) and run it with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(build_app(env_id, **app_kwargs), host=host, port=port)
