"""`OpenAIPolicy`: a policy served by any OpenAI-compatible chat endpoint (vLLM's server, a hosted API).

For evaluation and for frozen teammates (a trained coder with an API tester): it returns text only, no token ids,
so it cannot be trained. Each prompt is one chat request (`messages=[{"role": "user", "content": prompt}]`) asking
for `n` choices with the policy's sampling (`temperature`, `top_p`, `max_tokens`, `stop`; `top_k` is sent as an
extra field only when set, as vLLM accepts it; `seed` when the caller gives request seeds and the sampling is
not greedy). Requests for different prompts run concurrently, at most `max_concurrency` in flight across every
call (calls may overlap: `serves_concurrently`). As with the model backends, a completion that ended at a stop string keeps it at the end of its
text: OpenAI-style servers drop it, so it is restored when the server names the matched string (vLLM's
`stop_reason`, SGLang's `matched_stop`); a server that does not say which stop string matched returns the cut text.

A server applies stop strings at their first occurrence wherever it is, inside a fenced code block or a thinking
block too, unlike the model backends, which follow the stop rule of `pettingllms.backends.base.cut_at_stop`
(a tool agent's program that prints `<answer>...</answer>` is cut inside its code by such a server). With
`local_stops=True` the stop strings are not sent: the server writes to the end of its turn (or `max_tokens`) and
the text is cut here under the stop rule, at the cost of the tokens generated after the answer. A set
`enable_thinking` is sent as `chat_template_kwargs` (vLLM's and SGLang's servers render it into the template);
`Generation.truncated` is the server's `finish_reason == "length"`. The prompt is rendered by the server, so a
completion is read as starting outside any thinking block: for a model whose template opens `<think>` in the
prompt, run the server's reasoning parser (vLLM's `--reasoning-parser`), which returns the answer alone.

Failures: connection errors, timeouts, HTTP 408/409/429 and 5xx are retried up to `max_retries` times with
exponential backoff (`backoff * 2**attempt` seconds, honouring a `Retry-After` header); other HTTP errors, and
answers without `n` choices, raise `EndpointError` with the status and the server's message. Standard library only.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pettingllms.backends.base import Generation, SamplingConfig, cut_at_stop
from pettingllms.core.errors import PettingLLMsError

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class EndpointError(PettingLLMsError):
    """The endpoint refused a request, answered nonsense, or kept failing after every retry."""


class OpenAIPolicy:
    """See the module docstring.

    Args:
        base_url: the API root, e.g. "http://127.0.0.1:8000/v1".
        model: the served model's name.
        api_key: sent as a bearer token when given.
        timeout: seconds per HTTP request.
        max_retries: retries after the first attempt, for retryable failures.
        backoff: the first retry's delay in seconds (doubling each time).
        max_concurrency: requests in flight at once.
        local_stops: apply stop strings here under the stop rule instead of sending them to the server.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_concurrency: int = 8,
        local_stops: bool = False,
    ):
        if timeout <= 0 or max_retries < 0 or backoff < 0 or max_concurrency < 1:
            raise ValueError(
                f"timeout={timeout} > 0, max_retries={max_retries} >= 0, backoff={backoff} >= 0 and "
                f"max_concurrency={max_concurrency} >= 1 are required"
            )
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url={base_url!r} must be an http(s) URL such as http://127.0.0.1:8000/v1")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_concurrency = max_concurrency
        self.local_stops = local_stops
        self.requests = 0
        self.retries = 0
        self._slots = threading.BoundedSemaphore(max_concurrency)

    serves_concurrently = True

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig, seeds: Sequence[int] | None = None
    ) -> list[list[Generation]]:
        """`n` completions per prompt, one HTTP request per prompt (`seed` set from `seeds[i]` where given)."""
        if not prompts:
            return []
        if seeds is not None and len(seeds) != len(prompts):
            raise ValueError(f"{len(seeds)} seeds for {len(prompts)} prompts")
        request_seeds = [None] * len(prompts) if seeds is None else list(seeds)
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(prompts))) as executor:
            return list(
                executor.map(
                    lambda job: self._complete(job[0], n, sampling, job[1]), zip(prompts, request_seeds)
                )
            )

    def _complete(self, prompt: str, n: int, sampling: SamplingConfig, seed: int | None) -> list[Generation]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": str(prompt)}],
            "n": n,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_new_tokens,
        }
        if seed is not None and sampling.temperature > 0:
            body["seed"] = int(seed)
        if sampling.stop and not self.local_stops:
            body["stop"] = list(sampling.stop)
        if sampling.top_k:
            body["top_k"] = sampling.top_k
        if sampling.enable_thinking is not None:  # vLLM's and SGLang's servers pass these to the template
            body["chat_template_kwargs"] = {"enable_thinking": sampling.enable_thinking}
        with self._slots:
            answer = self._post(body)
        choices = sorted(answer.get("choices") or [], key=lambda choice: choice.get("index", 0))
        if len(choices) != n:
            raise EndpointError(f"{self.url} returned {len(choices)} choices for n={n}: {str(answer)[:300]}")
        if self.local_stops:
            cuts = [
                cut_at_stop(_text(choice), sampling.stop) if sampling.stop else None for choice in choices
            ]
            return [
                Generation(
                    _text(choice) if cut is None else cut, truncated=cut is None and _length_cut(choice)
                )
                for cut, choice in zip(cuts, choices)
            ]
        return [
            Generation(_with_stop(_text(choice), choice, sampling.stop), truncated=_length_cut(choice))
            for choice in choices
        ]

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        for attempt in range(self.max_retries + 1):
            self.requests += 1
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as error:
                message = error.read().decode(errors="replace")[:500]
                if error.code not in RETRYABLE_STATUS or attempt == self.max_retries:
                    raise EndpointError(f"{self.url} answered HTTP {error.code}: {message}") from error
                delay = _retry_after(error.headers.get("Retry-After"), self.backoff * 2**attempt)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                if attempt == self.max_retries:
                    raise EndpointError(
                        f"{self.url} failed {attempt + 1} time(s), last: {getattr(error, 'reason', error)}"
                    ) from error
                delay = self.backoff * 2**attempt
            except json.JSONDecodeError as error:
                raise EndpointError(f"{self.url} answered with invalid JSON: {error}") from error
            self.retries += 1
            time.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")


def _text(choice: dict[str, Any]) -> str:
    message = choice.get("message") or {}
    return str(message.get("content") or choice.get("text") or "")


def _length_cut(choice: dict[str, Any]) -> bool:
    """Whether the server ended the choice at `max_tokens` (`finish_reason` "length")."""
    return choice.get("finish_reason") == "length"


def _with_stop(text: str, choice: dict[str, Any], stops: Sequence[str]) -> str:
    """`text` with the stop string that ended it appended (servers cut it off), when that string is known."""
    if choice.get("finish_reason") != "stop" or not stops or any(text.endswith(stop) for stop in stops):
        return text
    matched = choice.get("stop_reason", choice.get("matched_stop"))
    return text + matched if isinstance(matched, str) and matched in stops else text


def _retry_after(header: str | None, default: float) -> float:
    try:
        return max(0.0, float(header)) if header is not None else default
    except ValueError:
        return default
