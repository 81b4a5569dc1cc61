"""Statistics for comparing methods: seed summaries, seed-level comparisons of training methods, and paired
per-episode comparisons of one fixed pair of models.

Which to use: the replicate of a training method is its training seed, not an episode (episodes of one suite are
strongly correlated across seeds), so two training methods are compared with `seed_comparison` (over seeds: the
test and the interval); `research.method_comparison` puts it in a table's words. `paired_comparison` (episodes)
is only for one fixed pair of models, e.g. a model before and after training.

- `seed_summary(values)`: mean, sample standard deviation (ddof=1) and a 95% Student-t interval of per-seed
  figures (e.g. the success rate of each seed's run).
- `seed_comparison(a, b, paired=...)`: per-seed figures of two methods; paired by seed (sign-flip test, the t
  interval of the per-seed differences) or not (permutation test between the groups, Welch's interval;
  `t_quantile` for its fractional degrees of freedom), with the smallest p the exact test can give with these
  seeds and their ties (`min_p`, and `min_p_basis`, its words). With 5 seeds a side these intervals hold a true
  difference of 0 in 93-97% of simulated studies (tests/test_method_comparison.py measures it), where a percentile
  bootstrap over seeds and instances held it in 81-93% (400 studies in each regime).
- `format_p(p, ...)`: a p-value as a reader should see it (a Monte Carlo floor as a bound, `p < 1e-4`; an exact
  test's smallest possible value said so, with what bounds it when `seeds` is given).
- `paired_comparison(a, b)`: one fixed pair of models played on the same episodes (`a[i]`, `b[i]`: episode i's
  success): the mean difference `a - b`, a paired bootstrap 95% interval of it (episodes resampled together), and a
  two-sided p-value of "no difference": McNemar's exact test when both are 0/1, else a sign-flip permutation test
  of the paired differences (exact up to `EXACT_FLIPS_MAX` non-zero differences, Monte Carlo beyond). Not for
  comparing training methods. Every random draw comes from the `seed` given.

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
    """Compare one fixed pair of models `a` and `b` (e.g. one model before and after training) on the same
    episodes. Only for that: never for two training methods, whose replicates are seeds, not episodes (use
    `seed_comparison`): `difference` (mean of a - b), `ci95` (paired
    bootstrap percentile interval), `p_value`, `test` (its name) and `episodes`."""
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


# ----------------------------------------------------------------- comparing training methods: seeds are replicates
EXACT_SPLITS_MAX = 20_000
"""Up to this many group relabelings, the unpaired seed-level test enumerates them all (else Monte Carlo)."""


def _regularized_beta(x: float, a: float, b: float, complement: float | None = None) -> float:
    """I_x(a, b), the regularized incomplete beta function (Lentz's continued fraction, as in Numerical Recipes).
    `complement` is 1 - x when the caller has it without cancellation (x close to 1)."""
    y = 1.0 - x if complement is None else complement
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the continued fraction converges fast below this point: use the symmetry
        return 1.0 - _regularized_beta(y, b, a, x)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return math.exp(log_front) * fraction / a


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function with `df` > 0 (not necessarily whole) degrees of freedom."""
    if df <= 0:
        raise ValueError(f"df={df} must be > 0")
    square = t * t  # both df / (df + t^2) and its complement, so that neither is 1 minus a number close to 1
    tail = 0.5 * _regularized_beta(df / (df + square), df / 2, 0.5, square / (df + square))
    return 1.0 - tail if t > 0 else tail


def t_quantile(q: float, df: float) -> float:
    """The `q` quantile (0 < q < 1) of Student's t with `df` > 0 degrees of freedom (bisection on `t_cdf`).

    >>> round(t_quantile(0.975, 4.5), 6)
    2.658912
    """
    if not 0 < q < 1:
        raise ValueError(f"q={q} must be in (0, 1)")
    low, high = -1.0, 1.0
    while t_cdf(low, df) > q:
        low *= 2
    while t_cdf(high, df) < q:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if t_cdf(middle, df) < q else (low, middle)
        if high - low < 1e-12:
            break
    return (low + high) / 2


def welch_interval(a: Sequence[float], b: Sequence[float]) -> tuple[list[float] | None, float | None]:
    """The 95% Welch interval of mean(a) - mean(b) and its Welch-Satterthwaite degrees of freedom; (None, None)
    when either side has fewer than two values or both have no spread."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size < 2 or y.size < 2:
        return None, None
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    if va + vb == 0:
        return None, None
    df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
    half = t_quantile(0.975, df) * math.sqrt(va + vb)
    difference = float(x.mean() - y.mean())
    return [difference - half, difference + half], float(df)


def permutation_p(a: Sequence[float], b: Sequence[float], *, resamples: int = 20_000, seed: int = 0) -> float:
    """Two-sided p-value of "both groups come from one distribution": the share of relabelings of the pooled
    values into groups of len(a) and len(b) whose |mean difference| is at least the observed one (all of them up
    to `EXACT_SPLITS_MAX`; else `resamples` random ones, the observed counted, from `default_rng(seed)`)."""
    pooled = np.concatenate([np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)])
    size, total = len(a), pooled.sum()
    observed = abs(pooled[:size].mean() - pooled[size:].mean()) - 1e-12

    def gap(chosen: np.ndarray) -> np.ndarray:
        first = chosen.sum(axis=-1)
        return np.abs(first / size - (total - first) / (pooled.size - size))

    if math.comb(pooled.size, size) <= EXACT_SPLITS_MAX:
        splits = np.array(list(itertools.combinations(range(pooled.size), size)))
        return float(np.mean(gap(pooled[splits]) >= observed))
    rng = np.random.default_rng(seed)
    chosen = np.argsort(rng.random((resamples, pooled.size)), axis=1)[:, :size]
    return (int(np.sum(gap(pooled[chosen]) >= observed)) + 1) / (resamples + 1)


def seed_comparison(
    a: Sequence[float], b: Sequence[float], *, paired: bool, seed: int = 0, resamples: int = 20_000
) -> dict[str, float | int | str | bool | list[float] | None]:
    """Compare two training methods by their per-seed figures `a` and `b` (each seed's success rate): the seeds
    are the replicates.

    `paired` (seed s of both shares a warm start and its training draws; `len(a) == len(b)`): `difference` the
    mean of a - b, `ci95` the t interval of the differences, `p_value` the exact sign-flip test of them, `min_p`
    the smallest p it can give: 2 / 2^m with m the non-zero differences (a seed whose two runs tie has no sign to
    flip; 1 when none differs). Unpaired: the difference of the means, Welch's interval, and the permutation test
    between the groups (`permutation_p`), `min_p` its smallest p with these values (the share of relabelings as
    extreme as the most extreme one: 2 / C(n_a + n_b, n_a) for equal groups without ties, more with ties).
    `min_p_basis` says what bounds `min_p` ("5 seeds", "3 of 5 seeds differing", "5 vs 3 seeds"); `min_p` is
    None where the test is Monte Carlo. `ci95` is None with fewer than two seeds a side (or no spread); `seeds` is
    [n_a, n_b]."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size == 0 or y.size == 0:
        raise ValueError("seed_comparison needs at least one seed on each side")
    if paired:
        if x.size != y.size:
            raise ValueError(f"paired seeds need as many on each side (got {x.size} and {y.size})")
        differences = x - y
        summary = seed_summary(differences)
        differing = int(np.count_nonzero(differences))
        return {
            "difference": float(differences.mean()),
            "ci95": summary["ci95"] if summary["std"] else None,
            "p_value": sign_flip_p(differences, resamples=resamples, seed=seed),
            "test": "sign-flip over paired seeds",
            "seeds": [int(x.size), int(y.size)],
            "min_p": min(1.0, 2.0 / 2**differing) if differing <= EXACT_FLIPS_MAX else None,
            "min_p_basis": (
                f"{x.size} seed{'' if x.size == 1 else 's'}"
                if differing == x.size
                else f"{differing} of {x.size} seeds differing"
            ),
            "paired": True,
        }
    interval, df = welch_interval(x, y)
    return {
        "difference": float(x.mean() - y.mean()),
        "ci95": interval,
        "p_value": permutation_p(x, y, resamples=resamples, seed=seed),
        "test": "permutation between seed groups",
        "seeds": [int(x.size), int(y.size)],
        "min_p": smallest_permutation_p(x, y),
        "min_p_basis": f"{x.size} vs {y.size} seeds",
        "paired": False,
        "welch_df": df,
    }


def smallest_permutation_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The smallest p `permutation_p` can give for groups of len(a) and len(b) holding these pooled values: the
    share of relabelings whose |mean difference| is the largest any reaches (ties among the values can make
    several relabelings reach it); None beyond `EXACT_SPLITS_MAX` relabelings (the test is Monte Carlo there)."""
    pooled = np.concatenate([np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)])
    size = len(a)
    if math.comb(pooled.size, size) > EXACT_SPLITS_MAX:
        return None
    splits = np.array(list(itertools.combinations(range(pooled.size), size)))
    first = pooled[splits].sum(axis=-1)
    gaps = np.abs(first / size - (pooled.sum() - first) / (pooled.size - size))
    return float(np.mean(gaps >= gaps.max() - 1e-12))


def format_p(
    p: float, *, resamples: int | None = None, min_p: float | None = None, seeds: int | str | None = None
) -> str:
    """A p-value as a reader should see it: `p = 0.031` (two significant figures below 0.1, two decimals above),
    `p < 0.001`; at a Monte Carlo test's floor (1 / (resamples + 1): no relabeling was as extreme) the bound it
    is, the floor rounded up to a power of ten (`p < 1e-4` for 20,000 resamples, never the `5e-05` the floor
    would print as); at an exact test's smallest attainable value `min_p`, said so, with the seeds when `seeds`
    is given (a count, "5 seeds" for 5, or the words that follow "with": "3 vs 2 seeds", "4 of 5 seeds
    differing"). Raises ValueError for p outside [0, 1] (or NaN).

    >>> format_p(0.0312), format_p(0.0004), format_p(0.5), format_p(1.0)
    ('p = 0.031', 'p < 0.001', 'p = 0.50', 'p = 1.00')
    >>> format_p(1 / 20_001, resamples=20_000), format_p(1 / 10_001, resamples=10_000)
    ('p < 1e-4', 'p < 1e-4')
    >>> format_p(0.0625, min_p=0.0625)
    'p = 0.0625 (the smallest possible)'
    >>> format_p(2 / 2**5, min_p=2 / 2**5, seeds=5)
    'p = 0.0625 (the smallest possible with 5 seeds)'
    >>> format_p(2 / 2**12, min_p=2 / 2**12, seeds=12)
    'p = 0.000488 (the smallest possible with 12 seeds)'
    """
    if not 0.0 <= p <= 1.0:  # also NaN
        raise ValueError(f"p={p} must be in [0, 1]")
    if resamples is not None and p <= 1 / (resamples + 1) + 1e-15:
        exponent = math.ceil(math.log10(1 / (resamples + 1)))
        return f"p < 1e{exponent}" if exponent < 0 else f"p < {10.0**exponent:g}"
    if min_p is not None and abs(p - min_p) < 1e-12:
        if seeds is None:
            with_seeds = ""
        elif isinstance(seeds, str):
            with_seeds = f" with {seeds}"
        else:
            with_seeds = f" with {seeds} seed{'' if seeds == 1 else 's'}"
        return f"p = {p:.3g} (the smallest possible{with_seeds})"
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.2g}" if p < 0.1 else f"p = {p:.2f}"
