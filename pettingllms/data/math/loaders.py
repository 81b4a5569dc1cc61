"""``load_math_dataset``: a math dataset from the Hugging Face Hub, a local file, or the generator.

| name | from the Hub (``path=None``) | splits |
|---|---|---|
| ``aime2024`` | ``Maxwell-Jia/AIME_2024`` (30 problems) | evaluation only |
| ``aime2025`` | ``yentinglin/aime_2025`` (30); a local file may also be opencompass/AIME2025's | evaluation only |
| ``olympiadbench`` | ``Hothan/OlympiadBench``, config ``OE_TO_maths_en_COMP`` (English, text only) | evaluation only |
| ``math500`` | ``HuggingFaceH4/MATH-500`` (500) | evaluation only |
| ``gsm8k`` | ``openai/gsm8k``, config ``main`` | train (7473), test (1319) |
| ``generated`` | ``generator.generate_split``: no file, no download | train, eval (a hash split) |

``split=None``, ``"test"`` and ``"eval"`` all mean the evaluation split ("test" on the Hub) for the Hub
datasets; ``"train"`` exists only for gsm8k. For ``generated``, ``split`` is "train" (the default) or
"eval", ``limit`` is required and ``seed`` (default 0) seeds the draw; ``seed`` is refused elsewhere. With
``path`` (a ``.parquet``, ``.json`` or ``.jsonl`` file, optionally compressed, or a list of them, in the
dataset's own schema; see ``rows``) the files are read whole as one split, and ``split`` is only checked.
``limit`` keeps the first ``limit`` problems in the dataset's order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pettingllms.core.errors import ConfigError
from pettingllms.data.files import DataPath, datasets_module, local_rows
from pettingllms.data.math.generator import generate_split
from pettingllms.data.math.rows import CONVERTERS
from pettingllms.data.math.schema import MathProblem

DATASETS = ("aime2024", "aime2025", "olympiadbench", "math500", "gsm8k", "generated")
EVALUATION_ONLY = ("aime2024", "aime2025", "olympiadbench", "math500")
_HUB = {
    "aime2024": ("Maxwell-Jia/AIME_2024", None, "train"),
    "aime2025": ("yentinglin/aime_2025", None, "train"),
    "olympiadbench": ("Hothan/OlympiadBench", "OE_TO_maths_en_COMP", "train"),
    "math500": ("HuggingFaceH4/MATH-500", None, "test"),
    "gsm8k": ("openai/gsm8k", "main", "test"),
}
"""name -> (Hub repository, config, the Hub split holding the evaluation problems)."""
_EVALUATION_SPLITS = (None, "test", "eval")


def load_math_dataset(
    name: str,
    *,
    path: DataPath | None = None,
    split: str | None = None,
    limit: int | None = None,
    seed: int | None = None,
) -> list[MathProblem]:
    """The problems of dataset ``name`` (one of ``DATASETS``), in the dataset's order; see the module
    docstring for sources and splits.

    ConfigError (a ValueError) for an unknown name, a split the dataset does not have, a negative limit,
    ``generated`` without a limit or with a path, or a seed for any other dataset. DependencyNotInstalled
    when the Hub or a local file is read and ``datasets`` is missing. KeyError or ValueError for a row that
    does not fit the dataset's schema.
    """
    if name not in DATASETS:
        raise ConfigError(f"name={name!r} is not a math dataset; allowed values: {list(DATASETS)}")
    if limit is not None and limit < 0:
        raise ConfigError(f"limit must be >= 0, got {limit}")
    if name == "generated":
        if limit is None or path is not None:
            raise ConfigError("the generated dataset needs a limit and reads no file (path must be None)")
        return generate_split(split or "train", limit, 0 if seed is None else seed)
    if seed is not None:
        raise ConfigError(f"seed applies only to the generated dataset, not to {name}")
    hub_split = _hub_split(name, split)
    rows = local_rows(path) if path is not None else _hub_rows(name, hub_split)
    convert = CONVERTERS[name]
    problems: list[MathProblem] = []
    for row in rows:
        if limit is not None and len(problems) >= limit:
            break
        problems.append(convert(row))
    return problems


def _hub_split(name: str, split: str | None) -> str:
    """The Hub split that ``split`` names for dataset ``name``; ConfigError if it has none."""
    if split in _EVALUATION_SPLITS:
        return _HUB[name][2]
    if split == "train" and name not in EVALUATION_ONLY:
        return "train"
    allowed = [*_EVALUATION_SPLITS, *([] if name in EVALUATION_ONLY else ["train"])]
    raise ConfigError(f"{name} has no split {split!r}; allowed values: {allowed}")


def _hub_rows(name: str, hub_split: str) -> Iterable[Mapping[str, Any]]:
    repository, config, _ = _HUB[name]
    return datasets_module().load_dataset(repository, config, split=hub_split)
