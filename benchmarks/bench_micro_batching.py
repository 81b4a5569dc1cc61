"""The update's micro-batching on completions of very different lengths: cut by count (TRL's way) against packed
by a token budget (`micro_batching: tokens`, `trainers/update/micro_batches.py`), on the same samples.

The samples are shaped like one policy's share of an AT-GRPO step whose completions vary as a real rollout's do:
`--samples` rows whose prompts are 48-160 tokens and whose completions are short (16-48 tokens) except for one row
in eight that runs long (256-384 tokens, the budget-filling answer). Lengths and token ids are drawn from a seeded
generator, in an order shuffled by it (rows of one group sit together in a rollout, but long rows fall anywhere).
Both cuts use `per_device_train_batch_size` = `--rows`. For each cut: micro-batches, padded tokens (rows x (longest
prompt + longest completion) summed over micro-batches), and the median wall time of `PolicyUpdater.accumulate_
gradients` (forward + backward of every micro-batch, the part the cut changes; the optimizer step is the same).
The two cuts' gradients are compared (largest difference relative to each tensor's largest entry): the gradient is
the one-batch gradient either way (tested in `tests/test_updater_weights.py`).

The model is the built-in tiny one (`pettingllms.models.tiny`), float32, one torch thread per core of this machine.

    .venv/bin/python benchmarks/bench_micro_batching.py [--json benchmarks/results/micro_batching.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch


def long_tailed_samples(count: int, seed: int):
    """`count` samples of policy "plan" (module docstring): prompt 48-160 tokens; completion 16-48 tokens, or 256-384
    for one row in eight; advantages drawn in [-1, 1]."""
    from pettingllms.backends.base import Generation
    from pettingllms.rollout.samples import Sample

    rng = torch.Generator().manual_seed(seed)

    def draw(low: int, high: int) -> int:
        return int(torch.randint(low, high + 1, (1,), generator=rng))

    samples = []
    for index in torch.randperm(count, generator=rng).tolist():
        prompt_len = draw(48, 160)
        completion_len = draw(256, 384) if index % 8 == 0 else draw(16, 48)
        ids = torch.randint(5, 250, (prompt_len + completion_len,), generator=rng).tolist()
        generation = Generation("", tuple(ids[:prompt_len]), tuple(ids[prompt_len:]))
        sample = Sample(f"g{index}", index, 0, "plan", "plan", "", "", 0.0, 0.0, 0.0, generation)
        sample.advantage = float(torch.rand((), generator=rng)) * 2 - 1
        samples.append(sample)
    return samples


def updater(folder: Path, rows: int, micro_batching: str):
    from pettingllms.backends.hf import load_pretrained
    from pettingllms.trainers.policies.model_source import starting_model
    from pettingllms.trainers.settings.arguments import parse
    from pettingllms.trainers.update.updater import PolicyUpdater

    args = parse(
        [
            "--output_dir",
            str(folder),
            "--per_device_train_batch_size",
            str(rows),
            "--micro_batching",
            micro_batching,
        ]
    )
    model, tokenizer = load_pretrained(
        starting_model(args.model_name_or_path, args, log=lambda message: None)
    )
    return PolicyUpdater("plan", model, tokenizer, args)


def measure(updater, samples, repeats: int) -> tuple[float, dict[str, torch.Tensor]]:
    """The median seconds of `accumulate_gradients(samples)` (after a warm-up) and the gradient it adds."""

    def once() -> None:
        updater.model.zero_grad()
        updater.accumulate_gradients(samples)

    once()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
    grads = {
        name: p.grad.detach().clone() for name, p in updater.model.named_parameters() if p.grad is not None
    }
    return statistics.median(times), grads


def largest_relative_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[name] - b[name]).abs().max() / b[name].abs().max().clamp_min(1e-30)) for name in b)


def main() -> None:
    from pettingllms.trainers.update.micro_batches import by_count, by_tokens, padded_tokens

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--rows", type=int, default=8, help="per_device_train_batch_size")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()

    samples = long_tailed_samples(options.samples, options.seed)
    cuts = {"count": by_count(samples, options.rows), "tokens": by_tokens(samples, options.rows)}
    report: dict = {
        "samples": options.samples,
        "rows": options.rows,
        "completion_tokens": sum(len(s.generation.completion_ids) for s in samples),
        "torch_threads": torch.get_num_threads(),
    }
    grads = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, chunks in cuts.items():
            seconds, grads[name] = measure(
                updater(Path(folder) / name, options.rows, name), samples, options.repeats
            )
            report[name] = {
                "micro_batches": len(chunks),
                "padded_tokens": sum(map(padded_tokens, chunks)),
                "seconds": round(seconds, 3),
            }
            print(
                f"{name:>6}: {len(chunks)} micro-batches, {report[name]['padded_tokens']} padded tokens, {seconds:.2f} s"
            )
    report["speedup"] = round(report["count"]["seconds"] / report["tokens"]["seconds"], 2)
    report["padded_tokens_ratio"] = round(
        report["count"]["padded_tokens"] / report["tokens"]["padded_tokens"], 2
    )
    report["gradient_largest_relative_difference"] = largest_relative_difference(
        grads["tokens"], grads["count"]
    )
    print(
        f"tokens vs count: {report['speedup']}x faster, {report['padded_tokens_ratio']}x fewer padded tokens; "
        f"gradients differ by at most {report['gradient_largest_relative_difference']:.1e} of a tensor's largest entry"
    )
    if options.json:
        options.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
