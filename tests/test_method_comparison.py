"""Training methods compared over seeds: the figures against the statistics they are built from, and the
interval's coverage measured by simulation."""

import numpy as np
import pytest

from research.method_comparison import cell, compare_methods
from research.stats import seed_comparison


def _runs(rates, instances=100, seed=0):
    rng = np.random.default_rng(seed)
    return {s: (rng.random(instances) < rate).astype(int).tolist() for s, rate in enumerate(rates)}


def test_methods_run_on_the_same_seeds_are_paired_by_seed():
    ours, reference = _runs([0.95, 0.9, 0.2]), _runs([0.1, 0.1, 0.1], seed=1)
    result = compare_methods(ours, reference)
    rates = [np.mean(ours[s]) for s in range(3)], [np.mean(reference[s]) for s in range(3)]
    assert result["paired"] and result["seeds"] == (3, 3)
    assert result["test"] == seed_comparison(*rates, paired=True)
    differences = np.subtract(*rates)  # the t interval by hand: mean ± t(0.975, 2) * sd / sqrt(3)
    half = 4.302652729749464 * differences.std(ddof=1) / np.sqrt(3)
    assert result["ci95"] == pytest.approx([differences.mean() - half, min(1.0, differences.mean() + half)])
    assert result["difference"] == pytest.approx(np.mean(rates[0]) - np.mean(rates[1]))
    assert list(result["per_seed"]) == [0, 1, 2]
    text = cell(result)
    assert text.startswith(f"{100 * result['difference']:+.1f} [{100 * result['ci95'][0]:+.1f}, ")
    assert "p = 0.25 (the smallest possible with 3 seeds)" in text and "3 vs 3 seeds; per seed " in text
    assert not result["across_builds"] and "across builds" not in text


def test_methods_with_different_seeds_are_compared_as_groups_with_welchs_interval():
    from scipy import stats as scipy_stats

    ours, reference = _runs([0.9, 0.8, 0.95, 0.9, 0.85]), _runs([0.7, 0.8, 0.6], seed=1)
    result = compare_methods(ours, reference)
    assert not result["paired"] and result["seeds"] == (5, 3) and list(result["per_seed"]) == [0, 1, 2]
    assert result["test"]["test"] == "permutation between seed groups"
    rates = [np.mean(ours[s]) for s in range(5)], [np.mean(reference[s]) for s in range(3)]
    welch = scipy_stats.ttest_ind(*rates, equal_var=False).confidence_interval()
    assert result["ci95"] == pytest.approx(list(welch))
    assert compare_methods({}, reference) is None and cell(None) == "—"


def test_one_seed_a_side_is_said_to_allow_no_test_and_no_interval():
    result = compare_methods(_runs([0.9]), _runs([0.1], seed=1))
    assert "[no interval: one seed on a side], no test possible with 1 seed, 1 vs 1 seeds" in cell(result)


def test_an_interval_wider_than_success_rates_allow_is_clipped_to_them():
    ours, reference = _runs([1.0, 1.0, 0.0]), _runs([0.0, 0.0, 0.0], seed=1)  # differences 1, 1, 0
    low, high = compare_methods(ours, reference)["ci95"]
    assert high == 1.0 and low == pytest.approx(
        2 / 3 - 4.302652729749464 * np.std([1, 1, 0], ddof=1) / np.sqrt(3)
    )


def test_tied_seeds_bound_the_smallest_p_and_the_cell_says_so():
    ours = {0: [1, 1, 0, 0], 1: [1, 1, 1, 0], 2: [1, 0, 0, 0]}
    reference = {0: [1, 1, 0, 0], 1: [0, 0, 0, 0], 2: [0, 0, 0, 0]}  # seed 0 ties: two seeds can flip
    result = compare_methods(ours, reference)
    assert result["test"]["min_p"] == 0.5 == result["test"]["p_value"]
    assert "p = 0.5 (the smallest possible with 2 of 3 seeds differing)" in cell(result)


def test_rows_of_several_code_commits_are_marked_across_builds():
    ours, reference = _runs([0.9, 0.8]), _runs([0.5, 0.4], seed=1)
    one = compare_methods(ours, reference, builds=(["a" * 40, "a" * 40], ["a" * 40, "a" * 40]))
    assert not one["across_builds"] and "across builds" not in cell(one)
    mixed = compare_methods(ours, reference, builds=(["a" * 40, "b" * 40], [None, "c" * 39 + "d"]))
    assert mixed["across_builds"] and mixed["builds"] == [["aaaaaaa", "bbbbbbb"], ["ccccccc", "unrecorded"]]
    assert cell(mixed).endswith("; across builds: ours at aaaaaaa, bbbbbbb, reference at ccccccc, unrecorded")


def test_malformed_outcomes_are_refused_with_what_is_wrong():
    good = {0: [1, 0, 1], 1: [0, 1, 1]}
    for ours, reference in (
        ({0: [1, 0, 1], 1: []}, good),  # a seed without outcomes
        ({0: [[1, 0]], 1: [1, 0]}, good),  # a seed that is not a flat list
    ):
        with pytest.raises(ValueError, match="non-empty flat list of outcomes"):
            compare_methods(ours, reference)
    with pytest.raises(ValueError, match="finite"):
        compare_methods(good, {0: [1, float("nan"), 1], 1: [0, 1, 1]})
    with pytest.raises(ValueError, match="same suite"):
        compare_methods(good, {0: [1, 0], 1: [0, 1]})  # paired seeds evaluated on suites of different sizes
    # unpaired sides may differ in seeds and instances
    assert compare_methods(good, {5: [1, 1]})["difference"] == pytest.approx(-1 / 3)


REGIMES = {  # (spread of a run's success across training seeds, suite instances): the two the audit measured
    "seeds spread 0.25, 128 instances": (0.25, 128),
    "seeds spread 0.12, 64 instances": (0.12, 64),
}


def _coverage(spread: float, instances: int, *, paired: bool, studies: int = 2_000, seeds: int = 5) -> float:
    """The share of simulated studies with no true difference whose `compare_methods` interval holds 0: each
    method's run of each seed succeeds on an instance with its own probability, drawn around 0.5 with sd
    `spread` (clipped to [0, 1]), and is evaluated on `instances` instances; unpaired, the reference ran other
    seeds. Seeded, so the figure is the same on every run."""
    rng = np.random.default_rng(20261206)
    held = 0
    for _ in range(studies):
        p = np.clip(rng.normal(0.5, spread, size=(2, seeds)), 0.0, 1.0)
        successes = rng.binomial(instances, p)
        runs = [
            {s: [1] * int(k) + [0] * (instances - int(k)) for s, k in enumerate(side, start=offset)}
            for side, offset in zip(successes, (0, 0 if paired else seeds))
        ]
        low, high = compare_methods(*runs)["ci95"]
        held += low <= 0.0 <= high
    return held / studies


@pytest.mark.parametrize("paired", [True, False], ids=["paired seeds", "unpaired seeds"])
@pytest.mark.parametrize("regime", list(REGIMES))
def test_the_95_percent_interval_holds_a_null_difference_in_93_to_97_percent_of_studies(regime, paired):
    coverage = _coverage(*REGIMES[regime], paired=paired)
    # 2,000 studies: the figure's own Monte Carlo error is about 0.5 points
    assert 0.93 <= coverage <= 0.97, f"{regime}, paired={paired}: the interval held 0 in {coverage:.1%}"
