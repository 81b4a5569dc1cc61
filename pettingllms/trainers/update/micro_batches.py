"""How one policy's update cuts its samples into micro-batches (`ATGRPOConfig.micro_batching`).

A micro-batch is padded to its longest prompt (on the left) and its longest completion (on the right), so its
cost in memory and compute is its padded size: rows x (longest prompt + longest completion).

- `by_count(samples, rows)`: consecutive runs of `rows` samples, in the order given (TRL's way). A micro-batch that
  holds one long row pads every other row to it.
- `by_tokens(samples, rows)`: the samples sorted longest first and packed greedily, each micro-batch taking the next
  sample while its padded size stays within a budget of `rows` x (the longest prompt + the longest completion among
  `samples`). That budget is what a micro-batch of `by_count` may already hold (and what the memory plan sizes:
  `per_device_train_batch_size` rows of the planned prompt and completion lengths), so the peak does not grow; a
  micro-batch always has room for `rows` samples, so there are never more micro-batches than `by_count` makes; with
  lengths that vary, short rows share micro-batches with short rows and the update runs fewer forward passes.

Either way every sample is in exactly one micro-batch, and the update weighs each micro-batch's loss by its share of
the batch (`PolicyUpdater.accumulate_gradients`), so the gradient is the one-batch gradient however the cut falls
(tested against TRL's loss on the whole batch). Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MICRO_BATCHINGS = ("tokens", "count")
"""`micro_batching` values: pack by a token budget (`by_tokens`), or cut by count (`by_count`)."""


def _lengths(sample: Any) -> tuple[int, int]:
    return len(sample.generation.prompt_ids), max(len(sample.generation.completion_ids), 1)


def padded_tokens(chunk: Sequence[Any]) -> int:
    """The padded size of a micro-batch: rows x (longest prompt + longest completion)."""
    if not chunk:
        return 0
    prompts, completions = zip(*map(_lengths, chunk))
    return len(chunk) * (max(prompts) + max(completions))


def by_count(samples: Sequence[Any], rows: int) -> list[list[Any]]:
    """Consecutive runs of `rows` samples (module docstring)."""
    return [list(samples[start : start + rows]) for start in range(0, len(samples), rows)]


def by_tokens(samples: Sequence[Any], rows: int) -> list[list[Any]]:
    """The samples packed longest first within `rows` x (longest prompt + longest completion) padded tokens
    (module docstring). The order is deterministic: by length, then by position in `samples`."""
    if not samples:
        return []
    prompts, completions = zip(*map(_lengths, samples))
    budget = rows * (max(prompts) + max(completions))
    order = sorted(range(len(samples)), key=lambda i: (-sum(_lengths(samples[i])), i))
    chunks: list[list[Any]] = []
    prompt = completion = 0  # the longest prompt and completion of the micro-batch being filled
    for index in order:
        sample = samples[index]
        p, c = _lengths(sample)
        wider = max(prompt, p) + max(completion, c)
        if chunks and (len(chunks[-1]) + 1) * wider <= budget:
            chunks[-1].append(sample)
            prompt, completion = max(prompt, p), max(completion, c)
        else:
            chunks.append([sample])
            prompt, completion = p, c
    return chunks


def micro_batches(samples: Sequence[Any], rows: int, how: str) -> list[list[Any]]:
    """`by_tokens` or `by_count` (`how`, one of `MICRO_BATCHINGS`)."""
    if how not in MICRO_BATCHINGS:
        raise ValueError(f"micro_batching={how!r}; allowed values: {list(MICRO_BATCHINGS)}")
    return by_tokens(samples, rows) if how == "tokens" else by_count(samples, rows)
