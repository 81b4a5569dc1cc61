"""`pettingllms serve` is a real OpenEnv server: OpenEnv's own client plays episodes against it over WebSocket, and
hostile actions and malformed requests get errors while the server stays up."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from chat_stand_in import send

import pettingllms
from pettingllms.sandbox import bwrap_available

pytest.importorskip("openenv")
pytest.importorskip("uvicorn")

from pettingllms.integrations.openenv_server import AnswerAction, PettingLLMsClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LOGS: dict[str, tempfile.TemporaryFile] = {}
"""Each running server's log (its stderr), by base URL."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _post(url: str, body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _serve(*args: str):
    """Start `pettingllms serve ARGS` on a free loopback port; yield its base URL; stop it."""
    port = _free_port()
    log = tempfile.TemporaryFile()  # a file, not a pipe: the server's log cannot fill a buffer and block it
    process = subprocess.Popen(
        [sys.executable, "-m", "pettingllms.cli", "serve", *args, "--port", str(port)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    LOGS[url] = log
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            log.seek(0)
            raise AssertionError(log.read().decode())
        try:
            if _get(url + "/health")[0] == 200:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, "the server did not come up"
        time.sleep(0.5)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def server():
    """plan-path-v0, the client acting for every agent."""
    yield from _serve("plan-path-v0")


@pytest.fixture(scope="module")
def server_with_oracle():
    """plan-path-v0, the client acting for `tool`, the solver for `plan`."""
    yield from _serve("plan-path-v0", "--others", "oracle", "--agent", "tool")


def _oracle_answers(seed: int) -> dict[str, str]:
    """The solver's answer of each agent of plan-path-v0 at the start of episode `seed` (they do not change until
    the episode is solved)."""
    import pettingllms

    env = pettingllms.make("plan-path-v0")
    env.reset(seed=seed)
    return {agent: env.unwrapped.solution(agent) for agent in env.possible_agents}


def test_oracle_episode_solves_with_the_client_acting_for_every_agent(server):
    answers = _oracle_answers(seed=3)
    with PettingLLMsClient(base_url=server) as client:
        result = client.reset(seed=3)
        acted = []
        while not result.done:
            agent = result.observation.agent
            assert result.observation.text
            acted.append(agent)
            result = client.step(AnswerAction(answer=answers[agent]))
        assert result.observation.info["success"] is True
        assert result.reward > 0
        state = client.state()
    assert set(acted) == set(answers)
    assert state.success and state.done and state.step_count == len(acted)
    assert state.env_id == "plan-path-v0" and state.episode_id
    assert all(total > 0 for total in state.returns.values())


def test_scripted_oracle_plays_the_others(server_with_oracle):
    with PettingLLMsClient(base_url=server_with_oracle) as client:
        result = client.reset(seed=1)
        assert result.observation.agent == "tool"
        result = client.step(AnswerAction(answer=_oracle_answers(seed=1)["tool"]))
        assert result.done and result.observation.info["success"] is True


@pytest.mark.parametrize("hostile", ["R " * 50_000, "\x00\x01\udcff\ufffe" * 1000 + "<answer>"])
def test_hostile_action_gets_the_error_and_penalty_and_the_server_stays_up(server, hostile):
    with PettingLLMsClient(base_url=server) as client:
        client.reset(seed=0)
        result = client.step(AnswerAction(answer=hostile))
        assert result.observation.info["error"]
        assert result.observation.info["parse_error"] is True
        assert result.reward < 0
        assert not result.done
    assert _get(server + "/health")[0] == 200


def test_concurrent_sessions_are_independent(server):
    answers = _oracle_answers(seed=5)
    with PettingLLMsClient(base_url=server) as one, PettingLLMsClient(base_url=server) as two:
        first = one.reset(seed=5)
        two.reset(seed=6)
        two.step(AnswerAction(answer="garbage"))
        result = first
        while not result.done:
            result = one.step(AnswerAction(answer=answers[result.observation.agent]))
        assert result.observation.info["success"] is True
        state_one, state_two = one.state(), two.state()
    assert state_one.episode_id != state_two.episode_id
    assert state_two.step_count == 1 and not state_two.done and not state_two.success


def test_step_after_the_episode_is_refused(server_with_oracle):
    with PettingLLMsClient(base_url=server_with_oracle) as client:
        client.reset(seed=1)
        client.step(AnswerAction(answer=_oracle_answers(seed=1)["tool"]))
        with pytest.raises(RuntimeError, match="call reset"):
            client.step(AnswerAction(answer="<answer>R</answer>"))


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"action": {"wrong": 1}}', b'{"action": {"answer": 5}}', b"\xff\xfe\x00"],
)
def test_malformed_http_request_gets_an_error_and_the_server_stays_up(server, body):
    status, reply = _post(server + "/step", body)
    assert status in (400, 422), reply  # 400: an unreadable body; 422: JSON that is no action
    assert "detail" in json.loads(reply)
    assert _get(server + "/health")[0] == 200


def _log(url: str) -> str:
    LOGS[url].seek(0)
    return LOGS[url].read().decode()


def test_http_step_without_a_session_is_refused_with_409_and_what_to_do(server):
    """OpenEnv's HTTP /step builds a fresh env per request: with no episode the step is refused, not played, with
    a client error that says how episodes are played, and one line in the server's log, not a traceback."""
    _post(server + "/reset", json.dumps({"seed": 3}).encode())
    status, reply = _post(server + "/step", json.dumps({"action": {"answer": "<answer>R</answer>"}}).encode())
    assert status == 409, reply
    assert "WebSocket" in json.loads(reply)["detail"] and "call reset" in json.loads(reply)["detail"]
    assert _get(server + "/health")[0] == 200
    log = _log(server)
    assert "-> 409: plan-path-v0: no episode in progress" in log and "Traceback" not in log


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"seed": 0, "options": {"split": "test"}}, "split='test'"),
        ({"seed": 0, "options": {"level": 3}}, "no reset option(s) ['level']"),
        ({"seed": 0, "options": "eval"}, "must be a JSON object"),
        ({"seed": 0, "colour": "red"}, "unknown field(s) ['colour']"),
    ],
)
def test_a_bad_reset_over_http_is_a_400_naming_what_is_wrong(server, body, named):
    status, reply = _post(server + "/reset", json.dumps(body).encode())
    assert status == 400, reply
    assert named in json.loads(reply)["detail"]
    assert _get(server + "/state")[0] == 200 and _get(server + "/health")[0] == 200


def test_a_client_picks_the_split_and_plays_the_evaluation_suites_first_episode(server):
    """OpenEnv's own client resets on the eval split with the suite's seed and options: the first observation is
    the one `pettingllms-eval` plays (and differs from the train split's)."""
    from pettingllms.eval.suites import build_suite

    suite = build_suite("plan-path-v0", 2, 0, {}, workflow="mas", split="eval")
    episode = suite.episodes[1]
    env = pettingllms.make("plan-path-v0")
    env.reset(seed=episode.seed, options=dict(episode.options))
    expected = str(env.observe(env.agent_selection))
    with PettingLLMsClient(base_url=server) as client:
        served = client.reset(seed=episode.seed, options=dict(episode.options)).observation.text
        train = client.reset(seed=episode.seed, options={"split": "train"}).observation.text
        with pytest.raises(RuntimeError, match="split='nope'"):
            client.reset(seed=0, options={"split": "nope"})
    assert served == expected and train != expected


def test_bad_arguments_fail_before_serving(capsys):
    from pettingllms.cli import main

    assert main(["serve", "plan-path-v0", "--port", "1", "--agent", "tool"]) == 2
    assert main(["serve", "plan-path-v0", "--port", "1", "--others", "oracle", "--agent", "nobody"]) == 2
    assert main(["serve", "plan-path-v9", "--port", "1"]) == 2
    assert (
        main(["serve", "code-v0", "--port", "1", "--sandbox-workers", "0"]) == 2
    )  # before any worker starts


def test_random_others_are_seeded_by_the_reset_seed():
    """`--others random` draws from an rng seeded at reset: the same seed replays the same episode."""
    from pettingllms.integrations.openenv_server import PettingLLMsEnvironment

    def episode(seed: int) -> list[str]:
        env = PettingLLMsEnvironment("plan-path-v0", others="random", agent="tool")
        texts = [env.reset(seed=seed).text]
        for _ in range(3):
            observation = env.step(AnswerAction(answer="<answer>U</answer>"))
            texts.append(observation.text)
            if observation.done:
                break
        return texts

    assert episode(4) == episode(4)


@pytest.mark.parametrize("env_id", sorted(pettingllms.registry))
def test_every_env_is_served_and_its_observations_are_json(env_id):
    """Each registered env plays behind the OpenEnv `Environment`; its observations, hostile steps included,
    serialize to JSON for the wire."""
    from pettingllms.integrations.openenv_server import AgentObservation, PettingLLMsEnvironment

    env = PettingLLMsEnvironment(env_id)
    first = env.reset(seed=0)
    assert first.agent in env.raw.possible_agents and first.text and first.reward is None
    hostile = env.step(AnswerAction(answer="\x00\udcff garbage" * 100))
    for observation in (first, hostile):
        assert AgentObservation.model_validate_json(observation.model_dump_json()) == observation
    assert {"reward_team", "reward_local", "success", "turn"} <= set(hostile.info)
    assert env.state.step_count == 1 and env.state.env_id == env_id


def test_malformed_websocket_message_gets_an_error_and_the_server_stays_up(server):
    """Bad JSON or a bad step gets an error and the session goes on; JSON that is no object (OpenEnv 0.2.1 reads
    its `type` outside its per-message handler) gets an error and ends that session only."""
    from websockets.sync.client import connect

    ws_url = server.replace("http://", "ws://") + "/ws"
    with connect(ws_url) as socket_:
        for message in ("{not json", json.dumps({"type": "step", "data": {"wrong": 1}})):
            socket_.send(message)
            assert json.loads(socket_.recv(timeout=30))["type"] == "error"
        socket_.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        reply = json.loads(socket_.recv(timeout=30))
    assert reply["type"] == "observation" and reply["data"]["observation"]["agent"]
    with connect(ws_url) as socket_:
        socket_.send("[]")
        assert json.loads(socket_.recv(timeout=30))["type"] == "error"
    assert _get(server + "/health")[0] == 200


def test_a_textarena_game_is_served():
    """`textarena/<game>` ids are served too (in a server process: resolving one registers it in that process)."""
    pytest.importorskip("textarena")
    served = _serve("textarena/TicTacToe-v0")
    url = next(served)
    try:
        with PettingLLMsClient(base_url=url) as client:
            first = client.reset(seed=0)
            result = client.step(AnswerAction(answer="\x00 not a move"))
    finally:
        served.close()  # stops the server
    assert first.observation.agent == "player_0" and first.observation.text
    assert result.observation.agent in ("player_0", "player_1")
    assert {"reward_team", "reward_local", "success", "turn"} <= set(result.observation.info)


class _ScriptedEndpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible stand-in: every chat completion answers `answer`; the prompts it received are kept."""

    answer = ""
    prompts: list[str] = []

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).prompts.append(body["messages"][-1]["content"])
        choices = [
            {"index": i, "message": {"role": "assistant", "content": type(self).answer}}
            for i in range(body["n"])
        ]
        payload = json.dumps({"choices": choices}).encode()
        send(self, payload)

    def log_message(self, *args):
        pass


def test_an_endpoint_plays_the_others_and_a_tier_sets_the_env():
    """`--others openai:MODEL@URL --tier hard`: the endpoint answers for `plan` from plan's own observation of the
    hard tier's grid, and with the solver's answers on both sides the episode solves."""
    env = pettingllms.make("plan-path-v0", tier="hard")
    env.reset(seed=5)
    answers = {agent: env.unwrapped.solution(agent) for agent in env.possible_agents}
    assert env.agent_selection == "tool"  # the replay: tool proposes first, then plan answers
    tool_prompt = str(env.observe("tool"))
    env.step(answers["tool"])
    plan_prompt = str(env.observe("plan"))
    _ScriptedEndpoint.answer, _ScriptedEndpoint.prompts = answers["plan"], []
    endpoint = ThreadingHTTPServer(("127.0.0.1", 0), _ScriptedEndpoint)
    threading.Thread(target=endpoint.serve_forever, daemon=True).start()
    served = _serve(
        "plan-path-v0",
        "--tier",
        "hard",
        "--others",
        f"openai:stand-in@http://127.0.0.1:{endpoint.server_address[1]}/v1",
        "--agent",
        "tool",
    )
    url = next(served)
    try:
        with PettingLLMsClient(base_url=url) as client:
            result = client.reset(seed=5)
            assert result.observation.agent == "tool" and result.observation.text == tool_prompt
            while not result.done:
                result = client.step(AnswerAction(answer=answers["tool"]))
            state = client.state()
    finally:
        served.close()
        endpoint.shutdown()
        endpoint.server_close()
    assert state.success and result.observation.info["success"] is True
    assert _ScriptedEndpoint.prompts and _ScriptedEndpoint.prompts[0] == plan_prompt


def test_a_bad_others_spec_or_tier_fails_before_serving(capsys):
    from pettingllms.cli import main

    assert main(["serve", "plan-path-v0", "--port", "1", "--others", "openai:no-url"]) == 2
    assert "is not openai:MODEL@URL" in capsys.readouterr().err
    assert main(["serve", "plan-path-v0", "--port", "1", "--tier", "legendary"]) == 2
    assert "tier='legendary' is not a tier of plan-path-v0" in capsys.readouterr().err


def _closed_with(ws_url: str) -> tuple[int, str]:
    """Connect to `ws_url` and read until the server closes: its close code and reason."""
    from websockets.sync.client import connect

    with connect(ws_url) as socket_:
        return _read_until_closed(socket_)[:2]


def _read_until_closed(socket_) -> tuple[int, str, list[dict]]:
    """Read `socket_` until the server closes it: the close code, its reason and the frames read before it."""
    from websockets.exceptions import ConnectionClosed

    frames = []
    while True:
        try:
            frames.append(json.loads(socket_.recv(timeout=30)))
        except ConnectionClosed as closed:
            return closed.rcvd.code, closed.rcvd.reason, frames


def test_idle_clients_cannot_hold_a_shared_server_and_a_refused_client_reads_why():
    """--max-sessions 2: two clients reset and stay silent; a third is closed with 1013 and the limit, then gets in
    once the first two have been idle for --idle-timeout (each closed with 4408 and the reason)."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    for url in _serve("plan-path-v0", "--max-sessions", "2", "--idle-timeout", "3"):
        ws_url = url.replace("http://", "ws://") + "/ws"
        idle = [connect(ws_url), connect(ws_url)]
        for socket_ in idle:
            socket_.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert json.loads(socket_.recv(timeout=30))["type"] == "observation"
        code, reason = _closed_with(ws_url)
        assert code == 1013 and "2 of --max-sessions 2" in reason and "try again later" in reason
        for socket_ in idle:
            with pytest.raises(ConnectionClosed) as closed:
                socket_.recv(timeout=30)
            assert closed.value.rcvd.code == 4408 and "--idle-timeout" in closed.value.rcvd.reason
            socket_.close()
        with connect(ws_url) as socket_:
            socket_.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert json.loads(socket_.recv(timeout=30))["type"] == "observation"
        assert "Traceback" not in _log(url)


def test_a_frame_that_is_not_utf8_text_gets_what_was_wrong_and_the_session_goes_on(server):
    from websockets.sync.client import connect

    with connect(server.replace("http://", "ws://") + "/ws") as socket_:
        socket_.send(b"\xff\xfe{")
        error = json.loads(socket_.recv(timeout=30))
        assert error["type"] == "error" and error["data"]["code"] == "INVALID_FRAME"
        assert "not UTF-8 text" in error["data"]["message"]
        socket_.send(
            json.dumps({"type": "reset", "data": {"seed": 0}}).encode()
        )  # UTF-8 bytes are read as text
        assert json.loads(socket_.recv(timeout=30))["type"] == "observation"


@pytest.mark.skipif(not bwrap_available(), reason="code-v0 runs programs in bubblewrap")
def test_four_looping_clients_delay_a_quick_clients_step_by_at_most_one_time_limit_a_wave():
    """Issue 61: four sessions submit `while True: pass` as the coder, step after step; a fifth submits a right
    program once they have run a while. Its 10 hidden tests run in waves of --sandbox-workers programs; each
    program waits at most for a worker to free, one test's time limit (2 s), so the step waits at most 2 s per
    wave (before: 28.1 s, every loop queued ahead of it)."""
    import math
    from concurrent.futures import ThreadPoolExecutor

    workers, limit = 2, 2.0
    local = pettingllms.make("code-v0")
    local.reset(seed=3)
    right, waves = local.unwrapped.solution("coder"), math.ceil(len(local.unwrapped.problem.tests) / workers)
    stop = threading.Event()

    def loop_forever(url: str) -> int:
        steps = 0
        with PettingLLMsClient(base_url=url) as client:
            while not stop.is_set():
                result = client.reset(seed=steps)
                while not result.done and not stop.is_set():
                    result = client.step(AnswerAction(answer="```python\nwhile True:\n    pass\n```"))
                    steps += 1
        return steps

    for url in _serve("code-v0", "--sandbox-workers", str(workers), "--max-sessions", "5"):
        with ThreadPoolExecutor(max_workers=4) as pool:
            loopers = [pool.submit(loop_forever, url) for _ in range(4)]
            time.sleep(3 * limit)  # every looping session has had programs run
            with PettingLLMsClient(base_url=url) as quick:
                quick.reset(seed=3)
                started = time.perf_counter()
                result = quick.step(AnswerAction(answer=right))
                waited = time.perf_counter() - started
            stop.set()
            assert all(looper.result() > 0 for looper in loopers)
        info = result.observation.info
        assert info["hidden_pass_ratio"] == 1.0
        assert info["queue_wait_s"] <= waves * limit + 1.0, (info["queue_wait_s"], waves)
        assert waited <= waves * limit + 3.0, waited
        print(
            f"quick client's step: {waited:.1f} s, {info['queue_wait_s']:.1f} s of it queued ({waves} waves)"
        )


def test_the_openenv_installed_is_the_supported_0_10():
    """The `openenv` extra is OpenEnv 0.10 (`openenv`, not the retired `openenv-core`): these tests run under it."""
    from importlib.metadata import PackageNotFoundError, version

    assert version("openenv").startswith("0.10."), version("openenv")
    with pytest.raises(PackageNotFoundError):
        version("openenv-core")  # the two distributions install the same `openenv/` package


def test_a_session_whose_env_was_closed_refuses_reset_and_step_by_name():
    from pettingllms.integrations.openenv_server import PettingLLMsEnvironment, SessionClosedError

    env = PettingLLMsEnvironment("plan-path-v0")
    env.reset(seed=0)
    env.close()
    env.close()  # twice is once
    for call in (lambda: env.step(AnswerAction(answer="<answer>R</answer>")), lambda: env.reset(seed=1)):
        with pytest.raises(SessionClosedError, match="session closed: .*connect a new session"):
            call()


def test_a_session_freed_by_openenvs_reaper_refuses_its_step_and_its_slot_goes_to_another():
    """OpenEnv 0.10's reaper frees a session with no reset or step for --idle-timeout (here one that only asks
    for its state, so the socket is never silent) and closes its env, leaving the socket open. The slot is free at
    once (a new client gets in; until then one is refused with 1013), and the old client's next step is refused
    with the reason and its socket closed (4408), not played on a closed env."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    for url in _serve("plan-path-v0", "--max-sessions", "1", "--idle-timeout", "2"):
        ws_url = url.replace("http://", "ws://") + "/ws"
        with connect(ws_url) as old:
            old.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert json.loads(old.recv(timeout=30))["type"] == "observation"
            refusals, deadline = 0, time.monotonic() + 60
            # the old client keeps its socket busy; a new one tries until the reaper frees the slot
            while True:
                old.send(json.dumps({"type": "state"}))
                assert json.loads(old.recv(timeout=30))["type"] == "state"
                new = connect(ws_url)
                with contextlib.suppress(ConnectionClosed):  # a refused client may be closed before it sends
                    new.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
                code, reason, frames = _read_until_closed_or_first(new)
                if code is None:
                    break
                new.close()
                assert code == 1013 and "1 of --max-sessions 1" in reason, (code, reason)
                assert frames and frames[0]["data"]["code"] == "CAPACITY_REACHED"
                refusals += 1
                assert time.monotonic() < deadline, "the reaper never freed the idle session"
                time.sleep(0.5)
            assert frames[0]["type"] == "observation"
            old.send(json.dumps({"type": "step", "data": {"answer": "<answer>R</answer>"}}))
            code, reason, frames = _read_until_closed(old)
            new.close()
        assert frames[0]["type"] == "error" and frames[0]["data"]["message"].startswith("session closed: ")
        assert code == 4408 and "--idle-timeout" in reason
        assert refusals >= 1 and "Traceback" not in _log(url)


def _read_until_closed_or_first(socket_) -> tuple[int | None, str, list[dict]]:
    """The first frame of `socket_` when it is an observation (code None), else what `_read_until_closed` reads."""
    from websockets.exceptions import ConnectionClosed

    try:
        first = json.loads(socket_.recv(timeout=30))
    except ConnectionClosed as closed:
        return closed.rcvd.code, closed.rcvd.reason, []
    if first["type"] == "observation":
        return None, "", [first]
    code, reason, frames = _read_until_closed(socket_)
    return code, reason, [first, *frames]


def test_state_and_schema_report_the_whole_episode_state(server):
    """OpenEnv 0.10's `state_cls`: `/schema` describes `EpisodeState` and HTTP `/state` answers with all of it."""
    status, reply = _get(server + "/schema")
    assert status == 200
    fields = set(json.loads(reply)["state"]["properties"])
    assert {"episode_id", "step_count", "env_id", "agent", "turn", "success", "done", "returns"} <= fields
    status, reply = _get(server + "/state")
    assert status == 200 and json.loads(reply)["env_id"] == "plan-path-v0"


def test_openenv_clients_play_an_episode_async_and_sync(server):
    """OpenEnv 0.10's client, awaited in an event loop and through its `.sync()` wrapper."""
    import asyncio

    answers = _oracle_answers(seed=3)

    async def play() -> tuple[bool, int]:
        async with PettingLLMsClient(base_url=server) as client:
            result = await client.reset(seed=3)
            while not result.done:
                result = await client.step(AnswerAction(answer=answers[result.observation.agent]))
            state = await client.state()
        return result.observation.info["success"], state.step_count

    success, steps = asyncio.run(play())
    assert success is True and steps >= 2
    with PettingLLMsClient(base_url=server).sync() as client:
        result = client.reset(seed=3)
        while not result.done:
            result = client.step(AnswerAction(answer=answers[result.observation.agent]))
        assert result.observation.info["success"] is True and client.state().step_count == steps
