"""Two training methods compared at the level of what was replicated: the training seed.

Each method ran once per training seed and each run was evaluated on one suite (the same instances, in the same
order, for every run). `compare_methods(ours, reference)` takes `ours[seed]` and `reference[seed]`, each run's
per-instance outcomes (0/1 success), and returns:

- `difference`: the mean over seeds of each method's success rate, ours minus the reference's;
- `ci95`: the 95% interval of that difference over seeds (`research.stats.seed_comparison`): the t interval of
  the per-seed differences when both methods ran the same seeds (seed s of both starts from the same warm start
  and draws the same training instances), else Welch's interval between the two groups of per-seed rates; None
  with one seed a side or no spread; clipped to [-1, 1], the range a difference of success rates can take
  (which can only raise its coverage). Its coverage is measured (tests/test_method_comparison.py: 93-97% with 5
  seeds, paired and not, with seeds spread as training runs are); it speaks of training seeds on this suite;
- `test`: the seed-level test of the same per-seed rates (an exact sign-flip test of the per-seed differences
  when paired, else an exact permutation test between the groups), with its `p_value`, `min_p` (the smallest p
  it can give with these seeds and their ties) and `min_p_basis` (its words);
- `per_seed`: each shared seed's difference (ours minus reference), the spread a reader should see;
- `builds`: the code commits the compared rows were recorded at, ours and the reference's (given by the caller,
  from the ledger), and `across_builds`: whether they are more than one commit, so a reader is told that part of
  the difference may be the code's.

Episode-level tests (McNemar) are not used here: episodes of one suite are not replicates of a training method,
and their outcomes are strongly correlated across seeds. `cell(comparison)` writes the result for a Markdown table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from research.stats import format_p, seed_comparison

COMPARISON_WORDS = (
    "Differences are over training seeds, the replicates: the mean over seeds of each method's success, its 95% "
    "interval over seeds (the t interval of the per-seed differences when both methods ran the same seeds, else "
    "Welch's between the seed groups; coverage measured at 93-97% with 5 seeds), and the seed-level test's p (an "
    "exact sign-flip test of the per-seed differences when paired, else a permutation test between the seed "
    "groups; a paired exact test cannot go below 2/2^m with m seeds whose two runs differ, said where reached), "
    "then each seed's own difference. A comparison whose rows were recorded at more than one code commit says "
    '"across builds" and names them: part of its difference may be the code\'s.'
)
"""What a comparison cell says, for the reports' prose."""

UNRECORDED = "unrecorded"
"""How a row whose ledger line names no code commit is shown among the builds."""


def compare_methods(
    ours: Mapping[int, Sequence[float]],
    reference: Mapping[int, Sequence[float]],
    *,
    builds: tuple[Iterable[str | None], Iterable[str | None]] | None = None,
    seed: int = 0,
) -> dict | None:
    """The comparison of the module docstring; None when either method has no seed (nothing to compare).
    `builds`: the code commits of each side's rows (None for a row whose ledger line names none). ValueError for
    a seed whose outcomes are not a non-empty flat list of finite numbers, and for paired seeds evaluated on
    suites of different sizes."""
    if not ours or not reference:
        return None
    shared = sorted(set(ours) & set(reference))
    paired = set(ours) == set(reference)  # then seed i of each list is the same seed
    a_seeds, b_seeds = sorted(ours), sorted(reference)
    outcomes_a, outcomes_b = _outcomes(ours), _outcomes(reference)
    if paired and any(outcomes_a[s].size != outcomes_b[s].size for s in shared):
        raise ValueError("paired seeds must be evaluated on the same suite (as many instances on both sides)")
    rates_a = [float(outcomes_a[s].mean()) for s in a_seeds]
    rates_b = [float(outcomes_b[s].mean()) for s in b_seeds]
    test = seed_comparison(rates_a, rates_b, paired=paired, seed=seed)
    commits = [[], []] if builds is None else [sorted({_short(commit) for commit in side}) for side in builds]
    return {
        "difference": float(np.mean(rates_a) - np.mean(rates_b)),
        "ci95": clipped(test["ci95"]),
        "test": test,
        "per_seed": {s: float(outcomes_a[s].mean() - outcomes_b[s].mean()) for s in shared},
        "paired": paired,
        "seeds": (len(a_seeds), len(b_seeds)),
        "builds": commits,
        "across_builds": len(set(commits[0]) | set(commits[1])) > 1,
    }


def found(result: dict) -> str:
    """What a paired comparison (`compare_methods`, `seed_comparison`) shows: "gains" (its 95% interval above 0),
    "loses" (below 0) or "none" (it holds 0); with no spread over seeds (every seed the same difference), the sign
    of that difference."""
    low, high = result["ci95"] if result["ci95"] is not None else (result["difference"],) * 2
    return "gains" if low > 0 else "loses" if high < 0 else "none"


def clipped(interval: Sequence[float] | None) -> list[float] | None:
    """An interval of a difference of success rates clipped to [-1, 1], the range such a difference can take."""
    return None if interval is None else [max(-1.0, interval[0]), min(1.0, interval[1])]


def p_words(test: dict) -> str:
    """A seed-level test's p as a cell says it (`format_p`, with what bounds its smallest value), or "no test
    possible with ..." where no result could give p below 1 (one seed a side, or one seed differing)."""
    if test.get("min_p") is not None and test["min_p"] >= 1:
        return f"no test possible with {test['min_p_basis']}"
    return format_p(test["p_value"], min_p=test.get("min_p"), seeds=test.get("min_p_basis"))


def _outcomes(runs: Mapping[int, Sequence[float]]) -> dict[int, np.ndarray]:
    """Each seed's outcomes as an array, checked (`compare_methods`' ValueError)."""
    arrays = {seed: np.asarray(values, dtype=np.float64) for seed, values in runs.items()}
    for seed, values in arrays.items():
        if values.ndim != 1 or values.size == 0:
            raise ValueError(
                f"seed {seed}: each seed needs a non-empty flat list of outcomes (got {values.shape})"
            )
        if not np.isfinite(values).all():
            raise ValueError(
                f"seed {seed}: outcomes must be finite numbers (a NaN or an infinity is not one)"
            )
    return arrays


def _short(commit: str | None) -> str:
    """A commit as a cell names it: its first 7 characters (with "+dirty" kept), or `UNRECORDED`."""
    if commit is None:
        return UNRECORDED
    return commit[:7] + ("+dirty" if commit.endswith("+dirty") else "")


def cell(comparison: dict | None) -> str:
    """`+8.7 [-3.1, +20.5], p = 0.062 (the smallest possible with 5 seeds), 5 vs 5 seeds; per seed +4, +12, ...`
    in points, then "; across builds: ours at a, reference at b" where the rows mix code commits; "—" for None."""
    if comparison is None:
        return "—"
    interval = comparison["ci95"]
    if interval is None:
        shown = (
            "[no interval: one seed on a side]" if 1 in comparison["seeds"] else "[no interval: no spread]"
        )
    else:
        shown = f"[{100 * interval[0]:+.1f}, {100 * interval[1]:+.1f}]"
    p = p_words(comparison["test"])
    per_seed = ", ".join(f"{round(100 * d):+d}" for d in comparison["per_seed"].values())  # no "-0"
    seeds = "{} vs {} seeds".format(*comparison["seeds"])
    text = f"{100 * comparison['difference']:+.1f} {shown}, {p}, {seeds}" + (
        f"; per seed {per_seed}" if per_seed else ""
    )
    if comparison["across_builds"]:
        ours, reference = (", ".join(side) for side in comparison["builds"])
        text += f"; across builds: ours at {ours}, reference at {reference}"
    return text
