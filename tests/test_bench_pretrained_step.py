"""The pretrained-step benchmark's own accounting: which generations it counts as probes, and how many tokens it
counts of transformers' `generate` (each row up to its first end-of-sequence)."""

import pytest
from scripts_loader import load_script

torch = pytest.importorskip("torch")

from pettingllms.backends.base import Generation, SamplingConfig  # noqa: E402


def load_benchmark():
    return load_script("bench_pretrained_step", "benchmarks")


class FakeSampler:
    def generate(self, prompts, n, sampling, seeds=None):
        length = 2 if sampling.temperature == 0 else 5
        return [[Generation("x", (1,), tuple(range(length)))] * n for _ in prompts]


def test_greedy_calls_are_probes_and_sampled_calls_are_candidates():
    sampler = FakeSampler()
    timer = load_benchmark().TimedSampler(sampler)
    sampler.generate(["a", "b"], 4, SamplingConfig(temperature=1.0))  # 8 completions of 5 tokens
    sampler.generate(["a"], 3, SamplingConfig(temperature=0.0))  # 3 probes of 2 tokens
    assert timer.tokens == {"sampled": 40, "probes": 6}
    assert timer.seconds["sampled"] > 0 and timer.seconds["probes"] > 0
    timer.reset()
    assert timer.tokens == {"sampled": 0, "probes": 0} and timer.seconds == {"sampled": 0.0, "probes": 0.0}


def test_transformers_tokens_are_counted_to_each_rows_first_end_of_sequence():
    class FakeModel:
        def generate(self, input_ids, attention_mask, **kwargs):
            assert attention_mask.tolist() == [[0, 1], [1, 1]]  # left padding
            new = torch.tensor(
                [[5, 9, 7, 9], [5, 6, 7, 8]]
            )  # 9 ends row 0 at its second token; row 1 runs out
            return torch.cat([input_ids, new], dim=1)

    made = load_benchmark().transformers_generate(FakeModel(), [[3], [3, 4]], 0, frozenset({9}), 4)
    assert made == 2 + 4
