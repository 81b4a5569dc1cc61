"""Append-only JSON Lines files: one JSON value per line, appended whole, read back strictly.

Used by the trainer's `metrics.jsonl` (`pettingllms.trainers.outputs.metrics_log`) and the evaluation's episode cache
(`pettingllms.eval.episode_cache`); each validates its own rows on top of this.

- `append` writes each row as one line ending in a newline, then flushes and fsyncs the file.
- `read` returns every line's JSON value with its 1-based line number. A *last* line without its newline that is
  not valid JSON is what a process killed mid-write leaves: it is dropped, said in one message, and removed from the
  file. A last line that is whole JSON but lacks its newline gets the newline, so that later appends start on a
  fresh line. Any other line that is not UTF-8 or not valid JSON raises the caller's error, naming the line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ErrorFactory = Callable[[int, str], Exception]
"""Builds the caller's exception from a line number and what is wrong with the line."""


def append(path: Path, rows: Iterable[Any]) -> None:
    """Append every row of `rows` as one line each and flush them to disk (the file is created if missing)."""
    with Path(path).open("a") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read(path: Path, error: ErrorFactory, log: Callable[[str], None] = print) -> list[tuple[int, Any]]:
    """`(line number, value)` for every line of `path` ([] when it does not exist); see the module docstring for
    the truncated last line (dropped, with a message to `log`) and for the errors built by `error`."""
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as failure:
        raise error(data.count(b"\n", 0, failure.start) + 1, "not UTF-8 text") from failure
    *complete, tail = text.split(
        "\n"
    )  # tail: the text after the last newline ("" when the file ends cleanly)
    values = [(number, _parse(line, number, error)) for number, line in enumerate(complete, start=1)]
    if not tail:
        return values
    number = len(complete) + 1
    try:
        values.append((number, json.loads(tail)))
    except json.JSONDecodeError:
        log(
            f"{path}: dropped a truncated last line (line {number}, {len(tail)} characters; the process that "
            "wrote it was killed)"
        )
        path.write_text("".join(line + "\n" for line in complete))
        return values
    with path.open("a") as handle:  # a whole last line whose newline was not written
        handle.write("\n")
    return values


def rewrite(path: Path, rows: Iterable[Any]) -> None:
    """Replace the content of `path` with `rows`, one line each."""
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows))


def _parse(line: str, number: int, error: ErrorFactory) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as failure:
        raise error(number, f"not valid JSON ({failure.msg})") from failure
