"""`metrics.jsonl`: one JSON object per step, appended as a run goes, read back strictly.

The file is an append-only JSON Lines file (`pettingllms.core.jsonl`: a truncated last line, left by a run killed
mid-write, is dropped with a message; a whole last line missing its newline gets it). Every other line must be a
JSON object with an integer `step`, else `MetricsLogError` names the file and the line number.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pettingllms.core import jsonl
from pettingllms.core.errors import PettingLLMsError


class MetricsLogError(PettingLLMsError):
    """A line of `metrics.jsonl` other than a truncated last one is not a metrics row (names file and line)."""


def append(path: Path, row: dict[str, Any]) -> None:
    """Append `row` as one line and flush it to disk."""
    jsonl.append(path, [row])


def read(path: Path, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """The rows of `path` ([] when it does not exist); a truncated last line is dropped with a message to `log`
    and removed from the file, so that later appends start on a fresh line."""

    def error(number: int, what: str) -> MetricsLogError:
        return MetricsLogError(
            f"{path}, line {number}: {what}; fix or delete that line (or start the run over with "
            "--overwrite_output_dir true)"
        )

    rows = []
    for number, row in jsonl.read(path, error, log):
        if (
            not isinstance(row, dict)
            or isinstance(row.get("step"), bool)
            or not isinstance(row.get("step"), int)
        ):
            raise error(number, "not a metrics row (a JSON object with an integer 'step')")
        rows.append(row)
    return rows


def truncate_after(path: Path, step: int, log: Callable[[str], None] = print) -> None:
    """Keep only the rows of steps <= `step` (what a run resumed from that step's checkpoint has logged)."""
    if path.exists():
        jsonl.rewrite(path, [row for row in read(path, log) if row["step"] <= step])
