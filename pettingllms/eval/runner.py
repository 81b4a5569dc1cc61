"""Playing a suite: episodes in chunks through the rollout engine, cached so that a rerun resumes.

`run_suite` splits the suite into fixed chunks of `chunk_size` episodes (chunk i always holds the same
episodes), plays each chunk in lockstep with `RolloutEngine.evaluate` (one completion per step, the policies'
evaluation sampling), and appends one JSON row per finished episode to the cache file. Before a chunk is
played, every backend is reseeded from `(seed, chunk index)`, so a chunk's episodes are the same whether the run
was interrupted or not. Chunks whose episodes are all in the cache are skipped.

The cache (`EpisodeCache`) is keyed by content: a row is used only when its `run` key matches the run's, which
`pettingllms.eval.cache_key.run_key` computes from the policies' weights and every setting that shapes an episode.
Every row carries `chain`, the sha256 of the previous row's chain and its own content, so a changed, removed,
reordered, inserted or duplicated row is detected when the file is read. Reading is strict: a truncated last row
(a run killed while writing it: not valid JSON, no trailing newline) is dropped with a message and its episode
played again; any other row that is not valid JSON, not an episode row, breaks the chain or repeats an episode
raises `EpisodeCacheError` naming the file and the line (delete the file to play everything again). The chain
catches accidents and naive edits, not someone who recomputes it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pettingllms
from pettingllms.backends.base import SamplingConfig, SeededBackend
from pettingllms.core.errors import PettingLLMsError
from pettingllms.core.seeding import derive_seed
from pettingllms.eval.suites import Episode, Suite
from pettingllms.parallel.world import SINGLE_PROCESS, World
from pettingllms.rollout.engine import RolloutEngine, StepPool
from pettingllms.rollout.samples import Rollout


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
}
_OPTIONAL_FIELDS = frozenset({"truncated"})
"""Fields that rows written by earlier versions lack (read as None)."""


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
        with self.path.open("a") as handle:
            for record in records:
                body = {"run": self.run_key, **record.to_json()}
                self._chain = _link(self._chain, body)
                handle.write(json.dumps({**body, "chain": self._chain}) + "\n")
                self.records[record.key] = record
            handle.flush()
            os.fsync(handle.fileno())

    def _load(self, log: Callable[[str], None]) -> None:
        data = self.path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise self._error(data.count(b"\n", 0, error.start) + 1, "not UTF-8 text") from error
        lines = text.split("\n")
        complete, tail = (
            lines[:-1],
            lines[-1],
        )  # tail: text after the last newline ("" when the file ends cleanly)
        seen: dict[tuple[str, str], int] = {}
        for number, line in enumerate(complete, start=1):
            self._accept(number, self._parse(number, line), seen)
        if not tail:
            return
        try:
            row = json.loads(tail)
        except json.JSONDecodeError:
            log(
                f"{self.path}: dropped a truncated last row (line {len(complete) + 1}, {len(tail)} characters; the "
                "run that wrote it was killed): its episode is played again"
            )
            self.path.write_text("".join(line + "\n" for line in complete))
            return
        self._accept(len(complete) + 1, row, seen)
        with self.path.open("a") as handle:  # a whole row whose newline was not written
            handle.write("\n")

    def _parse(self, number: int, line: str) -> Any:
        try:
            return json.loads(line)
        except json.JSONDecodeError as error:
            raise self._error(number, f"not valid JSON ({error.msg})") from error

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


def run_suite(
    suite: Suite,
    backends: Mapping[str, Any],
    agent_policy: Mapping[str, str],
    sampling: Mapping[str, SamplingConfig],
    cache: EpisodeCache | None,
    *,
    workflow: str = "mas",
    seed: int = 0,
    chunk_size: int = 50,
    on_progress: Callable[[int], None] | None = None,
    pool: StepPool | None = None,
    world: World = SINGLE_PROCESS,
) -> list[EpisodeRecord]:
    """Play every episode of `suite` not yet in `cache` (None: no cache, play all); return the records of all of
    them, in suite order.

    With a `pool`, env steps run in its worker processes (the same results as in-process). Under a launcher
    (`world`: the trainer's ranks, no cache) each rank plays every `world.size`-th chunk, reseeded as one process
    would, and every rank returns all the records."""
    if cache is not None and world.size > 1:
        raise ValueError(
            "run_suite: an episode cache is one process's; play a cached suite without a launcher"
        )
    env_fn = functools.partial(pettingllms.make, suite.env_id, workflow=workflow, **dict(suite.env_kwargs))
    engine = RolloutEngine(env_fn, backends, agent_policy, sampling, num_generations=1, pool=pool)
    played = dict(cache.records) if cache is not None else {}
    done = sum(episode.key in played for episode in suite.episodes)
    if on_progress is not None and done:
        on_progress(done)
    for index, chunk in _chunks(suite.episodes, chunk_size):
        if index % world.size != world.rank or all(episode.key in played for episode in chunk):
            continue
        for name, backend in backends.items():
            if isinstance(backend, SeededBackend):
                backend.reseed(derive_seed(seed, "eval", index, name))
        rollout = engine.evaluate([e.seed for e in chunk], [dict(e.options) for e in chunk])
        records = [r for r in episode_records(chunk, rollout) if r.key not in played]
        if cache is not None:
            cache.add(records)
        played.update((record.key, record) for record in records)
        if on_progress is not None:
            on_progress(len(records))
    if world.size > 1:
        for part in world.gather(played):
            played.update(part)
    return [played[episode.key] for episode in suite.episodes]


def _chunks(episodes: tuple[Episode, ...], size: int) -> Iterator[tuple[int, tuple[Episode, ...]]]:
    if size < 1:
        raise ValueError(f"chunk_size={size} must be >= 1")
    for index, start in enumerate(range(0, len(episodes), size)):
        yield index, episodes[start : start + size]


def episode_records(chunk: tuple[Episode, ...], rollout: Rollout) -> list[EpisodeRecord]:
    """One record per episode of `chunk` from the rollout that played it (instances are chunk positions)."""
    steps: list[dict[str, int]] = [{} for _ in chunk]
    errors: list[dict[str, int]] = [{} for _ in chunk]
    truncated: list[dict[str, int]] = [{} for _ in chunk]
    tokens = [0 for _ in chunk]
    counted = [True for _ in chunk]  # False once a step gave text without token ids (no tokenizer behind it)
    for sample in rollout.samples:
        i = sample.instance
        steps[i][sample.agent] = steps[i].get(sample.agent, 0) + 1
        errors[i][sample.agent] = errors[i].get(sample.agent, 0) + int(sample.parse_error)
        truncated[i][sample.agent] = truncated[i].get(sample.agent, 0) + int(sample.generation.truncated)
        tokens[i] += len(sample.generation.completion_ids)
        counted[i] = counted[i] and bool(sample.generation.completion_ids or not sample.completion)
    records = []
    for result in rollout.episodes:
        i = result.instance
        used = result.turns + 1 if result.success else result.turns
        records.append(
            EpisodeRecord(
                key=chunk[i].key,
                success=result.success,
                turns=int(used),
                steps=steps[i],
                errors=errors[i],
                tokens=tokens[i] if counted[i] else None,
                returns={agent: float(value) for agent, value in result.returns.items()},
                truncated=truncated[i],
            )
        )
    return records
