"""Comparison statistics, each checked against an independent computation (scipy, or brute force)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pettingllms.eval.stats import mcnemar_exact_p, paired_comparison, seed_summary, sign_flip_p, t_975

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
