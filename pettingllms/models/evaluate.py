"""Greedy evaluation of a policy on an environment: one episode per seed, all episodes batched.

`play_episodes` runs the episodes in waves of at most `parallel` envs (which are reused from wave to wave: an
env instance costs tens of MB); within a wave they advance in lockstep: at each step it gathers the observation
of each live episode's current agent, asks the policy for one completion per prompt in a single
`generate(prompts, n=1, ...)` call, and steps each env with its completion. The same policy serves every agent. `success_rate` is the fraction of
episodes whose `info["success"]` is true at the end (the puzzle solved within `max_turns`).

With `temperature == 0` (the default) and a deterministic policy the result depends only on the seeds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pettingllms.policies.base import PolicyBackend, SamplingConfig

GREEDY = SamplingConfig(temperature=0.0, max_new_tokens=48, stop=("</answer>",))


@dataclasses.dataclass(frozen=True)
class EpisodeResult:
    """How one evaluation episode ended."""

    seed: int
    success: bool
    turns: int
    steps: int


def play_episodes(
    policy: PolicyBackend,
    env_id: str,
    seeds: Sequence[int],
    *,
    workflow: str = "mas",
    env_kwargs: Mapping[str, Any] | None = None,
    split: str = "eval",
    sampling: SamplingConfig = GREEDY,
    parallel: int = 32,
) -> list[EpisodeResult]:
    """Play one episode per seed (reset with `options={"split": split}`); return their results in seed order."""
    import pettingllms

    if parallel < 1:
        raise ValueError(f"parallel={parallel} must be positive")
    seeds = [int(seed) for seed in seeds]
    envs = [pettingllms.make(env_id, workflow=workflow, **dict(env_kwargs or {})) for _ in seeds[:parallel]]
    results: list[EpisodeResult] = []
    for start in range(0, len(seeds), parallel):
        wave = seeds[start : start + parallel]
        results += _play_wave(policy, envs[: len(wave)], wave, split, sampling)
    for env in envs:
        env.close()
    return results


def success_rate(
    policy: PolicyBackend,
    env_id: str,
    seeds: Sequence[int],
    **kwargs: Any,
) -> float:
    """Fraction of `play_episodes(policy, env_id, seeds, **kwargs)` that end solved (0.0 for no seeds)."""
    results = play_episodes(policy, env_id, seeds, **kwargs)
    return sum(result.success for result in results) / len(results) if results else 0.0


def _play_wave(policy, envs, seeds: list[int], split: str, sampling: SamplingConfig) -> list[EpisodeResult]:
    """Play one episode per (env, seed) pair in lockstep."""
    for env, seed in zip(envs, seeds):
        env.reset(seed=seed, options={"split": split})
    steps = [0] * len(envs)
    while True:
        live = [i for i, env in enumerate(envs) if _advance(env)]
        if not live:
            break
        prompts = [str(envs[i].observe(envs[i].agent_selection)) for i in live]
        completions = policy.generate(prompts, 1, sampling)
        for i, group in zip(live, completions):
            envs[i].step(group[0].text)
            steps[i] += 1
    return [
        EpisodeResult(seed, bool(env.unwrapped.success), int(env.unwrapped.turn), count)
        for env, seed, count in zip(envs, seeds, steps)
    ]


def _advance(env) -> bool:
    """Step dead agents out (PettingZoo's `step(None)`); return whether a live agent now waits for an action."""
    while env.agents:
        _, _, termination, truncation, _ = env.last()
        if not (termination or truncation):
            return True
        env.step(None)
    return False
