"""The micro-batching benchmark's samples are what its docstring and README say: seeded, prompts of 48-160 tokens,
completions of 16-48 tokens but one row in eight of 256-384, on which packing by tokens pads less than cutting by
count."""

import pytest
from scripts_loader import load_script

torch = pytest.importorskip("torch")

from pettingllms.trainers.update.micro_batches import by_count, by_tokens, padded_tokens  # noqa: E402


def load_benchmark():
    return load_script("bench_micro_batching", "benchmarks")


def test_the_benchmarks_samples_are_seeded_and_long_tailed():
    bench = load_benchmark()
    samples = bench.long_tailed_samples(64, seed=0)
    lengths = [(len(s.generation.prompt_ids), len(s.generation.completion_ids)) for s in samples]
    assert lengths == [
        (len(s.generation.prompt_ids), len(s.generation.completion_ids))
        for s in bench.long_tailed_samples(64, 0)
    ]
    assert all(48 <= p <= 160 for p, _ in lengths)
    long_rows = [c for _, c in lengths if c >= 256]
    assert len(long_rows) == 8 and all(c <= 384 for c in long_rows)
    assert all(16 <= c <= 48 for _, c in lengths if c < 256)
    assert [c >= 256 for _, c in lengths] != sorted((c >= 256 for _, c in lengths), reverse=True)  # shuffled
    assert all(-1 <= s.advantage <= 1 for s in samples)
    packed, counted = by_tokens(samples, 8), by_count(samples, 8)
    assert sum(map(padded_tokens, packed)) < sum(map(padded_tokens, counted))


def test_the_gradient_difference_is_relative_to_each_tensors_largest_entry():
    bench = load_benchmark()
    want = {"a": torch.tensor([2.0, -4.0]), "b": torch.tensor([0.5])}
    got = {"a": torch.tensor([2.0, -3.0]), "b": torch.tensor([0.5])}
    assert bench.largest_relative_difference(got, want) == pytest.approx(0.25)
