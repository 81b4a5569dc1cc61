"""Training methods compared over seeds: the figures against the statistics they are built from."""

import numpy as np
import pytest

from research.method_comparison import cell, compare_methods
from research.stats import hierarchical_bootstrap, seed_comparison


def _runs(rates, instances=100, seed=0):
    rng = np.random.default_rng(seed)
    return {s: (rng.random(instances) < rate).astype(int).tolist() for s, rate in enumerate(rates)}


def test_methods_run_on_the_same_seeds_are_paired_by_seed_and_instance():
    ours, reference = _runs([0.95, 0.9, 0.2]), _runs([0.1, 0.1, 0.1], seed=1)
    result = compare_methods(ours, reference, resamples=2_000)
    rates = [np.mean(ours[s]) for s in range(3)], [np.mean(reference[s]) for s in range(3)]
    assert result["paired"] and result["seeds"] == (3, 3)
    assert result["test"] == seed_comparison(*rates, paired=True)
    assert (
        result["ci95"]
        == hierarchical_bootstrap(
            [ours[s] for s in range(3)], [reference[s] for s in range(3)], paired=True, resamples=2_000
        )["ci95"]
    )
    assert result["difference"] == pytest.approx(np.mean(rates[0]) - np.mean(rates[1]))
    assert list(result["per_seed"]) == [0, 1, 2]
    text = cell(result)
    assert (
        text.startswith(f"{100 * result['difference']:+.1f} [") and "p = 0.25 (the smallest possible)" in text
    )
    assert "3 vs 3 seeds; per seed " in text


def test_methods_with_different_seeds_are_compared_as_groups():
    ours, reference = _runs([0.9, 0.8, 0.95, 0.9, 0.85]), _runs([0.7, 0.8, 0.6], seed=1)
    result = compare_methods(ours, reference, resamples=2_000)
    assert not result["paired"] and result["seeds"] == (5, 3) and list(result["per_seed"]) == [0, 1, 2]
    assert result["test"]["test"] == "permutation between seed groups"
    assert compare_methods({}, reference) is None and cell(None) == "—"


def test_one_seed_a_side_is_said_to_allow_no_test():
    result = compare_methods(_runs([0.9]), _runs([0.1], seed=1), resamples=500)
    assert "no test possible, 1 vs 1 seeds" in cell(result)
