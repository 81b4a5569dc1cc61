"""Comparison statistics, each checked against an independent computation (scipy, or brute force)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.stats import mcnemar_exact_p, paired_comparison, seed_summary, sign_flip_p, t_975

scipy_stats = pytest.importorskip("scipy.stats")


def test_t_quantiles_are_students():
    for df in (1, 2, 3, 4, 9, 29, 30):
        assert t_975(df) == pytest.approx(scipy_stats.t.ppf(0.975, df), rel=1e-9)
    assert t_975(500) == pytest.approx(scipy_stats.norm.ppf(0.975))
    with pytest.raises(ValueError, match="df"):
        t_975(0)


def test_seed_summary_is_the_sample_std_and_the_t_interval():
    values = [0.31, 0.42, 0.37]
    summary = seed_summary(values)
    assert summary["std"] == pytest.approx(np.std(values, ddof=1))  # not numpy's default ddof=0
    low, high = scipy_stats.t.interval(0.95, 2, loc=np.mean(values), scale=scipy_stats.sem(values))
    assert summary["ci95"] == pytest.approx([low, high])
    assert seed_summary([0.5]) == {"mean": 0.5, "std": None, "n": 1, "ci95": None}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=40))
def test_mcnemar_is_the_exact_binomial_test_of_discordant_pairs(pairs):
    a, b = [int(x) for x, _ in pairs], [int(y) for _, y in pairs]
    wins = sum(x and not y for x, y in zip(a, b))
    losses = sum(y and not x for x, y in zip(a, b))
    expected = 1.0 if wins + losses == 0 else scipy_stats.binomtest(wins, wins + losses, 0.5).pvalue
    assert mcnemar_exact_p(a, b) == pytest.approx(expected)


def test_sign_flip_p_enumerates_every_pattern_for_small_samples():
    differences = [0.5, 0.25, -0.25, 1.0, 0.0, 0.75]
    nonzero = [d for d in differences if d]
    observed = abs(sum(nonzero))
    brute = np.mean([abs(sum(s * d for s, d in zip(signs, nonzero))) >= observed - 1e-12
                     for signs in itertools.product((1, -1), repeat=len(nonzero))])  # fmt: skip
    assert sign_flip_p(differences) == pytest.approx(brute)
    assert sign_flip_p([0.0, 0.0]) == 1.0


def test_sign_flip_p_by_monte_carlo_is_seeded_and_agrees_with_a_t_test_on_a_large_sample():
    rng = np.random.default_rng(1)
    differences = rng.normal(0.15, 1.0, size=200)
    first, again = sign_flip_p(differences, seed=3), sign_flip_p(differences, seed=3)
    assert first == again
    assert first == pytest.approx(scipy_stats.ttest_1samp(differences, 0.0).pvalue, abs=0.02)


def test_paired_comparison_of_successes():
    a = [1] * 30 + [0] * 10 + [1] * 5  # method a wins 5 episodes b loses, loses none that b wins
    b = [1] * 30 + [0] * 10 + [0] * 5
    result = paired_comparison(a, b, seed=0)
    assert result["difference"] == pytest.approx(5 / 45)
    assert result["test"] == "McNemar exact" and result["p_value"] == pytest.approx(2 / 2**5)
    low, high = result["ci95"]
    assert 0 <= low < 5 / 45 < high
    assert paired_comparison(a, b, seed=0) == result  # seeded
    rates = paired_comparison([0.5, 1.0, 0.25], [0.0, 1.0, 0.5])  # success rates over seeds: not 0/1
    assert rates["test"] == "sign-flip permutation" and rates["p_value"] == pytest.approx(
        sign_flip_p([0.5, -0.25])
    )
    with pytest.raises(ValueError, match="equal"):
        paired_comparison([1, 0], [1])


def test_the_bootstrap_interval_covers_the_true_difference_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    covered = 0
    for trial in range(200):
        a = rng.random(120) < 0.6
        b = rng.random(120) < 0.4
        low, high = paired_comparison(a.astype(float), b.astype(float), resamples=2_000, seed=trial)["ci95"]
        covered += low <= 0.2 <= high
    assert 0.88 <= covered / 200 <= 0.99


def test_t_quantiles_and_the_welch_interval_agree_with_scipy_at_fractional_degrees_of_freedom():
    from research.stats import t_cdf, t_quantile, welch_interval

    for df in (0.7, 1.5, 3.18, 4.5, 12.25, 60.0):
        for q in (0.6, 0.9, 0.975, 0.999):
            assert t_quantile(q, df) == pytest.approx(scipy_stats.t.ppf(q, df), rel=1e-8)
        assert t_cdf(-1.3, df) == pytest.approx(scipy_stats.t.cdf(-1.3, df), rel=1e-9)
    a, b = [0.9, 0.8, 0.95, 0.9], [0.7, 0.8, 0.6]
    interval, df = welch_interval(a, b)
    reference = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert interval == pytest.approx(list(reference.confidence_interval()), rel=1e-9)
    assert df == pytest.approx(reference.df)
    # the Welch-Satterthwaite degrees of freedom by hand: variances of the means 0.0011458/4... (s^2/n each side)
    va, vb = np.var(a, ddof=1) / 4, np.var(b, ddof=1) / 3
    assert df == pytest.approx((va + vb) ** 2 / (va**2 / 3 + vb**2 / 2))


def test_paired_seeds_by_hand_and_against_scipy():
    from research.stats import seed_comparison

    # differences +0.2, 0, +0.35: the zero carries no sign; of the 4 sign patterns of the other two, those with
    # |sum| >= 0.55 are (+,+) and (-,-): p = 2/4 = 0.5, which is also the smallest it can be: the tied seed
    # cannot flip, so two seeds bound it at 2/2^2 (not 2/2^3 = 0.25)
    result = seed_comparison([0.9, 0.8, 0.95], [0.7, 0.8, 0.6], paired=True)
    assert result["p_value"] == 0.5 and result["min_p"] == 0.5 and result["seeds"] == [3, 3]
    assert result["min_p_basis"] == "2 of 3 seeds differing"
    assert result["difference"] == pytest.approx(0.55 / 3)
    reference = scipy_stats.ttest_rel([0.9, 0.8, 0.95], [0.7, 0.8, 0.6]).confidence_interval()
    assert result["ci95"] == pytest.approx(list(reference))
    exact = scipy_stats.permutation_test(
        ([0.9, 0.8, 0.95], [0.7, 0.8, 0.6]),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        n_resamples=np.inf,
    )
    assert result["p_value"] == pytest.approx(exact.pvalue)
    five = seed_comparison([0.9] * 5, [0.1] * 5, paired=True)
    assert five["p_value"] == five["min_p"] == 2 / 32 and five["ci95"] is None  # no spread: no t interval
    assert five["min_p_basis"] == "5 seeds"
    tied = seed_comparison([0.5] * 4, [0.5] * 4, paired=True)
    assert tied["p_value"] == tied["min_p"] == 1.0 and tied["min_p_basis"] == "0 of 4 seeds differing"
    with pytest.raises(ValueError, match="as many on each side"):
        seed_comparison([0.9, 0.8], [0.7], paired=True)


def test_unpaired_seed_groups_by_hand_and_against_scipy():
    from research.stats import seed_comparison

    # a = {3, 4}, b = {1, 2}: of the C(4, 2) = 6 splits, |mean gap| >= 2 only for {3,4}|{1,2} and {1,2}|{3,4}
    result = seed_comparison([3.0, 4.0], [1.0, 2.0], paired=False)
    assert result["p_value"] == pytest.approx(2 / 6) and result["min_p"] == pytest.approx(2 / 6)
    a, b = [0.9, 0.8, 0.95, 0.9, 0.85], [0.7, 0.8, 0.6]
    exact = scipy_stats.permutation_test(  # |difference| at least the observed one: our two-sided definition
        (a, b),
        lambda x, y: abs(np.mean(x) - np.mean(y)),
        permutation_type="independent",
        n_resamples=np.inf,
        alternative="greater",
    )
    assert seed_comparison(a, b, paired=False)["p_value"] == pytest.approx(exact.pvalue)


def test_a_large_unpaired_comparison_falls_back_to_a_seeded_monte_carlo_test():
    from research.stats import permutation_p

    rng = np.random.default_rng(0)
    a, b = rng.normal(0.3, 1, 14), rng.normal(0.0, 1, 14)  # C(28, 14) > 20,000 relabelings
    first = permutation_p(a, b, resamples=4_000, seed=2)
    assert first == permutation_p(a, b, resamples=4_000, seed=2)
    exact_t = scipy_stats.ttest_ind(a, b).pvalue
    assert first == pytest.approx(exact_t, abs=0.05)


def test_the_smallest_unpaired_p_counts_the_relabelings_that_tie_with_the_most_extreme():
    from research.stats import permutation_p, smallest_permutation_p

    # {1, 1} against {0, 0}: no ties, 2 of the 6 splits reach the largest gap
    assert smallest_permutation_p([1.0, 1.0], [0.0, 0.0]) == pytest.approx(2 / 6)
    # {2, 1} against {1, 0}: the two 1s tie, so {2, 1} | {1, 0} comes twice (either 1 with the 2), and so does
    # its mirror: 4 of the 6 splits reach the largest gap (1), and no result can give p below 4/6
    assert smallest_permutation_p([2.0, 1.0], [1.0, 0.0]) == pytest.approx(4 / 6)
    assert permutation_p([2.0, 1.0], [1.0, 0.0]) == pytest.approx(4 / 6)  # this one does
    rng = np.random.default_rng(1)
    a, b = rng.random(14), rng.random(14)
    assert smallest_permutation_p(a, b) is None  # Monte Carlo there


def test_p_values_are_printed_as_what_they_are():
    from research.stats import format_p

    assert format_p(0.2) == "p = 0.20" and format_p(0.049) == "p = 0.049"
    floor = 1 / 20_001  # printed as "5e-05" before: the Monte Carlo floor is a bound, not a value
    assert format_p(floor, resamples=20_000) == "p < 1e-4" and format_p(0.2, resamples=20_000) == "p = 0.20"
    assert format_p(2 / 32, min_p=2 / 32) == "p = 0.0625 (the smallest possible)"


def test_format_p_edge_cases():
    from research.stats import format_p

    assert format_p(0.0) == "p < 0.001" and format_p(0.001) == "p = 0.001" and format_p(0.1) == "p = 0.10"
    assert format_p(0.0999) == "p = 0.1"  # two significant figures below 0.1
    # Monte Carlo floors at other resample counts: rounded up to a power of ten, never below the floor
    assert format_p(1 / 1_000, resamples=999) == "p < 1e-3" and format_p(1 / 101, resamples=100) == "p < 1e-2"
    assert format_p(2 / 20_001, resamples=20_000) == "p < 0.001"  # one extreme draw: above the floor
    # the floor bound wins over an exact test's minimum (a Monte Carlo test has none), then min_p
    assert format_p(0.25, min_p=0.25, seeds=3) == "p = 0.25 (the smallest possible with 3 seeds)"
    assert format_p(0.5, min_p=0.25, seeds=3) == "p = 0.50"
    assert (
        format_p(0.1, min_p=0.1, seeds="3 vs 2 seeds") == "p = 0.1 (the smallest possible with 3 vs 2 seeds)"
    )
    assert format_p(0.5, min_p=0.5, seeds="2 of 3 seeds differing") == (
        "p = 0.5 (the smallest possible with 2 of 3 seeds differing)"
    )
    assert format_p(1.0, min_p=1.0, seeds=1) == "p = 1 (the smallest possible with 1 seed)"
    for bad in (-0.01, 1.5, float("nan")):
        with pytest.raises(ValueError, match="must be in"):
            format_p(bad)


def test_t_quantiles_hold_at_the_median_in_the_far_tails_and_at_large_degrees_of_freedom():
    from research.stats import t_cdf, t_quantile

    for df in (0.3, 1.0, 2.5, 7.77, 150.5, 1e4, 1e6):
        for q in (1e-6, 0.025, 0.5, 0.5 + 1e-9, 0.975, 1 - 1e-6):
            expected = scipy_stats.t.ppf(q, df)
            assert abs(t_quantile(q, df) - expected) <= 1e-9 * max(1.0, abs(expected))
    # df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/pi, exact near the median (no 1 - (1 - tiny) loss)
    for t in (1e-7, -3e-5, 2.0, -250.0):
        assert t_cdf(t, 1.0) == pytest.approx(0.5 + np.arctan(t) / np.pi, rel=1e-13)
    for q in (0.1, 0.5, 0.975):
        assert t_quantile(q, 1.0) == pytest.approx(np.tan(np.pi * (q - 0.5)), abs=1e-10)
    for bad in ((0.0, 3.0), (1.0, 3.0), (0.5, 0.0)):
        with pytest.raises(ValueError):
            t_quantile(*bad)


def test_welch_degrees_of_freedom_by_hand():
    from research.stats import welch_interval

    # a = 1, 2, 3: s^2 = 1, s^2/n = 1/3; b = 1, 3, 5, 7: s^2 = 20/3, s^2/n = 5/3; sum 2
    # df = 2^2 / ((1/3)^2 / 2 + (5/3)^2 / 3) = 4 / (1/18 + 25/27) = 4 / (53/54) = 216/53
    interval, df = welch_interval([1, 2, 3], [1, 3, 5, 7])
    assert df == pytest.approx(216 / 53)
    half = scipy_stats.t.ppf(0.975, 216 / 53) * np.sqrt(2)
    assert interval == pytest.approx([-2 - half, -2 + half])
    assert welch_interval([1.0], [1.0, 2.0]) == (None, None)  # one seed: no spread to estimate
    assert welch_interval([1.0, 1.0], [2.0, 2.0]) == (None, None)  # no spread on either side


def test_seed_comparison_minimum_p_values_and_monte_carlo_fallbacks():
    from research.stats import seed_comparison

    # 1 vs 2 seeds, a = {10}, b = {1, 2}: of the C(3, 1) = 3 splits, {10} gives |10 - 1.5| = 8.5, {1} gives
    # |1 - 6| = 5, {2} gives |2 - 5.5| = 3.5: only the observed split is as extreme, p = 1/3 = min_p
    small = seed_comparison([10.0], [1.0, 2.0], paired=False)
    assert small["p_value"] == small["min_p"] == pytest.approx(1 / 3) and small["ci95"] is None
    assert small["seeds"] == [1, 2] and small["paired"] is False and small["test"]
    # 5 paired seeds, differences with ties and mixed signs: the exact 'samples' permutation test of scipy
    a, b = [0.9, 0.85, 0.6, 0.95, 0.7], [0.8, 0.85, 0.7, 0.75, 0.6]
    paired = seed_comparison(a, b, paired=True)
    exact = scipy_stats.permutation_test(
        (a, b), lambda x, y: np.mean(x - y), permutation_type="samples", n_resamples=np.inf
    )
    # one seed ties (0.85 against 0.85): four can flip, so no result can go below 2/2^4
    assert paired["p_value"] == pytest.approx(exact.pvalue) and paired["min_p"] == 2 / 16
    assert seed_comparison(a, a, paired=True)["p_value"] == 1.0  # every difference zero
    # beyond the exact bounds: a seeded Monte Carlo p with no minimum, never below 1 / (resamples + 1)
    rng = np.random.default_rng(5)
    many_a, many_b = rng.normal(1, 1, 17), rng.normal(0, 1, 17)
    for paired_flag in (True, False):
        first = seed_comparison(many_a, many_b, paired=paired_flag, seed=3, resamples=2_000)
        assert first == seed_comparison(many_a, many_b, paired=paired_flag, seed=3, resamples=2_000)
        assert first["min_p"] is None and first["p_value"] >= 1 / 2_001
    with pytest.raises(ValueError, match="at least one seed"):
        seed_comparison([], [0.5], paired=False)
