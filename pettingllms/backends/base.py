"""The policy-backend interface, and a scripted backend for tests and baselines.

A backend turns prompts (agents' observations) into sampled completions. The rollout engine calls
`generate(prompts, n=K, sampling=..., seeds=...)` with the prompts that are ready (one state's, or several
episodes' batched together) and gets, for each prompt, `n` `Generation`s. `seeds` (one per prompt) make a prompt's
completions depend on its own seed alone, not on the other prompts of the call or on earlier calls: the engine
then gets the same samples whatever order its requests are served in. A backend whose `generate` has no `seeds`
parameter is called without it and draws from its own generator (`call_seeded`). Backends that serve a trainable model also return token ids (and optionally log-probs) so that
the update needs no re-tokenization. Implementations: `ScriptedPolicy` (here), the in-process Hugging Face
backend (`pettingllms.backends.hf`); vLLM, OpenAI-compatible and Ray-placed servers plug in behind the same
method.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclasses.dataclass(frozen=True)
class SamplingConfig:
    """Sampling settings of one policy for one phase (training or evaluation).

    `temperature == 0` means greedy decoding. `top_k == 0` disables top-k (transformers otherwise applies 50).
    `enable_thinking` is passed to the chat template of a model that reads it (Qwen3: True lets the model open a
    `<think>` block, False renders an empty one into the prompt so that the model answers at once); None renders
    the template's default and is the only value allowed for templates without the switch.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 64
    stop: tuple[str, ...] = ()
    enable_thinking: bool | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature={self.temperature} must be >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p={self.top_p} must be in (0, 1]")
        if self.top_k < 0 or self.max_new_tokens < 1:
            raise ValueError(f"top_k={self.top_k} must be >= 0 and max_new_tokens={self.max_new_tokens} >= 1")


@dataclasses.dataclass(frozen=True)
class Generation:
    """One sampled completion. Token ids are empty for backends that serve no trainable model.

    `text` is everything generated (thinking included): what a trainer trains on is `completion_ids`, all of it.
    `action` is what the env receives: `text` without its thinking (`strip_thinking`). `truncated` is True when
    the completion was cut by the length budget (`max_new_tokens`) rather than ended by an eos token or a stop
    string. `thinking_open` is True when the prompt left a thinking block open (a chat template that ends the
    generation prompt with `<think>`: `opens_thinking`), so the completion starts inside it.
    """

    text: str
    prompt_ids: tuple[int, ...] = ()
    completion_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] | None = None
    truncated: bool = False
    thinking_open: bool = False

    @property
    def action(self) -> str:
        return strip_thinking(self.text, thinking_open=self.thinking_open)


def strip_thinking(text: str, *, thinking_open: bool = False) -> str:
    """`text` without its thinking, read by the blocks of the stop rule (`cut_at_stop`): what follows the last
    thinking block when the text holds one (leading whitespace dropped), else `text` itself. A thinking block
    that never closes (a completion cut by its budget while thinking) leaves the empty string: the answer was
    never given. As in the stop rule, `<think>` inside a fenced block is plain text, and so is `</think>` inside a
    fence or outside any thinking block; `thinking_open` starts the reading inside a thinking block (the prompt
    opened it: `opens_thinking`).

    >>> strip_thinking("<think>maybe <answer>L</answer>?</think>\\n\\n<answer>R</answer>")
    '<answer>R</answer>'
    >>> strip_thinking("<think>still thinking <answer>L</answer>")
    ''
    >>> strip_thinking("```python\\nprint('<think>')\\n```"), strip_thinking("a</think>b", thinking_open=True)
    ("```python\\nprint('<think>')\\n```", 'b')
    """
    start = answer_start(text, thinking_open=thinking_open)
    if start is None:
        return ""
    return text[start:].lstrip() if start else text


def answer_start(text: str, *, thinking_open: bool = False) -> int | None:
    """Where the answer of `text` begins under the stop rule's blocks: the end of the last thinking block that
    closes (0 when none does), or None when `text` ends inside a thinking block. Linear in `len(text)`."""
    markers = _Markers(text)
    mode, position, start = (THINK if thinking_open else OUTSIDE), 0, 0
    while (marker := _next_marker(markers, position, mode)) is not None:
        _, position, after = marker
        if mode == THINK:
            start = position
        mode = after
    return None if mode == THINK else start


def opens_thinking(prompt: str) -> bool:
    """Whether a rendered prompt leaves a thinking block open for the completion: it ends with `<think>` (then
    whitespace), as the templates of Qwen3-Thinking-2507 and DeepSeek-R1 end their generation prompt.

    >>> opens_thinking("<|im_start|>assistant\\n<think>\\n"), opens_thinking("assistant\\n<think>\\n\\n</think>\\n\\n")
    (True, False)
    """
    return prompt.rstrip().endswith(THINK_OPEN)


def prompt_ids_open_thinking(tokenizer: Any, ids: Sequence[int]) -> bool:
    """`opens_thinking` of a prompt given as token ids: its last 8 tokens decoded with special tokens kept (a
    template's `<think>` may be one)."""
    return opens_thinking(tokenizer.decode(list(ids[-8:]), skip_special_tokens=False))


@runtime_checkable
class StatePolicy(Protocol):
    """A policy that reads the environments' state rather than the prompt: the random and oracle baselines.

    The rollout engine calls `generate_from_state(envs, agent, n)` instead of `generate` for it: for each env (whose
    `agent_selection` is `agent`), `n` `Generation`s; with `seeds=` where the method takes them (`call_seeded`).
    Such a policy serves no trainable model.
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
    """Anything that samples completions: `generate(prompts, n, sampling) -> [[Generation] * n] * len(prompts)`,
    optionally taking `seeds` (module docstring). `serves_concurrently = True` on a backend tells the engine that
    overlapping calls are safe and batched by the backend itself (vLLM's engine loop, an HTTP endpoint)."""

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig
    ) -> list[list[Generation]]: ...


CALLING_THREAD = "calling-thread"
"""A backend `lane` (read by `pettingllms.rollout.scheduler`): its calls run in the thread that runs the episodes."""


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

    `respond(prompt, rng) -> str` is called `n` times per prompt with a seeded `numpy.random.Generator`: the
    policy's own (same seed, same calls, same completions), or with `seeds` one generator per prompt seeded by its
    seed (same seed, same completions, whatever else the call holds).
    """

    def __init__(self, respond: Callable[[str, np.random.Generator], str], seed: int = 0):
        self.respond = respond
        self.rng = np.random.default_rng(seed)

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig, seeds: Sequence[int] | None = None
    ) -> list[list[Generation]]:
        generators = request_generators(self.rng, seeds, len(prompts))
        return [
            [Generation(self.respond(prompt, rng)) for _ in range(n)]
            for prompt, rng in zip(prompts, generators, strict=True)
        ]


def request_generators(
    own: np.random.Generator, seeds: Sequence[int] | None, count: int
) -> list[np.random.Generator]:
    """One NumPy generator per prompt: seeded by `seeds[i]`, or the backend's `own` generator for every prompt when
    `seeds` is None."""
    if seeds is None:
        return [own] * count
    if len(seeds) != count:
        raise ValueError(f"{len(seeds)} seeds for {count} prompts")
    return [np.random.default_rng(int(seed)) for seed in seeds]


def call_seeded(method: Callable[..., Any], seeds: Sequence[int], *args: Any) -> Any:
    """`method(*args, seeds=seeds)` where `method` has a `seeds` parameter, else `method(*args)` (a backend that
    draws from its own generator)."""
    if _takes_seeds(getattr(method, "__func__", method)):
        return method(*args, seeds=list(seeds))
    return method(*args)


@functools.lru_cache(maxsize=256)
def _takes_seeds(function: Callable[..., Any]) -> bool:
    try:
        return "seeds" in inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


# ----------------------------------------------------------------- stop strings
# The stop rule, shared by every backend that applies stop strings itself: a stop string fires only where it
# begins outside fenced code blocks and thinking blocks, so that a program that prints '<answer>...</answer>' and
# a thought that quotes the answer format do not end the completion.
OUTSIDE, FENCE, THINK = "outside", "fence", "think"
FENCE_MARK, THINK_OPEN, THINK_CLOSE = "```", "<think>", "</think>"
REPLACEMENT_CHAR = "\ufffd"
"""What a decoder shows for bytes that do not (yet) form a whole UTF-8 character."""


def cut_at_stop(text: str, stops: Sequence[str], *, thinking_open: bool = False) -> str | None:
    """`text` up to and including the stop string that fires first under the stop rule, or None if none fires.
    `thinking_open`: the text begins inside a thinking block (the prompt opened it).

    The rule: `text` is read left to right; three backticks open a fenced block and the next three close it;
    `<think>` opens a thinking block and the next `</think>` closes it (inside a fence `<think>` is plain text,
    inside a thinking block backticks are). An occurrence of a stop string counts when the text before its
    first character is outside both kinds of block; of those, the one that ends first fires (ties: the same
    cut). Without fences and thinking blocks this is the earliest-ending occurrence of any stop string.

    >>> cut_at_stop("```python\\nprint('<answer>R</answer>')\\n```\\n<answer>U</answer> more", ["</answer>"])
    "```python\\nprint('<answer>R</answer>')\\n```\\n<answer>U</answer>"
    >>> cut_at_stop("<think>write <answer>...</answer></think><answer>R</answer>", ["</answer>"])
    '<think>write <answer>...</answer></think><answer>R</answer>'
    >>> cut_at_stop("```\\nunclosed </answer>", ["</answer>"]) is None
    True
    """
    end = StopScanner(stops, thinking_open=thinking_open).scan(text)
    return None if end is None else text[:end]


class _Markers:
    """The occurrences of the block markers in one text, for positions that never go back: each marker's next
    occurrence is remembered, so reading a whole text costs one pass per marker however many blocks it holds (a
    plain `find` of `<think>` from every fence would read the rest of the text again at each one)."""

    def __init__(self, text: str):
        self.text = text
        self._found: dict[str, tuple[int, int]] = {}  # marker -> (searched from, found at or -1)

    def find(self, mark: str, position: int) -> int:
        """The first occurrence of `mark` at or after `position` (-1 if none); `position` never decreases."""
        searched, at = self._found.get(mark, (-1, -1))
        if searched < 0 or (at >= 0 and at < position):
            at = self.text.find(mark, position)
            self._found[mark] = (position, at)
        return at


def _next_marker(markers: _Markers, pos: int, mode: str) -> tuple[int, int, str] | None:
    """The first block marker at or after `pos` that ends `mode` or opens a block from it: (start, end, the mode
    after it), or None."""
    if mode != OUTSIDE:
        mark = FENCE_MARK if mode == FENCE else THINK_CLOSE
        start = markers.find(mark, pos)
        return None if start < 0 else (start, start + len(mark), OUTSIDE)
    found = [(markers.find(mark, pos), mark, new) for mark, new in ((FENCE_MARK, FENCE), (THINK_OPEN, THINK))]
    starts = [(start, start + len(mark), new) for start, mark, new in found if start >= 0]
    return min(starts) if starts else None


def _scan(text: str, mode: str, stops: Sequence[str], keep: int) -> tuple[int | None, int, str]:
    """Apply the stop rule to `text`, which begins in block `mode`: (end of the firing stop or None, settle,
    mode at settle).

    `settle` is a position of `text` before which nothing can change any more: every stop occurrence that begins
    before it lies inside `text` (it is at most `len(text) - keep`, `keep` being the longest stop or marker minus
    one), and no marker straddles it. Scanning `text[settle:]` + more text from `mode at settle` gives what
    scanning the whole text would (markers are found left to right without overlap, and none of them can begin
    inside another one that is cut off at the end of `text`).
    """
    limit = max(0, len(text) - keep)
    best: int | None = None
    settle: tuple[int, str] | None = None
    markers = _Markers(text)
    start = 0  # where the current mode began; stops that begin from here up to the next marker's end see it
    while best is None or start < best:
        marker = _next_marker(markers, start, mode)
        stretch_end = marker[1] if marker else len(text)
        if mode == OUTSIDE:
            for stop in stops:
                at = text.find(stop, start, stretch_end + len(stop) - 1)  # it must begin before stretch_end
                if at >= 0 and (best is None or at + len(stop) < best):
                    best = at + len(stop)
        if settle is None and (marker is None or marker[1] > limit):
            settle = (limit if marker is None else min(limit, marker[0]), mode)
        if marker is None:
            break
        start, mode = marker[1], marker[2]
    return best, *(settle or (limit, mode))


class StopScanner:
    """The stop rule (`cut_at_stop`) applied to a completion fed in pieces, in time linear in its length.

    `scan(text)` appends `text` to what was committed before and returns the end offset, in the whole completion,
    of the stop string that fires in it, or None. `commit=False` scans the same way but forgets `text` afterwards
    (the caller's text is still tentative, e.g. a decoded tail whose last character may change). The scanner keeps
    only the last characters that a later stop string or block marker can still involve, so a call costs what its
    `text` and the longest stop string cost, whatever the length of the completion. Once a stop has fired the
    scanner's state is unspecified: start a new one for a new completion. `thinking_open`: the completion begins
    inside a thinking block (the prompt opened it: `opens_thinking`).
    """

    def __init__(self, stops: Sequence[str], *, thinking_open: bool = False):
        self.stops = tuple(stop for stop in stops if stop)
        self.thinking_open = thinking_open
        self._keep = max([len(THINK_CLOSE), *map(len, self.stops)]) - 1
        self._mode = THINK if thinking_open else OUTSIDE
        self._kept = ""  # the committed text from the settled position on
        self._offset = 0  # offset of `_kept` in the whole completion

    def scan(self, text: str, *, commit: bool = True) -> int | None:
        window = self._kept + text
        end, settle, mode = _scan(window, self._mode, self.stops, self._keep)
        if end is not None:
            return self._offset + end
        if commit:
            self._kept, self._offset, self._mode = window[settle:], self._offset + settle, mode
        return None


class StopDetector:
    """Stop strings over a completion's token ids, one token at a time, as re-decoding it every step would find.

    `push(token)` appends a sampled token and returns whether a stop string fires (the stop rule of
    `cut_at_stop`) in `decode(ids)` of the ids so far; then `text` is that decoded completion cut right after
    the stop string, exactly `cut_at_stop(decode(ids), stops)` for the first such prefix of the ids.

    Only new tokens are decoded: the text is committed up to the last token after which it ended with a whole
    character, and each step decodes the tokens since then together with those of the last commit that added
    text (as context, for decoders that treat a leading space specially), so a step's cost does not grow with
    the completion. A decoded tail ending in U+FFFD (the bytes of a character split across tokens, or invalid
    ones) is scanned but not committed, so a character completed by a later token is read whole. The step at
    which a stop fires is exact when `decode` is local in that sense, as byte-level BPE (GPT-2, Qwen, Llama 3,
    the built-in tokenizer) and Metaspace (SentencePiece) decoders are (tested against full re-decoding on
    random token ids); the cut text always comes from one full decode. A decoder that is not local, such as
    SentencePiece's ByteFallback (Llama 2, Mistral), which shows a whole run of byte tokens as U+FFFD once any
    byte of it is invalid UTF-8, can show the detector other text inside such runs. A run of tokens that never
    completes a character keeps growing the decoded tail (and the cost of a step). `thinking_open`: as
    `StopScanner`'s.
    """

    def __init__(
        self, decode: Callable[[Sequence[int]], str], stops: Sequence[str], *, thinking_open: bool = False
    ):
        self._decode = decode
        self._scanner = StopScanner(stops, thinking_open=thinking_open)
        self.ids: list[int] = []
        self.text: str | None = None  # set when a stop string fires
        self._context = 0  # first token of the decoded window: the last commit that added text, and after
        self._read = 0  # first token whose text is not committed yet
        self._context_chars = 0  # len(decode(ids[_context:_read]))

    def push(self, token: int) -> bool:
        if self.text is not None:
            raise RuntimeError("a stop string already fired; this completion has ended")
        self.ids.append(int(token))
        window = self._decode(self.ids[self._context :])
        pending = window[self._context_chars :]
        tentative = pending.endswith(REPLACEMENT_CHAR) or len(window) < self._context_chars
        end = self._scanner.scan(pending, commit=not tentative)
        if end is not None:  # the text is cut from one full decode, so it is a prefix of decode(ids) always
            full = self._decode(self.ids)
            self.text = (
                cut_at_stop(full, self._scanner.stops, thinking_open=self._scanner.thinking_open)
                or full[:end]
            )
            return True
        if not tentative:
            if pending:  # tokens that decode to nothing (skipped special tokens) are no context on their own
                self._context = self._read
            self._read = len(self.ids)
            self._context_chars = len(self._decode(self.ids[self._context : self._read]))
        return False
