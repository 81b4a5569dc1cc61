"""The bundled training set: 60 stdin/stdout problems written for this project, 20 per difficulty.

"easy" problems are arithmetic and string manipulation, "medium" ones sorting, counting, prefix sums,
stacks and sliding windows, "hard" ones dynamic programming, graphs and greedy algorithms. Each has a
statement with its input and output format and a worked example, a reference program, and ten hidden tests
(inputs drawn by a seeded generator, never the example, with outputs computed by running the reference in the
sandbox, and no output expected by more than five of them). The problems are written in ``bundled_easy``/``bundled_medium``/``bundled_hard``; the data file
``bundled_problems.jsonl`` next to this module is generated from them by
``python -m pettingllms.data.code.build_bundled``.

The eval split is the problems whose ``pettingllms.core.splits.split_of(problem.id)`` is "eval" (a hash of the
id), the train split all the others (the set is too small to carve out a validation split), so the two splits
are disjoint and together cover the set, whatever order the problems are in.
"""

from __future__ import annotations

import json
from importlib import resources
from os import PathLike
from pathlib import Path

from pettingllms.core.splits import check_split, split_of
from pettingllms.data.code import bundled_easy, bundled_hard, bundled_medium
from pettingllms.data.code.schema import CodeProblem, problem_from_dict

SPECS = bundled_easy.SPECS + bundled_medium.SPECS + bundled_hard.SPECS
"""Every bundled problem's hand-written spec, easy first, then medium, then hard."""
DATA_FILE = "bundled_problems.jsonl"
"""The generated data file, a resource of this package: one stdio-schema object per line."""


def load_bundled(path: str | PathLike[str] | None = None, split: str | None = None) -> list[CodeProblem]:
    """The bundled problems (ids ``bundled/<slug>``) from ``path``, or from the packaged data file when
    ``path`` is None; all of them when ``split`` is None, else those of ``split`` ("train" or "eval";
    ValueError for anything else)."""
    if split is not None:
        check_split(split, ("train", "eval"))
    if path is None:
        text = resources.files(__package__).joinpath(DATA_FILE).read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    problems = [
        problem_from_dict(json.loads(row), source="bundled") for row in text.splitlines() if row.strip()
    ]
    return [p for p in problems if split is None or (split_of(p.id) == "eval") == (split == "eval")]
