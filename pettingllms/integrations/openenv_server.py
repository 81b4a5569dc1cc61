"""Every environment served as an OpenEnv environment (`openenv` 0.10, the `openenv` extra), and its client.

    pettingllms serve plan-path-v0 --port 8000                        # the client acts for every agent in turn
    pettingllms serve plan-path-v0 --port 8000 --others oracle --agent tool   # the client is `tool`

    from pettingllms.integrations.openenv_server import AnswerAction, PettingLLMsClient
    with PettingLLMsClient(base_url="http://127.0.0.1:8000") as client:
        result = client.reset(seed=0)              # result.observation.agent: whose prompt this is
        result = client.step(AnswerAction(answer="<answer>R R D</answer>"))

The server is OpenEnv's own (`create_app`): `WS /ws` holds one session per connection, each with its own env;
`POST /reset`, `POST /step` and `GET /state` are OpenEnv's stateless HTTP endpoints (each request builds a fresh
env, so an HTTP `/step` has no episode and is refused with 409 and what to do instead); `GET /health`, `GET /schema`
and `GET /metadata` describe it, `/state` and `/schema` with the whole `EpisodeState`. A client's mistake is a 4xx
with a reason, never a 500: a step without an episode 409, a bad reset argument 400 (the env's own message), a
malformed body 400 or 422. Sessions are bounded by OpenEnv 0.10's own `ConcurrencyConfig`: at most
`--max-sessions` (default 8), and a session with no reset or step for `--idle-timeout` seconds (default 300; 0:
never) is freed by OpenEnv's reaper, which closes its env. `SessionGuard` adds what OpenEnv leaves out: the reaper
leaves the client's socket open and OpenEnv closes a refused client with a normal close (1000), so here a client
beyond the limit is closed with code 1013 (try again later) and a reason naming the limit; a session silent for
`--idle-timeout` is closed with code 4408 and a reason; a session whose env the reaper closed refuses its next
reset or step with a `session closed` error and is closed with 4408; a frame that is not UTF-8 text gets an error
naming what was wrong, and the session goes on. Programs (code-v0's tests, the tool agents' programs) run on `--sandbox-workers`
workers (default: the machine's cores) shared fairly across sessions (the session that has held workers least goes
first: `pettingllms.sandbox.fair_slots`), so a session that submits loops delays each program of another by at most
one program's time limit (until a worker frees), not by its whole queue; a step's `info["queue_wait_s"]` (code-v0)
says how long its programs waited.

`reset(seed=..., options={...})` takes the env's reset options (`split`: "train", "val" or "eval", and what the
env's `RESET_OPTIONS` lists, e.g. a Sokoban `level`); an unknown option or a bad value is refused with the env's own
message. `pettingllms-eval`'s suite plays episode i as `reset(seed=episode.seed, options=episode.options)`
(`pettingllms.eval.suites.build_suite`): a client that resets so plays the same episode. Types:

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

import asyncio
import functools
import json
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, Observation, State, WSErrorCode
from pydantic import Field
from starlette.requests import Request
from starlette.responses import JSONResponse

import pettingllms
from pettingllms.core.errors import ConfigError, PettingLLMsError

BASELINES = ("oracle", "random")
"""The `--others` played from the env's own state, with per-episode seeded randomness; any other spec is loaded
as `pettingllms-eval --policy` loads it (`pettingllms serve` does, then passes it to `build_app`)."""

Answerer = Callable[[Any, str], str]
"""`answer(env, agent) -> str`: a frozen policy's answer for `agent` at the env's current state."""
IDLE_TIMEOUT_S = 300.0
"""How long a WebSocket session may stay silent before the server closes it (`--idle-timeout`; 0: never)."""
IDLE_CLOSE_CODE = 4408
"""The close code of a session ended for its silence (an application code, after HTTP's 408 Request Timeout)."""
FULL_CLOSE_CODE = 1013
"""The close code of a session refused because every slot is taken (RFC 6455's "try again later")."""
LOG = logging.getLogger("pettingllms.serve")


SESSION_CLOSED = "session closed"
"""How the refusal of a session whose env was closed begins (`SessionClosedError`; `SessionGuard` reads it)."""


class NoEpisodeError(PettingLLMsError):
    """A step with no episode in progress: before `reset`, after the episode ended, or over stateless HTTP."""


class SessionClosedError(NoEpisodeError):
    """A reset or step of a session whose env was closed (OpenEnv's idle reaper closed it, or the server did)."""


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
        self._closed = False

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: Mapping[str, Any] | None = None,
        **unknown: Any,
    ) -> AgentObservation:
        """Start an episode from `seed` with the env's reset `options` (module docstring); `ConfigError` names a
        field or an option the env does not take, or a bad value."""
        self._refuse_if_closed()
        if unknown:
            raise ConfigError(
                f"reset got unknown field(s) {sorted(unknown)}; it takes seed, episode_id and options (the env's "
                f"reset options: {sorted(self._reset_options()) or 'none'})"
            )
        options = self._checked_options(options)
        try:
            self.env.reset(seed=seed, options=options)
        except (ConfigError, ValueError) as error:
            raise ConfigError(f"reset(seed={seed!r}, options={options!r}): {error}") from None
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
        self._refuse_if_closed()
        if self._state.episode_id is None or self._over():
            raise NoEpisodeError(
                f"{self.env_id}: no episode in progress; call reset() first (an episode is played over one "
                "WebSocket session, /ws or PettingLLMsClient: HTTP /reset and /step each build a fresh env)"
            )
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

    def close(self) -> None:
        """Release the env; every later reset or step of this session is refused (`SessionClosedError`)."""
        if not self._closed:
            self._closed = True
            self.env.close()

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"{SESSION_CLOSED}: this session's env was closed (no reset or step for --idle-timeout seconds, "
                "or the server shut it down) and its episode is gone; connect a new session and reset"
            )

    def _reset_options(self) -> frozenset[str] | None:
        """The option keys the env's `reset` understands (None: the env does not say, e.g. an adapted env)."""
        return getattr(self.raw, "RESET_OPTIONS", None)

    def _checked_options(self, options: Any) -> dict[str, Any]:
        """`options` as a dict, refused (`ConfigError`) when it is no mapping or names an option the env does not
        take (the env itself only warns of one, which a client never sees)."""
        if options is None:
            return {}
        if not isinstance(options, Mapping):
            raise ConfigError(f"reset options must be a JSON object, got {type(options).__name__}")
        understood = self._reset_options()
        unknown = sorted(set(options) - understood) if understood is not None else []
        if unknown:
            raise ConfigError(
                f"{self.env_id} has no reset option(s) {unknown}; it takes {sorted(understood)}"
            )
        return dict(options)  # a bad value (a split that does not exist) is the env's own reset error

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
    idle_timeout: float = IDLE_TIMEOUT_S,
    sandbox_workers: int | None = None,
):
    """OpenEnv's FastAPI app serving `env_id` (at `tier`, under `env_kwargs`); the arguments are checked here (a
    bad id, tier or agent fails now, before the server listens). `others` other than a baseline of `BASELINES`
    needs `answer`, its policy loaded once (`pettingllms serve` loads it with
    `pettingllms.play_policy.policy_answerer`), whose calls are serialized by a lock: the sessions' threads
    share one model. `max_sessions` and `idle_timeout` bound the WebSocket sessions (OpenEnv's `ConcurrencyConfig`;
    `SessionGuard` closes their sockets with a reason);
    `sandbox_workers` (None: the shared sandbox's default) is how many programs run at once for all sessions, taken
    fairly across them (`pettingllms.sandbox.fair_slots`; started now, where bubblewrap is installed)."""
    if agent is not None and others is None:
        raise ConfigError("--agent names the client's agent among frozen others: pass --others too")
    if others is not None and others not in BASELINES and answer is None:
        raise ConfigError(f"--others {others!r} needs its loaded policy: pass answer=")
    env_kwargs = served_env_kwargs(env_id, tier, env_kwargs)
    agents = list(served_agents(env_id, env_kwargs)[0])
    if agent is not None and agent not in agents:
        raise ConfigError(f"--agent {agent!r}: {env_id} has agents {agents}")
    if max_sessions < 1:
        raise ConfigError(f"--max-sessions {max_sessions}: at least 1 session")
    if idle_timeout < 0:
        raise ConfigError(f"--idle-timeout {idle_timeout}: seconds >= 0 (0: sessions never time out)")
    if sandbox_workers is not None:
        if sandbox_workers < 1:
            raise ConfigError(f"--sandbox-workers {sandbox_workers}: at least 1 worker")
        _start_sandbox(sandbox_workers)
    concurrency = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout or None)
    factory = functools.partial(
        PettingLLMsEnvironment,
        env_id=env_id,
        others=others,
        agent=agent or (agents[0] if others else None),
        env_kwargs=env_kwargs,
        answer=None if answer is None else _serialized(answer),
    )
    app = create_app(
        factory,
        AnswerAction,
        AgentObservation,
        env_name=env_id,
        concurrency_config=concurrency,
        state_cls=EpisodeState,
    )
    app.add_exception_handler(NoEpisodeError, functools.partial(_client_error, 409))
    app.add_exception_handler(ConfigError, functools.partial(_client_error, 400))
    app.add_middleware(SessionGuard, idle_timeout=idle_timeout)
    return app


async def _start_sandbox(workers: int) -> None:
    """Start the shared sandbox with `workers` workers, unless bubblewrap is missing here (then the envs that run
    programs refuse to start, naming the fix, and the others never need it)."""
    from pettingllms.sandbox import SandboxUnavailable, configure_default_sandbox

    try:
        configure_default_sandbox(workers)
    except SandboxUnavailable:
        return
    except ValueError as error:
        raise ConfigError(f"--sandbox-workers {workers}: {error}") from error


async def _client_error(status: int, request: Request, error: Exception) -> JSONResponse:
    """A client's mistake over HTTP: `status` with the reason in `detail`, and one line in the server's log."""
    LOG.warning("%s %s -> %d: %s", request.method, request.url.path, status, error)
    return JSONResponse({"detail": str(error)}, status_code=status)


class SessionGuard:
    """ASGI middleware in front of OpenEnv's `/ws` (module docstring). OpenEnv counts the sessions and frees idle
    ones (`ConcurrencyConfig`); this closes each socket the way a client can act on: a client refused for the limit
    with `FULL_CLOSE_CODE` and a reason (OpenEnv sends its `CAPACITY_REACHED` error, then a normal close), a session
    with `IDLE_CLOSE_CODE` after `idle_timeout` seconds without a message from its client (0: never) or once its env
    refused a step as closed (`SESSION_CLOSED`), and a binary frame read as UTF-8 text when it is, else answered with
    an error and skipped. OpenEnv's endpoint then sees only text frames, and a session closed here as a client that
    left (it frees the session's env)."""

    def __init__(self, app: Any, *, idle_timeout: float):
        self.app, self.idle_timeout = app, idle_timeout

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "websocket" or scope["path"] != "/ws":
            await self.app(scope, receive, send)
            return
        await self.app(scope, *_Session(receive, send, self.idle_timeout).channels())


class _Session:
    """One `/ws` connection's `receive` and `send` as `SessionGuard` passes them on."""

    def __init__(self, receive: Callable, send: Callable, idle_timeout: float):
        self._receive, self._send, self.idle_timeout = receive, send, idle_timeout
        self.closed = False
        self._refusal: str | None = None  # OpenEnv's capacity refusal's reason, for the close after it

    def channels(self) -> tuple[Callable, Callable]:
        return self.receive, self.send

    async def send(self, message: dict) -> None:
        """Pass `message` on, reading OpenEnv's error frames (a capacity refusal, a closed session's refusal: the
        class docstring); after the session was closed here, or when the app closes a socket whose client has
        already gone (OpenEnv closes every session that ends), there is nothing to send to: dropped, not raised
        into the server's log."""
        if self.closed:
            return
        if message["type"] == "websocket.close" and self._refusal is not None:
            LOG.warning("/ws refused: %s", self._refusal)
            message = {"type": "websocket.close", "code": FULL_CLOSE_CODE, "reason": self._refusal}
        try:
            await self._send(message)
        except OSError:  # uvicorn's ClientDisconnected
            if message["type"] != "websocket.close":
                raise
            self.closed = True
            return
        if message["type"] == "websocket.close":
            self.closed = True
        elif message["type"] == "websocket.send":
            await self._read_error(message.get("text"))

    async def _read_error(self, text: str | None) -> None:
        """Act on an error frame of OpenEnv's that the client should see as a close: remember a capacity refusal's
        reason; close a session whose env refused a step as closed."""
        if not text or not text.startswith('{"type":"error"'):
            return
        data = json.loads(text).get("data", {})
        if data.get("code") == WSErrorCode.CAPACITY_REACHED:
            self._refusal = (
                f"server full: {data.get('active_sessions')} of --max-sessions {data.get('max_sessions')} "
                "sessions in use; try again later"
            )
        elif str(data.get("message", "")).startswith(SESSION_CLOSED):
            reason = "session closed: no reset or step for --idle-timeout, its env freed; connect again"
            LOG.warning("/ws %s", reason)
            await self.send({"type": "websocket.close", "code": IDLE_CLOSE_CODE, "reason": reason})

    async def receive(self) -> dict:
        """The client's next message, a binary frame as text; a disconnect once the session has been closed here
        (for its silence, with the reason sent here, or for its closed env)."""
        while True:
            if self.closed:
                return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}
            message = await self._next()
            if message["type"] != "websocket.receive" or message.get("text") is not None:
                return message
            data = message.get("bytes") or b""
            try:
                return {"type": "websocket.receive", "text": data.decode("utf-8")}
            except UnicodeDecodeError as error:
                await self.send(_error_frame(
                    f"a frame of {len(data)} bytes that is not UTF-8 text ({error.reason} at byte {error.start}): "
                    "send each message as one JSON object in a text frame",
                    "INVALID_FRAME",
                ))  # fmt: skip

    async def _next(self) -> dict:
        if not self.idle_timeout:
            return await self._receive()
        pending = asyncio.ensure_future(self._receive())
        done, _ = await asyncio.wait({pending}, timeout=self.idle_timeout)
        if done:
            return pending.result()
        pending.cancel()
        reason = f"no message for {self.idle_timeout:g} s (--idle-timeout): session closed, its slot freed"
        LOG.warning("/ws %s", reason)
        await self._send({"type": "websocket.close", "code": IDLE_CLOSE_CODE, "reason": reason})
        self.closed = True
        return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}


def _error_frame(message: str, code: str) -> dict:
    """A text frame of OpenEnv's error response (`{"type": "error", "data": {"message", "code"}}`)."""
    return {
        "type": "websocket.send",
        "text": json.dumps({"type": "error", "data": {"message": message, "code": code}}),
    }


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
