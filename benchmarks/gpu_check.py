"""GPU check of the AT-GRPO trainer: a few steps, per-role layout (two policies), in-process generation.

Builds a small Qwen3-architecture model from a config (no hub) and a tokenizer trained on the environment's
text, runs `--steps` AT-GRPO steps on `plan-path-v0` (tool + plan, one policy per role) on the GPU, and prints
per policy: rollout tokens/s (generated tokens over generation time), update time per step, and peak GPU memory
during its update. Written for a lent GPU machine (see `gpu_check.sh`); runs on CPU too with `--cpu`.

    python benchmarks/gpu_check.py [--steps 3] [--hidden 512] [--layers 8] [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import torch

import pettingllms
from pettingllms.models.tiny import build_model, config_for_tokenizer
from pettingllms.models.tokenizer import train_tokenizer
from pettingllms.trainers.arguments import parse
from pettingllms.trainers.at_grpo import ATGRPOTrainer


def build(folder: Path, hidden: int, layers: int) -> int:
    env = pettingllms.make("plan-path-v0")
    corpus = []
    for seed in range(200):
        env.reset(seed=seed)
        corpus += [str(env.observe(agent)) for agent in env.possible_agents] + [env.unwrapped.solution()]
    tokenizer = train_tokenizer(corpus, vocab_size=1024)
    config = config_for_tokenizer(
        tokenizer,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=hidden // 8,
        intermediate_size=3 * hidden,
    )
    model = build_model(config, seed=0)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--instances", type=int, default=32)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/pettingllms_gpu_check"))
    options = parser.parse_args()
    cuda = torch.cuda.is_available() and not options.cpu
    start = time.perf_counter()
    parameters = build(options.workdir / "model", options.hidden, options.layers)
    args = parse(
        [
            "--model_name_or_path",
            str(options.workdir / "model"),
            "--output_dir",
            str(options.workdir / "run"),
            "--policy_layout",
            "per_role",
            "--max_steps",
            str(options.steps),
            "--instances_per_step",
            str(options.instances),
            "--num_generations",
            "4",
            "--per_device_train_batch_size",
            "64",
            "--max_completion_length",
            "32",
            "--learning_rate",
            "1e-4",
            "--eval_episodes",
            "32",
            "--eval_every",
            "0",
            "--save_steps",
            "1000",
            "--use_cpu",
            str(not cuda).lower(),
        ]
    )
    trainer = ATGRPOTrainer(args, log=print)
    stats: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for name, backend in trainer.policies.backends.items():
        trainer.policies.backends[name] = _timed_backend(backend, stats[name], cuda)
        updater = trainer.policies.updaters[name]
        updater.update = _timed_update(updater.update, stats[name], cuda)
    trainer.engine = trainer._engine(train=True)
    trainer.train()
    report = {
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "parameters_per_policy": parameters,
        "steps": options.steps,
        "wall_s": time.perf_counter() - start,
        "policies": {
            name: {
                "rollout_tokens_per_s": s["tokens"] / max(s["generate_s"], 1e-9),
                "generated_tokens": s["tokens"],
                "update_s_per_step": s["update_s"] / max(s["updates"], 1),
                "peak_update_memory_gib": s["peak_gib"],
            }
            for name, s in stats.items()
        },
    }
    print(json.dumps(report, indent=2))
    options.out.write_text(json.dumps(report, indent=2))


def _timed_backend(backend, stats, cuda):
    class Timed:
        generator = backend.generator

        def generate(self, prompts, n, sampling):
            if cuda:
                torch.cuda.synchronize()
            begin = time.perf_counter()
            result = backend.generate(prompts, n, sampling)
            if cuda:
                torch.cuda.synchronize()
            stats["generate_s"] += time.perf_counter() - begin
            stats["tokens"] += sum(len(g.completion_ids) for row in result for g in row)
            return result

    return Timed()


def _timed_update(update, stats, cuda):
    def timed(samples):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        begin = time.perf_counter()
        metrics = update(samples)
        if cuda:
            torch.cuda.synchronize()
            stats["peak_gib"] = max(stats["peak_gib"], torch.cuda.max_memory_allocated() / 2**30)
        stats["update_s"] += time.perf_counter() - begin
        stats["updates"] += 1
        return metrics

    return timed


if __name__ == "__main__":
    main()
