"""What the study scripts' command lines share: the output flags, value types that refuse a bad value in one line
(argparse's `argument --NAME: ...`) before anything runs, and the refusal of a changed setting that would write
into the study's own table and runs."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def add_output_arguments(parser: argparse.ArgumentParser, *, out: Path, runs: Path) -> None:
    """`--out` (the table, its ledger beside it), `--runs`, `--results_md` and `--report`."""
    parser.add_argument("--out", type=Path, default=out, help="the table; its ledger lies beside it")
    parser.add_argument("--runs", type=Path, default=runs)
    parser.add_argument("--results_md", type=Path, default=REPO / "docs" / "results.md")
    parser.add_argument("--report", action="store_true", help="only rebuild the report from the ledger")


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1.

    >>> positive_int("16")
    16
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 or str(value) != text.strip():
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}")
    return value


def share(text: str) -> float:
    """An argparse type: a finite number in [0, 1].

    >>> share("0.05")
    0.05
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # NaN fails it too
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], not {text!r}")
    return value


def refuse_mixed_settings(
    parser: argparse.ArgumentParser, args: argparse.Namespace, names: Iterable[str], *, out: Path, runs: Path
) -> None:
    """Exit through `parser.error` when a setting of `names` differs from its default while `--out` or `--runs` is
    the study's own (`out`, `runs`): the rows and runs of that setting would mix with the study's."""
    changed = [name for name in names if getattr(args, name) != parser.get_default(name)]
    if changed and (args.out == out or args.runs == runs):
        parser.error(
            f"--{', --'.join(changed)} change the study's settings: give --out and --runs of their own, so that "
            "no row or run of the study is mixed with them"
        )
