"""`metrics.jsonl`: one JSON object per line, appended as a run goes, read back strictly.

A line is written whole and flushed (`append`). Reading (`read`) accepts a half-written *last* line (a run killed
mid-write: no trailing newline and not valid JSON), which it reports and drops; any other line that is not a JSON
object with an integer `step` raises `MetricsLogError` naming the file and the line number.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pettingllms.core.errors import PettingLLMsError


class MetricsLogError(PettingLLMsError):
    """A line of `metrics.jsonl` other than a half-written last one is not a metrics row (names file and line)."""


def append(path: Path, row: dict[str, Any]) -> None:
    """Append `row` as one line and flush it to disk."""
    with path.open("a") as handle:
        handle.write(json.dumps(row) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read(path: Path, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """The rows of `path` ([] when it does not exist); a half-written last line is dropped with a message to `log`
    and removed from the file, so that later appends start on a fresh line."""
    if not path.exists():
        return []
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        number = data.count(b"\n", 0, error.start) + 1
        raise MetricsLogError(f"{path}, line {number}: not UTF-8 text; fix or delete that line") from error
    lines = text.split("\n")
    complete, tail = (
        lines[:-1],
        lines[-1],
    )  # tail: text after the last newline ("" when the file ends cleanly)
    rows = [_row(path, number, line) for number, line in enumerate(complete, start=1)]
    if tail:
        try:
            rows.append(_row(path, len(complete) + 1, tail))
        except MetricsLogError:
            log(
                f"{path}: dropped a half-written last line (line {len(complete) + 1}, {len(tail)} characters): "
                "the run was killed while writing it"
            )
            path.write_text("".join(line + "\n" for line in complete))
    return rows


def truncate_after(path: Path, step: int, log: Callable[[str], None] = print) -> None:
    """Keep only the rows of steps <= `step` (what a run resumed from that step's checkpoint has logged)."""
    if not path.exists():
        return
    rows = [row for row in read(path, log) if row["step"] <= step]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _row(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise MetricsLogError(
            f"{path}, line {number}: not valid JSON ({error.msg}); fix or delete that line (or start the run over "
            "with --overwrite_output_dir true)"
        ) from error
    if not isinstance(row, dict) or not isinstance(row.get("step"), int):
        raise MetricsLogError(
            f"{path}, line {number}: not a metrics row (a JSON object with an integer 'step'); fix or delete it"
        )
    return row
