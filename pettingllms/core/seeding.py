"""`derive_seed`: every seed the package derives from a run's seed, through numpy's `SeedSequence`.

A stream is named by a path under the root seed, e.g. `derive_seed(seed, "policy", 2)` for the third policy's
sampler or `derive_seed(seed, "eval", chunk, "tool")` for one evaluation chunk's tool agent. Distinct paths give
statistically independent streams (SeedSequence's spawn keys), and no arithmetic on seeds can make two runs'
streams collide the way `seed * 1_000 + index` does when the index reaches 1_000. Names are hashed with sha256,
so a path means the same seed in every process and Python version.

`SEEDING_VERSION` names this scheme; caches of results that depend on derived seeds (evaluation episodes) key on it.
"""

from __future__ import annotations

import hashlib

import numpy as np

SEEDING_VERSION = 2
"""Bumped whenever a derivation changes (cached evaluations made under another version are not reused). 2: the
rollout engine seeds every request (`pettingllms.rollout.engine`)."""


def _word(part: int | str) -> int:
    if isinstance(part, str):
        return int.from_bytes(hashlib.sha256(part.encode()).digest()[:4], "little")
    if isinstance(part, (bool, np.bool_)) or not isinstance(part, (int, np.integer)) or part < 0:
        raise ValueError(f"a seed path holds names and non-negative integers, got {part!r}")
    return int(part)


def check_reset_seed(seed) -> int | None:
    """`reset`'s `seed` as an `int` (numpy integers accepted), or None; `ConfigError` for anything else."""
    from pettingllms.core.errors import ConfigError

    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"reset(seed={seed!r}): a seed is a non-negative integer (or None: continue)")
    return int(seed)


def derive_seed(root: int, *path: int | str) -> int:
    """A seed in [0, 2**32) for the stream named `path` under the seed `root` (see the module docstring); 32 bits
    because every seeded library takes them (numpy's legacy seeding and vLLM's engine refuse more)."""
    sequence = np.random.SeedSequence(entropy=_word(root), spawn_key=tuple(_word(part) for part in path))
    return int(sequence.generate_state(1, dtype=np.uint32)[0])
