"""Statistics for comparing methods: seed summaries and paired per-episode comparisons on one suite.

- `seed_summary(values)`: mean, sample standard deviation (ddof=1) and a 95% Student-t interval of per-seed
  figures (e.g. the success rate of each seed's run).
- `paired_comparison(a, b)`: two methods played on the same episodes (`a[i]`, `b[i]`: episode i's success, or its
  success rate over seeds): the mean difference `a - b`, a paired bootstrap 95% interval of it (episodes
  resampled together), and a two-sided p-value of "no difference": McNemar's exact test when both are 0/1, else
  a sign-flip permutation test of the paired differences (exact up to `EXACT_FLIPS_MAX` non-zero differences,
  Monte Carlo beyond). Every random draw comes from the `seed` given.

Pure numpy and the standard library.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

T_975 = (
    12.706204736174698, 4.302652729749464, 3.182446305284263, 2.7764451051977934, 2.570581835636314,
    2.4469118511449666, 2.3646242515927853, 2.306004135204166, 2.2621571628540993, 2.2281388519649385,
    2.200985160082949, 2.1788128296634177, 2.1603686564610127, 2.1447866879169273, 2.131449545559323,
    2.1199052992210112, 2.1098155778331806, 2.10092204024096, 2.093024054408263, 2.0859634472658364,
    2.079613844727662, 2.0738730679040147, 2.068657610419041, 2.0638985616280205, 2.059538552753294,
    2.055529438642871, 2.0518305164802833, 2.048407141795244, 2.045229642132703, 2.0422724563012373,
)  # fmt: skip
"""The 97.5% quantile of Student's t with 1..30 degrees of freedom (beyond: the normal's, `Z_975`)."""
Z_975 = 1.959963984540054
EXACT_FLIPS_MAX = 16
"""Up to this many non-zero paired differences, the sign-flip test enumerates all 2^n sign patterns."""


def t_975(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` >= 1 degrees of freedom (the normal's beyond 30)."""
    if df < 1:
        raise ValueError(f"df={df} must be >= 1")
    return T_975[df - 1] if df <= len(T_975) else Z_975


def seed_summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """`mean`, sample `std` (ddof=1; None for one value), `n` and the 95% t interval `ci95` (None for one value).

    >>> round(seed_summary([0.2, 0.4, 0.6])["std"], 12)
    0.2
    """
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("seed_summary needs at least one value")
    mean = float(data.mean())
    if data.size == 1:
        return {"mean": mean, "std": None, "n": 1, "ci95": None}
    std = float(data.std(ddof=1))
    half = t_975(data.size - 1) * std / math.sqrt(data.size)
    return {"mean": mean, "std": std, "n": int(data.size), "ci95": [mean - half, mean + half]}


def mcnemar_exact_p(a: Sequence[int], b: Sequence[int]) -> float:
    """Two-sided exact McNemar p-value of paired 0/1 outcomes: the discordant pairs under Binomial(n, 1/2)."""
    wins = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    losses = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def sign_flip_p(differences: Sequence[float], *, resamples: int = 20_000, seed: int = 0) -> float:
    """Two-sided p-value of a zero mean paired difference: the share of sign patterns whose |mean| is at least the
    observed one (every pattern up to `EXACT_FLIPS_MAX` non-zero differences; else `resamples` random ones, with
    the observed pattern counted, from `numpy.random.default_rng(seed)`)."""
    nonzero = np.asarray([d for d in differences if d != 0], dtype=np.float64)
    if nonzero.size == 0:
        return 1.0
    observed = abs(nonzero.sum()) - 1e-12  # a tolerance so that ties with the observed sum count as extreme
    if nonzero.size <= EXACT_FLIPS_MAX:
        patterns = np.array(list(itertools.product((1.0, -1.0), repeat=nonzero.size)))
        return float(np.mean(np.abs(patterns @ nonzero) >= observed))
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(resamples, nonzero.size))
    extreme = int(np.sum(np.abs(signs @ nonzero) >= observed))
    return (extreme + 1) / (resamples + 1)


def paired_comparison(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 10_000, seed: int = 0
) -> dict[str, float | int | str | list[float]]:
    """Compare methods `a` and `b` on the same episodes (see the module docstring): `difference` (mean of
    a - b), `ci95` (paired bootstrap percentile interval), `p_value`, `test` (its name) and `episodes`."""
    first, second = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if first.shape != second.shape or first.ndim != 1 or first.size == 0:
        raise ValueError(
            f"paired results need two equal, non-empty lists (got {first.shape} and {second.shape})"
        )
    differences = first - second
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, differences.size, size=(resamples, differences.size))
    means = differences[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    binary = set(np.unique(np.concatenate([first, second]))) <= {0.0, 1.0}
    if binary:
        p_value, test = mcnemar_exact_p(first.astype(int), second.astype(int)), "McNemar exact"
    else:
        p_value, test = sign_flip_p(differences, seed=seed), "sign-flip permutation"
    return {
        "difference": float(differences.mean()),
        "ci95": [float(low), float(high)],
        "p_value": p_value,
        "test": test,
        "episodes": int(differences.size),
    }
