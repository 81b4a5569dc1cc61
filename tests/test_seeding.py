"""Every derived seed comes from `pettingllms.core.seeding.derive_seed` (numpy's SeedSequence), never from seed
arithmetic that makes two runs' streams collide."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pettingllms.core.seeding import SEEDING_VERSION, derive_seed

PACKAGE = Path(__file__).parent.parent / "pettingllms"


def test_a_path_names_the_same_seed_in_every_process():
    here = [derive_seed(7, "policy", 2), derive_seed(0, "eval", 3, "tool")]
    code = "from pettingllms.core.seeding import derive_seed as d; print(d(7, 'policy', 2), d(0, 'eval', 3, 'tool'))"
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123"},
    )
    assert [int(word) for word in other.stdout.split()] == here


def test_streams_that_seed_arithmetic_made_collide_are_distinct():
    # `seed * 1_000 + index` gave run 1's first policy the stream of run 0's policy 1000
    assert derive_seed(1, "policy", 0) != derive_seed(0, "policy", 1_000)
    seeds = {derive_seed(root, "policy", index) for root in range(5) for index in range(2_000)}
    assert len(seeds) == 10_000
    assert derive_seed(0, "policy", 0) != derive_seed(0, "eval", 0)  # names separate streams too


def test_derived_seeds_fit_every_seeded_library():
    values = [derive_seed(root, "x", index) for root in (0, 2**40) for index in range(200)]
    assert all(0 <= value < 2**32 for value in values)
    np.random.RandomState(max(values))  # numpy's legacy seeding (vLLM seeds it) takes 32 bits only
    assert derive_seed(np.int64(3), "x") == derive_seed(3, "x")


@pytest.mark.parametrize("part", [-1, 1.5, None, True])
def test_a_path_of_anything_but_names_and_non_negative_integers_is_refused(part):
    with pytest.raises(ValueError, match="a seed path holds names and non-negative integers"):
        derive_seed(0, "policy", part)


def test_two_run_seeds_train_on_disjoint_instances_even_in_long_runs():
    pytest.importorskip("trl")
    from pettingllms.trainers.at_grpo import training_seeds
    from pettingllms.trainers.settings.arguments import parse

    # 600 steps of 16 instances: 9,600 instances, more than the 7,919 that separated seeds 0 and 1 before
    runs = [parse(["--seed", str(seed), "--instances_per_step", "16"]) for seed in (0, 1)]
    seen = [{s for step in range(600) for s in training_seeds(args, step)} for args in runs]
    assert len(seen[0]) == len(seen[1]) == 9_600 and not seen[0] & seen[1]


def test_no_seed_arithmetic_is_left_in_the_package():
    pattern = re.compile(r"seed\s*\*\s*\d|\b7_?919\b|\b1_?000_?003\b|seed \+ len\(")
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if pattern.search(line) and not line.lstrip().startswith("#") and path.name != "seeding.py"
    ]
    assert found == []


def test_the_evaluation_cache_keys_on_the_seeding_scheme(monkeypatch):
    from pettingllms.eval import cache_key
    from pettingllms.eval.suites import build_suite

    suite = build_suite("plan-path-v0", episodes=2)
    key = cache_key.run_key({"seed": 0}, suite, {})
    monkeypatch.setattr(cache_key, "SEEDING_VERSION", SEEDING_VERSION + 1)
    assert cache_key.run_key({"seed": 0}, suite, {}) != key
