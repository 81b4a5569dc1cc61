"""Playing a suite: episodes in chunks through the rollout engine, cached so that a rerun resumes.

`run_suite` splits the suite into fixed chunks of `chunk_size` episodes (chunk i always holds the same
episodes), plays each chunk in lockstep with `RolloutEngine.evaluate` (one completion per step, the policies'
evaluation sampling), and appends one JSON row per finished episode to the cache file. Before a chunk is
played, every backend is reseeded from `(seed, chunk index)`, so a chunk's episodes are the same whether the run
was interrupted or not. Chunks whose episodes are all in the cache are skipped. A cache row is used only when
its `fingerprint` (env, env kwargs, policies, sampling, seed) matches the run's.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

import pettingllms
from pettingllms.envs.pool import EnvPool
from pettingllms.eval.suites import Episode, Suite
from pettingllms.policies.base import SamplingConfig
from pettingllms.trainers.rollout import Rollout, RolloutEngine


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

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def fingerprint(settings: Mapping[str, Any]) -> str:
    """A short stable hash of JSON-ready `settings`."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


class EpisodeCache:
    """Finished episodes of runs, one JSON row each in `path` (append-only; see the module docstring)."""

    def __init__(self, path: Path, run_fingerprint: str):
        self.path = Path(path)
        self.run_fingerprint = run_fingerprint
        self.records: dict[str, EpisodeRecord] = {}
        if self.path.is_file():
            for line in self.path.read_text().splitlines():
                if not line.strip():
                    continue
                row = json.loads(line)
                if row.pop("fingerprint", None) == run_fingerprint:
                    record = EpisodeRecord(**row)
                    self.records[record.key] = record

    def add(self, records: list[EpisodeRecord]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as handle:
            for record in records:
                handle.write(json.dumps({"fingerprint": self.run_fingerprint, **record.to_json()}) + "\n")
                self.records[record.key] = record


def run_suite(
    suite: Suite,
    backends: Mapping[str, Any],
    agent_policy: Mapping[str, str],
    sampling: Mapping[str, SamplingConfig],
    cache: EpisodeCache,
    *,
    workflow: str = "mas",
    seed: int = 0,
    chunk_size: int = 50,
    on_progress: Callable[[int], None] | None = None,
    pool: EnvPool | None = None,
) -> list[EpisodeRecord]:
    """Play every episode of `suite` not yet in `cache`; return the records of all of them, in suite order.

    With a `pool`, env steps run in its worker processes (the same results as in-process)."""
    env_fn = functools.partial(pettingllms.make, suite.env_id, workflow=workflow, **dict(suite.env_kwargs))
    engine = RolloutEngine(env_fn, backends, agent_policy, sampling, num_generations=1, pool=pool)
    done = sum(episode.key in cache.records for episode in suite.episodes)
    if on_progress is not None and done:
        on_progress(done)
    for index, chunk in _chunks(suite.episodes, chunk_size):
        todo = [episode for episode in chunk if episode.key not in cache.records]
        if not todo:
            continue
        for name, backend in backends.items():
            reseed(backend, seed * 1_000_003 + index * 7_919 + sorted(backends).index(name))
        rollout = engine.evaluate([e.seed for e in chunk], [dict(e.options) for e in chunk])
        records = [r for r in episode_records(chunk, rollout) if r.key not in cache.records]
        cache.add(records)
        if on_progress is not None:
            on_progress(len(records))
    return [cache.records[episode.key] for episode in suite.episodes]


def _chunks(episodes: tuple[Episode, ...], size: int) -> Iterator[tuple[int, tuple[Episode, ...]]]:
    if size < 1:
        raise ValueError(f"chunk_size={size} must be >= 1")
    for index, start in enumerate(range(0, len(episodes), size)):
        yield index, episodes[start : start + size]


def reseed(backend: Any, seed: int) -> None:
    """Reseed a backend's own generator: a torch `generator` (model backends) or a NumPy `rng` (baselines)."""
    if hasattr(backend, "generator"):
        backend.generator.manual_seed(seed)
    if hasattr(backend, "rng"):
        backend.rng = np.random.default_rng(seed)


def episode_records(chunk: tuple[Episode, ...], rollout: Rollout) -> list[EpisodeRecord]:
    """One record per episode of `chunk` from the rollout that played it (instances are chunk positions)."""
    steps: list[dict[str, int]] = [{} for _ in chunk]
    errors: list[dict[str, int]] = [{} for _ in chunk]
    tokens = [0 for _ in chunk]
    counted = [True for _ in chunk]  # False once a step gave text without token ids (no tokenizer behind it)
    for sample in rollout.samples:
        i = sample.instance
        steps[i][sample.agent] = steps[i].get(sample.agent, 0) + 1
        errors[i][sample.agent] = errors[i].get(sample.agent, 0) + int(sample.parse_error)
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
            )
        )
    return records
