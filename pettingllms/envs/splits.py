"""Train/evaluation split of procedurally generated instances, disjoint by construction.

An instance belongs to the evaluation split iff the BLAKE2b hash of its canonical key falls in a fixed
1-in-`EVAL_SHARE_DENOMINATOR` bucket. Generators draw instances until one lands in the requested split, so no
instance can ever be drawn in both splits, whatever the seeds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

SPLITS = ("train", "eval")
EVAL_SHARE_DENOMINATOR = 5
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
    """Return "train" or "eval" for an instance key (a hashable tuple of ints, strings and sets)."""
    digest = hashlib.blake2b(repr(canonical(key)).encode(), digest_size=8).digest()
    return "eval" if int.from_bytes(digest, "little") % EVAL_SHARE_DENOMINATOR == 0 else "train"


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is not supported; allowed values: {list(SPLITS)}")
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
