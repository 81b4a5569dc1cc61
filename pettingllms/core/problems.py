"""Problems for the dataset-backed environments (`code-v0`, `math-v0`): given ones and dataset splits."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pettingllms.core.errors import ConfigError

T = TypeVar("T")
NATIVE_SPLITS = {"train": "train", "eval": "test"}
"""The environments' split names -> the Hub datasets' usual ones."""


def problem_option(options: Mapping[str, Any], parse: Callable[[Mapping[str, Any]], T]) -> T | None:
    """The problem given as `reset(options={"problem": DICT})`, parsed; None when absent.

    A dict that `parse` rejects (ValueError) raises `ConfigError` naming the option and the reason.
    """
    if options.get("problem") is None:
        return None
    try:
        return parse(options["problem"])
    except ValueError as error:
        raise ConfigError(f"reset option 'problem' is not a problem: {error}") from error


@functools.lru_cache(maxsize=64)
def load_split(
    loader: Callable[..., list], dataset: str, path: str | None, split: str, native: str | None
) -> tuple:
    """`loader(dataset, path=path, split=native)` as a tuple, loaded once per process (problems are immutable).

    `split` is the environment's split name, for the error raised when the split holds no problem.
    """
    loaded = loader(dataset, path=path, split=native)
    if not loaded:
        raise ConfigError(f"dataset {dataset!r} has no problem in split {split!r}")
    return tuple(loaded)


def pick_problem(pool: tuple[T, ...], options: Mapping[str, Any], rng) -> T:
    """The problem `options["index"]` of `pool` (a fixed evaluation suite walks the indices), or a uniform draw
    from `rng` when no index is given. An index outside the pool raises `ConfigError`."""
    index = options.get("index")
    if index is None:
        return pool[int(rng.integers(len(pool)))]
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(pool):
        raise ConfigError(f"reset option index={index!r} must be an integer in [0, {len(pool) - 1}]")
    return pool[index]
