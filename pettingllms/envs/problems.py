"""Problems for the dataset-backed environments (`code-v0`, `math-v0`): given ones and dataset splits."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pettingllms.errors import ConfigError

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
