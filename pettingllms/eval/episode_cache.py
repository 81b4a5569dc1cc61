"""`EpisodeCache`: the finished episodes of evaluation runs, so that a rerun resumes (`pettingllms.eval.runner`).

The cache is keyed by content: a row is used only when its `run` key matches the run's, which
`pettingllms.eval.cache_key.run_key` computes from the policies' weights and every setting that shapes an episode.
The file is an append-only JSON Lines file (`pettingllms.core.jsonl`): a truncated last row (a run killed while
writing it) is dropped with a message and its episode played again. Every row carries `chain`, the sha256 of the
previous row's chain and its own content, so a changed, removed, reordered, inserted or duplicated row is detected
when the file is read: any row that is not valid JSON, not an episode row, breaks the chain or repeats an episode
raises `EpisodeCacheError` naming the file and the line (delete the file to play everything again). The chain
catches accidents and naive edits, not someone who recomputes it; so every field is also checked for what the
metrics assume of it (`row_problems`: counts are whole numbers >= 0, at most an agent's steps; returns are finite
numbers; a program's outcome is one of `PROGRAM_OUTCOMES`; a progression score is in [0, 100]), whatever the chain says.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pettingllms.core import jsonl
from pettingllms.core.errors import PettingLLMsError


@dataclasses.dataclass(frozen=True)
class EpisodeRecord:
    """What the metrics need from one played episode."""

    key: str
    success: bool
    turns: int  # turns used (a success in the first turn is 1)
    steps: dict[str, int]  # agent -> steps taken
    errors: dict[str, int]  # agent -> steps whose answer held nothing usable (parse errors)
    tokens: int | None  # completion tokens of all steps; None when a policy reports no tokens
    returns: dict[str, float]
    truncated: dict[str, int] | None = None
    """Agent -> steps whose completion was cut by the length budget; None in rows cached before it was kept."""
    first_programs: dict[str, str] | None = None
    """Agent -> what its first step's program did (`Sample.program`: "solves", "fails", "absent"), for the agents
    whose steps report it; None in rows cached before it was kept."""
    progress: float | None = None
    """The episode's progression score at its end, 0 to 100 (`EpisodeResult.progress`); None for an env without one,
    and in rows cached before it was kept."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class EpisodeCacheError(PettingLLMsError):
    """A row of an episode cache is malformed, changed or duplicated (the message names the file and the line)."""


_RECORD_FIELDS = tuple(field.name for field in dataclasses.fields(EpisodeRecord))
_ROW_FIELDS = frozenset({"run", "chain", *_RECORD_FIELDS})
_TYPES: dict[str, tuple[type, ...]] = {
    "run": (str,),
    "chain": (str,),
    "key": (str,),
    "success": (bool,),
    "turns": (int,),
    "steps": (dict,),
    "errors": (dict,),
    "tokens": (int, type(None)),
    "returns": (dict,),
    "truncated": (dict, type(None)),
    "first_programs": (dict, type(None)),
    "progress": (int, float, type(None)),
}
_OPTIONAL_FIELDS = frozenset({"truncated", "first_programs", "progress"})
"""Fields that rows written by earlier versions lack (read as None)."""


PROGRAM_OUTCOMES = frozenset({"solves", "fails", "absent"})
"""What `EpisodeRecord.first_programs` may say of an agent's first program (`Sample.program`)."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _counts(value: Any) -> bool:
    """An agent -> whole number >= 0 mapping."""
    return isinstance(value, dict) and all(isinstance(k, str) and _count(v) for k, v in value.items())


def row_problems(row: Mapping[str, Any]) -> list[str]:
    """What is wrong with the values of a row whose fields have the right types (module docstring); []: none."""
    problems = []
    if not row["key"]:
        problems.append("key is empty")
    if not _count(row["turns"]):
        problems.append(f"turns {row['turns']!r} is not a whole number >= 0")
    for name in ("steps", "errors", "truncated"):
        if row.get(name) is not None and not _counts(row[name]):
            problems.append(f"{name} {row[name]!r} is not agent -> whole number >= 0")
    if not problems:
        for name in ("errors", "truncated"):
            over = [agent for agent, n in (row.get(name) or {}).items() if n > row["steps"].get(agent, 0)]
            if over:
                problems.append(f"{name} of {over} exceed their steps")
    if row["tokens"] is not None and not _count(row["tokens"]):
        problems.append(f"tokens {row['tokens']!r} is not a whole number >= 0")
    returns = row["returns"]
    if not all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        for k, v in returns.items()
    ):
        problems.append(f"returns {returns!r} are not agent -> finite number")
    progress = row.get("progress")
    if progress is not None and not (math.isfinite(progress) and 0 <= progress <= 100):
        problems.append(f"progress {progress!r} is not a number in [0, 100]")
    programs = row.get("first_programs")
    if programs is not None and not all(
        isinstance(k, str) and v in PROGRAM_OUTCOMES for k, v in programs.items()
    ):
        problems.append(f"first_programs {programs!r} are not agent -> one of {sorted(PROGRAM_OUTCOMES)}")
    return problems


def _typed(value: Any, types: tuple[type, ...]) -> bool:
    """Whether `value` is of one of `types` (a bool only where bool is named: it is an int subclass)."""
    return isinstance(value, types) and (not isinstance(value, bool) or bool in types)


def _link(previous: str, body: Mapping[str, Any]) -> str:
    """The chain value of a row with content `body` after a row whose chain is `previous` ("" for the first)."""
    return hashlib.sha256((previous + json.dumps(body, sort_keys=True)).encode()).hexdigest()


class EpisodeCache:
    """Finished episodes of runs, one JSON row each in `path` (append-only, validated on load; see the module
    docstring); `records` holds the episodes of the run whose key is `run_key`."""

    def __init__(self, path: Path, run_key: str, log: Callable[[str], None] = print):
        self.path = Path(path)
        self.run_key = run_key
        self.records: dict[str, EpisodeRecord] = {}
        self._chain = ""
        if self.path.is_file():
            self._load(log)

    def add(self, records: list[EpisodeRecord]) -> None:
        """Append `records` (one row each, chained) and flush them to disk."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rows = []
        for record in records:
            body = {"run": self.run_key, **record.to_json()}
            self._chain = _link(self._chain, body)
            rows.append({**body, "chain": self._chain})
        jsonl.append(self.path, rows)
        self.records.update((record.key, record) for record in records)

    def _load(self, log: Callable[[str], None]) -> None:
        def said(message: str) -> None:
            log(f"{message}: its episode is played again")

        seen: dict[tuple[str, str], int] = {}
        for number, row in jsonl.read(self.path, self._error, said):
            self._accept(number, row, seen)

    def _accept(self, number: int, row: Any, seen: dict[tuple[str, str], int]) -> None:
        """Check row `number` (schema, chain, duplicates) and keep its record if it belongs to this run."""
        if not isinstance(row, dict) or not _ROW_FIELDS - _OPTIONAL_FIELDS <= set(row) <= _ROW_FIELDS:
            fields = sorted(row) if isinstance(row, dict) else type(row).__name__
            raise self._error(
                number,
                f"not an episode row (fields {fields}, expected {sorted(_ROW_FIELDS)}; an older version?)",
            )
        wrong = [name for name, types in _TYPES.items() if name in row and not _typed(row[name], types)]
        if wrong:
            raise self._error(number, f"fields {wrong} have the wrong type")
        problems = row_problems(row)
        if problems:
            raise self._error(number, "; ".join(problems))
        first = seen.setdefault((row["run"], row["key"]), number)
        if first != number:
            raise self._error(
                number,
                f"episode {row['key']!r} of the same run key is already at line {first}: a duplicated row",
            )
        body = {name: value for name, value in row.items() if name != "chain"}
        expected = _link(self._chain, body)
        if row["chain"] != expected:
            raise self._error(
                number,
                "its checksum does not match (the row was changed, or rows before it were removed, reordered or "
                "inserted)",
            )
        self._chain = expected
        if row["run"] == self.run_key:
            self.records[row["key"]] = EpisodeRecord(**{name: row.get(name) for name in _RECORD_FIELDS})

    def _error(self, number: int, what: str) -> EpisodeCacheError:
        return EpisodeCacheError(
            f"{self.path}, line {number}: {what}; the cache cannot be trusted: delete {self.path} to play its "
            "episodes again"
        )
