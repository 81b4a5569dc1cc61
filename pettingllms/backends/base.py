"""The policy-backend interface, and a scripted backend for tests and baselines.

A backend turns prompts (agents' observations) into sampled completions. The rollout engine calls
`generate(prompts, n=K, sampling=...)` once per agent step for all instances at once and gets, for each prompt,
`n` `Generation`s. Backends that serve a trainable model also return token ids (and optionally log-probs) so that
the update needs no re-tokenization. Implementations: `ScriptedPolicy` (here), the in-process Hugging Face
backend (`pettingllms.backends.hf`); vLLM, OpenAI-compatible and Ray-placed servers plug in behind the same
method.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclasses.dataclass(frozen=True)
class SamplingConfig:
    """Sampling settings of one policy for one phase (training or evaluation).

    `temperature == 0` means greedy decoding. `top_k == 0` disables top-k (transformers otherwise applies 50).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 64
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature={self.temperature} must be >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p={self.top_p} must be in (0, 1]")
        if self.top_k < 0 or self.max_new_tokens < 1:
            raise ValueError(f"top_k={self.top_k} must be >= 0 and max_new_tokens={self.max_new_tokens} >= 1")


@dataclasses.dataclass(frozen=True)
class Generation:
    """One sampled completion. Token ids are empty for backends that serve no trainable model."""

    text: str
    prompt_ids: tuple[int, ...] = ()
    completion_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] | None = None


@runtime_checkable
class StatePolicy(Protocol):
    """A policy that reads the environments' state rather than the prompt: the random and oracle baselines.

    The rollout engine calls `generate_from_state(envs, agent, n)` instead of `generate` for it: for each env (whose
    `agent_selection` is `agent`), `n` `Generation`s. Such a policy serves no trainable model.
    """

    def generate_from_state(self, envs: Sequence[Any], agent: str, n: int) -> list[list[Generation]]: ...


@runtime_checkable
class SeededBackend(Protocol):
    """A backend whose random draws all come from one generator of its own, in this process or its server's: a
    torch `Generator` (`HFPolicy`) or a NumPy `Generator` (vLLM request seeds, scripted and random policies).

    `reseed(seed)` starts the generator afresh from `seed` (evaluation reseeds every chunk of episodes);
    `get_rng_state()` / `set_rng_state(state)` read and restore it exactly (checkpoints; the trainer's
    evaluations leave the training generators as they were). Backends without it (an OpenAI-compatible
    endpoint) draw nothing the caller can replay.
    """

    def reseed(self, seed: int) -> None: ...

    def get_rng_state(self) -> Any: ...

    def set_rng_state(self, state: Any) -> None: ...


@runtime_checkable
class PolicyBackend(Protocol):
    """Anything that samples completions: `generate(prompts, n, sampling) -> [[Generation] * n] * len(prompts)`."""

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig
    ) -> list[list[Generation]]: ...


class NumpySeeded:
    """`SeededBackend` for a backend whose draws come from `self.rng`, a NumPy `Generator`."""

    rng: np.random.Generator

    def reseed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def get_rng_state(self) -> Any:
        return self.rng.bit_generator.state

    def set_rng_state(self, state: Any) -> None:
        self.rng.bit_generator.state = state


class ScriptedPolicy(NumpySeeded):
    """A backend driven by a Python function, for tests, baselines and demos.

    `respond(prompt, rng) -> str` is called `n` times per prompt with one seeded `numpy.random.Generator`, so
    the same seed gives the same completions.
    """

    def __init__(self, respond: Callable[[str, np.random.Generator], str], seed: int = 0):
        self.respond = respond
        self.rng = np.random.default_rng(seed)

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingConfig) -> list[list[Generation]]:
        return [[Generation(self.respond(prompt, self.rng)) for _ in range(n)] for prompt in prompts]


def cut_at_stop(text: str, stops: Sequence[str]) -> str | None:
    """`text` up to and including the earliest-ending stop string, or None if no stop string occurs."""
    ends = [text.find(stop) + len(stop) for stop in stops if stop and stop in text]
    return text[: min(ends)] if ends else None
