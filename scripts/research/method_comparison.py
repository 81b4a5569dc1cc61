"""Two training methods compared at the level of what was replicated: the training seed.

Each method ran once per training seed and each run was evaluated on one suite (the same instances, in the same
order, for every run). `compare_methods(ours, reference)` takes `ours[seed]` and `reference[seed]`, each run's
per-instance outcomes (0/1 success), and returns:

- `difference`: the mean over seeds of each method's success rate, ours minus the reference's;
- `ci95`: a hierarchical bootstrap interval of that difference (seeds resampled, then instances within them;
  `research.stats.hierarchical_bootstrap`), paired by seed when both methods ran the same seeds (seed s of
  both starts from the same warm start and draws the same training instances) and by instance always (one suite);
- `test`: the seed-level test (`research.stats.seed_comparison` of the per-seed success rates: an exact
  sign-flip test of the per-seed differences when paired, else an exact permutation test between the groups),
  with its `p_value` and `min_p` (the smallest p it can give with these seeds);
- `per_seed`: each shared seed's difference (ours minus reference), the spread a reader should see.

Episode-level tests (McNemar) are not used here: episodes of one suite are not replicates of a training method,
and their outcomes are strongly correlated across seeds. `cell(comparison)` writes the result for a Markdown table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from research.stats import format_p, hierarchical_bootstrap, seed_comparison

COMPARISON_WORDS = (
    "Differences are over training seeds, the replicates: the mean over seeds of each method's success, its 95% "
    "interval by a hierarchical bootstrap (seeds, then the suite's instances), and the seed-level test's p (an exact "
    "sign-flip test of the per-seed differences when both methods ran the same seeds, else a permutation test "
    "between the seed groups; with n seeds an exact test cannot go below 2/2^n, said where reached), then each "
    "seed's own difference."
)
"""What a comparison cell says, for the reports' prose."""


def compare_methods(
    ours: Mapping[int, Sequence[float]],
    reference: Mapping[int, Sequence[float]],
    *,
    resamples: int = 10_000,
    seed: int = 0,
) -> dict | None:
    """The comparison of the module docstring; None when either method has no seed (nothing to compare)."""
    if not ours or not reference:
        return None
    shared = sorted(set(ours) & set(reference))
    paired = set(ours) == set(reference)  # then seed i of each list is the same seed
    a_seeds, b_seeds = sorted(ours), sorted(reference)
    a = [np.asarray(ours[s], dtype=np.float64) for s in a_seeds]
    b = [np.asarray(reference[s], dtype=np.float64) for s in b_seeds]
    rates_a, rates_b = [float(x.mean()) for x in a], [float(x.mean()) for x in b]
    test = seed_comparison(rates_a, rates_b, paired=paired, seed=seed)
    interval = hierarchical_bootstrap(a, b, paired=paired, resamples=resamples, seed=seed)
    return {
        "difference": float(np.mean(rates_a) - np.mean(rates_b)),
        "ci95": interval["ci95"],
        "test": test,
        "per_seed": {s: float(np.mean(ours[s]) - np.mean(reference[s])) for s in shared},
        "paired": paired,
        "seeds": (len(a_seeds), len(b_seeds)),
    }


def cell(comparison: dict | None) -> str:
    """`+80.7 [+52.0, +95.3], p = 0.25 (the smallest possible with 3 seeds), 3 vs 3 seeds; per seed +84, +83, +75`
    in points; "—" for None."""
    if comparison is None:
        return "—"
    low, high = comparison["ci95"]
    test = comparison["test"]
    untestable = test.get("min_p") is not None and test["min_p"] >= 1  # e.g. one seed a side: no p below 1
    p = "no test possible" if untestable else format_p(test["p_value"], min_p=test.get("min_p"))
    per_seed = ", ".join(f"{round(100 * d):+d}" for d in comparison["per_seed"].values())  # no "-0"
    seeds = "{} vs {} seeds".format(*comparison["seeds"])
    return f"{100 * comparison['difference']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}], {p}, {seeds}" + (
        f"; per seed {per_seed}" if per_seed else ""
    )
