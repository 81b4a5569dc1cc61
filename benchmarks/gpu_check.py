"""GPU check: three phases on Qwen3-1.7B's geometry (random weights), each against the memory plan, each written to
the report (`--out`) as soon as it ends, so a timeout keeps what finished.

1. generation: the HF backend (`HFPolicy`, the bf16 generation copy) against transformers' own `generate` with a
   static cache, on the same `--rows` rows of `--context` to 2 x `--context` tokens of prompt, `--new` new tokens
   each (every row runs to the budget: eos is not a stop here); tokens/s of each, their ratio, and the peak
   `torch.cuda.max_memory_allocated()` of each against the plan's generation peak for exactly those lengths
   (the copy's weights, the KV cache of the rows at their longest, one step's logits).
2. update: one `PolicyUpdater` step with the paper's settings (float32 master weights, bf16 autocast, activation
   checkpointing, lr 1e-6) on `--rows` rows of `--context` prompt + `--context` completion tokens at the
   micro-batch the plan chooses; update tokens/s, the peak against the plan's update peak (resident weights and
   AdamW states, gradients, activations, the fused head's buffers), and the share of the weights with a gradient
   that the step changed (pure bf16 weights would keep ~98% of them).
3. step: one AT-GRPO step of `configs/paper/qwen3-1.7b/plan_path.yaml` per role (two policies on the GPU), with
   `--instances` instances and `--completion`-token completions, split into rollout, update and sync seconds.

Peak statistics are reset at the start of each phase. `--cpu` runs everything on the CPU at whatever size the
flags give (a smoke test: nothing is measured against the plan's GPU figures).

    python benchmarks/gpu_check.py [--layers 28] [--rows 64] [--context 1024] [--new 128] [--out F]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

import pettingllms
from pettingllms.trainers.policies.memory_plan import FLOAT32, GIB, Hardware, plan_run
from pettingllms.trainers.policies.model_shapes import ModelShape
from pettingllms.trainers.settings.arguments import parse

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "paper" / "qwen3-1.7b" / "plan_path.yaml"


def build(folder: Path, options) -> int:
    """Save a random-weight Qwen3 with Qwen3-1.7B's shapes (`--layers` of its decoder layers) and Qwen3's
    tokenizer into `folder`; return its parameter count."""
    from transformers import Qwen3Config

    from pettingllms.models import qwen3_test
    from pettingllms.models.qwen3_tokenizer import qwen3_tokenizer
    from pettingllms.models.tiny import build_model

    ids = qwen3_test.qwen3_test_config()  # Qwen3's bos / eos / pad ids
    config = Qwen3Config(
        **{**qwen3_test.QWEN3_1_7B, "num_hidden_layers": options.layers},
        hidden_size=options.hidden,
        intermediate_size=options.intermediate,
        bos_token_id=ids.bos_token_id,
        eos_token_id=ids.eos_token_id,
        pad_token_id=ids.pad_token_id,
    )
    model = build_model(config, seed=0).to(torch.bfloat16)
    model.save_pretrained(folder)
    qwen3_tokenizer().save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


class Report:
    """The report, rewritten whole after each phase."""

    def __init__(self, path: Path, **fields):
        self.path, self.fields = path, dict(fields)
        self.write()

    def add(self, phase: str, figures: dict) -> None:
        self.fields[phase] = figures
        print(phase, json.dumps(figures, indent=2), flush=True)
        self.write()

    def write(self) -> None:
        self.path.write_text(json.dumps(self.fields, indent=2))


class Meter:
    """Wall time and (on a GPU) the peak allocated bytes of a block, reset at its start."""

    def __init__(self, cuda: bool):
        self.cuda = cuda

    def __enter__(self):
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            torch.cuda.synchronize()
        self.seconds = time.perf_counter() - self.start
        self.peak_gib = torch.cuda.max_memory_allocated() / GIB if self.cuda else None


def prompts(options, vocab: int) -> list[list[int]]:
    """`--rows` prompts of `--context` to 2 x `--context` random tokens (seeded), lengths spread evenly."""
    generator = torch.Generator().manual_seed(0)
    lengths = torch.linspace(options.context, 2 * options.context, options.rows).long().tolist()
    return [torch.randint(10, vocab - 300, (n,), generator=generator).tolist() for n in lengths]


def generation_phase(options, model_dir: Path) -> dict:
    """Phase 1 (module docstring)."""
    from pettingllms.backends.base import SamplingConfig
    from pettingllms.backends.hf import HFPolicy, load_pretrained

    device = "cpu" if options.cpu else "cuda:0"
    model, tokenizer = load_pretrained(model_dir, torch.float32 if options.cpu else torch.bfloat16)
    model.generation_config.eos_token_id = None  # every row runs to the budget, in both
    shape = ModelShape.of(model.config)
    rows = prompts(options, shape.vocab)
    cuda = device != "cpu"
    ours = HFPolicy(model, tokenizer, seed=0, device=device)
    ours.eos_token_ids = set()
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=options.new)
    ours.generate_from_ids(rows[:2], 1, SamplingConfig(temperature=0.0, max_new_tokens=4))  # warm-up
    with Meter(cuda) as mine:
        made = sum(len(g.completion_ids) for (g,) in ours.generate_from_ids(rows, 1, sampling))
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(rows):
        ids[row, width - len(prompt) :] = torch.tensor(prompt)
        mask[row, width - len(prompt) :] = 1
    ids, mask = ids.to(device), mask.to(device)
    static = dict(max_new_tokens=options.new, min_new_tokens=options.new, do_sample=False)
    static.update(cache_implementation="static", pad_token_id=tokenizer.pad_token_id)
    model.generate(input_ids=ids[:2, -16:], attention_mask=mask[:2, -16:], **{**static, "max_new_tokens": 4})
    with Meter(cuda) as theirs, torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=mask, **static)
    their_tokens = (out.size(1) - width) * len(rows)
    size = 2 if cuda else FLOAT32
    planned = (
        shape.parameters * size
        + len(rows) * (width + options.new) * shape.kv_bytes_per_token(size)
        + len(rows) * shape.vocab * (size + FLOAT32)
    )
    return {
        "rows": len(rows),
        "prompt_tokens": [min(map(len, rows)), width],
        "new_tokens": options.new,
        "hf_backend_tokens_per_s": made / mine.seconds,
        "transformers_static_cache_tokens_per_s": their_tokens / theirs.seconds,
        "ratio": (made / mine.seconds) / (their_tokens / theirs.seconds),
        "hf_backend_peak_gib": mine.peak_gib,
        "transformers_peak_gib": theirs.peak_gib,
        "planned_peak_gib": planned / GIB,
    }


def check_args(options, model_dir: Path, *flags: str):
    """The paper config on the check's model, sizes and device."""
    return parse(
        [
            "--config",
            str(CONFIG),
            "--model_name_or_path",
            str(model_dir),
            "--output_dir",
            str(options.workdir / "run"),
            "--overwrite_output_dir",
            "true",
            "--report_to",
            "none",
            "--use_cpu",
            str(options.cpu).lower(),
            "--bf16",
            str(not options.cpu).lower(),
            "--learning_rate",
            "1e-6",
            *flags,
        ]
    )


def update_phase(options, model_dir: Path) -> dict:
    """Phase 2 (module docstring)."""
    from pettingllms.backends.base import Generation
    from pettingllms.backends.hf import load_pretrained
    from pettingllms.rollout.samples import Sample
    from pettingllms.trainers.update.updater import PolicyUpdater

    flags = ("--plan_prompt_tokens", str(options.context), "--max_completion_length", str(options.context))
    flags += ("--instances_per_step", str(max(1, options.rows // 4)), "--policy_layout", "shared")
    args = check_args(options, model_dir, *flags)
    agents = list(pettingllms.make(args.env_id, workflow=args.workflow).possible_agents)
    hardware = Hardware(1, 80 * GIB) if options.cpu else Hardware.visible()
    plan = plan_run(args, agents, hardware)
    args.per_device_train_batch_size = plan.micro_batch or 1
    model, tokenizer = load_pretrained(model_dir)  # float32 master weights
    device = "cpu" if options.cpu else "cuda:0"
    updater = PolicyUpdater("shared", model, tokenizer, args, device=device)
    generator = torch.Generator().manual_seed(1)
    samples = []
    for index in range(options.rows):
        prompt = torch.randint(10, 1000, (options.context,), generator=generator).tolist()
        completion = torch.randint(10, 1000, (options.context,), generator=generator).tolist()
        generation = Generation("", tuple(prompt), tuple(completion))
        sample = Sample(f"g{index // 4}", index // 4, 0, "plan", "shared", "", "", 0.0, 0.0, 0.0, generation)
        sample.advantage = float(index % 4) - 1.5
        samples.append(sample)
    before = [p.detach().to("cpu", copy=True) for p in updater.model.parameters()]
    with Meter(not options.cpu) as meter:
        updater.update(samples)
    changed = stepped = 0  # among the weights the step had a gradient for (AdamW's exp_avg is not 0)
    for parameter, old in zip(updater.model.parameters(), before, strict=True):
        active = (updater.optimizer.state[parameter]["exp_avg"] != 0).cpu()
        changed += int((parameter.detach().cpu() != old)[active].sum())
        stepped += int(active.sum())
    device_plan = plan.devices[0]
    return {
        "micro_batch": args.per_device_train_batch_size,
        "rows": options.rows,
        "tokens_per_row": 2 * options.context,
        "update_tokens_per_s": options.rows * options.context / meter.seconds,
        "peak_gib": meter.peak_gib,
        "planned_update_peak_gib": device_plan.update_peak / GIB,
        "weights_dtype": str(next(updater.model.parameters()).dtype),
        "weights_with_gradient_share": stepped / sum(b.numel() for b in before),
        "weights_changed_share_at_lr_1e-6": changed / max(stepped, 1),
    }


def step_phase(options, model_dir: Path) -> dict:
    """Phase 3 (module docstring)."""
    from pettingllms.trainers.at_grpo import ATGRPOTrainer

    flags = ("--max_steps", "1", "--instances_per_step", str(options.instances), "--eval_every", "0")
    flags += (
        "--max_completion_length",
        str(options.completion),
        "--eval_episodes",
        "1",
        "--save_strategy",
        "no",
    )
    args = check_args(options, model_dir, *flags, "--plan_prompt_tokens", "1024")
    trainer = ATGRPOTrainer(args, log=print)
    if not options.cpu:
        torch.cuda.reset_peak_memory_stats()
    metrics = trainer.train_step()
    trainer.close()
    return {
        "instances": options.instances,
        "completion_tokens_budget": options.completion,
        "completions": metrics["train/completions_total"],
        "rollout_s": metrics["timing/rollout_s"],
        "update_s": metrics["timing/update_s"],
        "sync_s": metrics["timing/sync_s"],
        "peak_gib": None if options.cpu else torch.cuda.max_memory_allocated() / GIB,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=28)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--intermediate", type=int, default=6144)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--completion", type=int, default=256)
    parser.add_argument("--phases", default="generation,update,step")
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/pettingllms_gpu_check"))
    options = parser.parse_args()
    start = time.perf_counter()
    model_dir = options.workdir / "model"
    parameters = build(model_dir, options)
    device = "cpu" if options.cpu else torch.cuda.get_device_name()
    report = Report(options.out, device=device, parameters=parameters, layers=options.layers)
    phases = {"generation": generation_phase, "update": update_phase, "step": step_phase}
    for name in options.phases.split(","):
        phase_start = time.perf_counter()
        figures = phases[name](options, model_dir)
        report.add(name, {**figures, "wall_s": time.perf_counter() - phase_start})
    report.fields["wall_s"] = time.perf_counter() - start
    report.write()


if __name__ == "__main__":
    main()
