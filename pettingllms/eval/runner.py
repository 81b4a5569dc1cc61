"""Playing a suite: episodes in chunks through the rollout engine, cached so that a rerun resumes.

`run_suite` splits the suite into fixed chunks of `chunk_size` episodes (chunk i always holds the same
episodes), plays each chunk with `RolloutEngine.evaluate` (one completion per step, the policies' evaluation
sampling), and appends one `EpisodeRecord` per finished episode to the `EpisodeCache`
(`pettingllms.eval.episode_cache`). A chunk's request seeds derive from `(seed, chunk index)`, and before it is
played every backend is reseeded from them too (for backends that take no request seeds), so a chunk's episodes
are the same whether the run was interrupted or not. Chunks whose episodes are all in the cache are skipped.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pettingllms
from pettingllms.backends.base import SamplingConfig, SeededBackend
from pettingllms.core.seeding import derive_seed
from pettingllms.eval.episode_cache import EpisodeCache, EpisodeRecord
from pettingllms.eval.suites import Episode, Suite
from pettingllms.parallel.world import SINGLE_PROCESS, World
from pettingllms.pools.base import StepPool
from pettingllms.rollout.engine import RolloutEngine
from pettingllms.rollout.samples import Rollout


def run_suite(
    suite: Suite,
    backends: Mapping[str, Any],
    agent_policy: Mapping[str, str],
    sampling: Mapping[str, SamplingConfig],
    cache: EpisodeCache | None,
    *,
    workflow: str = "mas",
    turns: str = "aec",
    seed: int = 0,
    chunk_size: int = 50,
    on_progress: Callable[[int], None] | None = None,
    pool: StepPool | None = None,
    world: World = SINGLE_PROCESS,
    on_chunk: Callable[[tuple[Episode, ...], Rollout], None] | None = None,
) -> list[EpisodeRecord]:
    """Play every episode of `suite` not yet in `cache` (None: no cache, play all); return the records of all of
    them, in suite order. `workflow` and `turns` are `pettingllms.make`'s (`turns="joint"`: the agents of a turn
    act together).

    With a `pool`, env steps run in its worker processes (the same results as in-process). Under a launcher
    (`world`: the trainer's ranks, no cache) each rank plays every `world.size`-th chunk, reseeded as one process
    would, and every rank returns all the records. `on_chunk(chunk, rollout)` is called after each chunk played
    (not for cached ones), e.g. to keep its transcripts (`transcript_rows`)."""
    if cache is not None and world.size > 1:
        raise ValueError(
            "run_suite: an episode cache is one process's; play a cached suite without a launcher"
        )
    env_fn = functools.partial(
        pettingllms.make, suite.env_id, workflow=workflow, turns=turns, **dict(suite.env_kwargs)
    )
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
        rollout = engine.evaluate(
            [e.seed for e in chunk],
            [dict(e.options) for e in chunk],
            sample_seed=derive_seed(seed, "eval", index),
        )
        records = [r for r in episode_records(chunk, rollout) if r.key not in played]
        if on_chunk is not None:
            on_chunk(chunk, rollout)
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
    first_programs: list[dict[str, str]] = [{} for _ in chunk]
    tokens = [0 for _ in chunk]
    counted = [True for _ in chunk]  # False once a step gave text without token ids (no tokenizer behind it)
    for sample in rollout.samples:
        i = sample.instance
        if sample.program is not None and sample.agent not in steps[i]:
            first_programs[i][sample.agent] = sample.program
        steps[i][sample.agent] = steps[i].get(sample.agent, 0) + 1
        errors[i][sample.agent] = errors[i].get(sample.agent, 0) + int(sample.parse_error)
        truncated[i][sample.agent] = truncated[i].get(sample.agent, 0) + int(sample.generation.truncated)
        tokens[i] += len(sample.generation.completion_ids)
        counted[i] = counted[i] and bool(sample.generation.completion_ids or not sample.completion)
    records = []
    for result in rollout.episodes:
        i = result.instance
        records.append(
            EpisodeRecord(
                key=chunk[i].key,
                success=result.success,
                turns=result.turns,
                steps=steps[i],
                errors=errors[i],
                tokens=tokens[i] if counted[i] else None,
                returns={agent: float(value) for agent, value in result.returns.items()},
                truncated=truncated[i],
                first_programs=first_programs[i],
                progress=result.progress,
            )
        )
    return records


def transcript_rows(chunk: tuple[Episode, ...], rollout: Rollout) -> list[dict[str, Any]]:
    """One row per episode of `chunk`: its key, success and every step in play order (turn, agent, the prompt
    it saw, its completion, its rewards and error): the conversation `pettingllms view` shows."""
    steps: list[list[dict[str, Any]]] = [[] for _ in chunk]
    for sample in rollout.samples:
        steps[sample.instance].append(
            {
                "turn": sample.turn,
                "agent": sample.agent,
                "prompt": sample.prompt,
                "completion": sample.completion,
                "reward": sample.reward,
                "reward_team": sample.reward_team,
                "reward_local": sample.reward_local,
                "error": sample.error,
            }
        )
    return [
        {"key": chunk[result.instance].key, "success": result.success, "steps": steps[result.instance]}
        for result in rollout.episodes
    ]
