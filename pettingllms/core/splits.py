"""Train/validation/evaluation splits of instances, disjoint by construction.

An instance's split is a function of the BLAKE2b hash `h` of its canonical key: "eval" iff
`h % EVAL_SHARE_DENOMINATOR == 0` (1 in 5), else "val" iff `(h // EVAL_SHARE_DENOMINATOR) % VAL_SHARE_DENOMINATOR
== 0` (1 in 8 of the rest), else "train". The validation split is carved out of what was the training split, so
the evaluation split (and every evaluation suite built on it) is the same as before it existed. Generators draw
instances until one lands in the requested split, so no instance can ever be drawn in two splits, whatever the
seeds. Recipes (learning rates, SFT lengths, reward settings) are tuned on "val" and reported on "eval".
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

SPLITS = ("train", "val", "eval")
EVAL_SHARE_DENOMINATOR = 5
VAL_SHARE_DENOMINATOR = 8
MAX_DRAWS = 1_000

T = TypeVar("T")


def canonical(key: Any) -> Any:
    """Return `key` with every set replaced by a sorted tuple, so that its `repr` is canonical."""
    if isinstance(key, (set, frozenset)):
        return tuple(sorted(canonical(item) for item in key))
    if isinstance(key, (tuple, list)):
        return tuple(canonical(item) for item in key)
    return key


def split_of(key: Any) -> str:
    """Return "train", "val" or "eval" for an instance key (a hashable tuple of ints, strings and sets)."""
    digest = hashlib.blake2b(repr(canonical(key)).encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    if value % EVAL_SHARE_DENOMINATOR == 0:
        return "eval"
    return "val" if (value // EVAL_SHARE_DENOMINATOR) % VAL_SHARE_DENOMINATOR == 0 else "train"


def check_split(split: str, allowed: tuple[str, ...] = SPLITS) -> str:
    """Return `split` if it is one of `allowed`, else raise `ValueError` naming the allowed values."""
    if split not in allowed:
        raise ValueError(f"split={split!r} is not supported; allowed values: {list(allowed)}")
    return split


def draw_in_split(
    generate: Callable[[np.random.Generator], T],
    key: Callable[[T], Any],
    rng: np.random.Generator,
    split: str,
) -> T:
    """Call `generate(rng)` until the instance's split is `split`; return it."""
    check_split(split)
    for _ in range(MAX_DRAWS):
        instance = generate(rng)
        if split_of(key(instance)) == split:
            return instance
    raise RuntimeError(
        f"no {split} instance in {MAX_DRAWS} draws: the generator's instance space is too small"
    )
