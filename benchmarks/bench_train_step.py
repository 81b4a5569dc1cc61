"""One AT-GRPO training step against its floors and its peer, on the built-in tiny model and the default run's
shapes (`pettingllms-train` with no arguments: plan-path-v0, 16 instances x K=4, tool + plan, one policy per role,
up to 24 new tokens, micro-batch 32, lr 1e-4).

1. Update floor: a plain PyTorch loop (the same model, the same samples cut into the same micro-batches, forward,
   per-token log-probabilities of the completion, the GRPO policy-gradient loss, backward, gradient clipping, one
   AdamW step; no TRL) -> completion tokens/s; then `PolicyUpdater.update` on the same samples -> tokens/s, ratio.
   The floor runs every sample's whole prompt; the updater runs each micro-batch's prompt tree once
   (`backends.shared_prefix`): both token counts are reported.
2. Generation floor: a plain batched sampling loop with a KV cache (temperature 1, no stop strings, rows stop at
   end-of-sequence) on the tool prompts of the same rollout, K rows each -> tokens/s; then the HF backend
   (`HFPolicy.generate_from_ids`) on the same rows and budget, without and with the training stop string. The
   floor prefills every row; the backend prefills the prompt tree: both prefill token counts are reported.
3. Peer: TRL's own `GRPOTrainer` on a single-turn dataset of the same tool prompts with a reward function, the same
   model, K=4, up to 24 new tokens, and about as many completions per step as one AT-GRPO step samples ->
   completions per second of wall time (generation + update); then AT-GRPO steps of the default run -> the same.
   What differs: an AT-GRPO step is multi-turn (each turn's prompt waits for the previous turn's env steps), steps
   K candidate envs per agent and turn, samples greedy turn completions that credit the tool agent (counted
   separately: `probe completions`), and updates two policies; TRL's step is one prompt -> K completions.
4. The phases of one default-run step: rollout (generation + env), env, advantages, update, weight sync (none: the
   HF backend samples from the trained model itself), checkpoint, evaluation.

Each timed section runs once as a warm-up, then the median of `--repeats` is reported.

    .venv/bin/python benchmarks/bench_train_step.py [--json benchmarks/results/train_step.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch


def median_time(function, repeats: int) -> float:
    function()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def default_trainer(folder: Path):
    from pettingllms.trainers.at_grpo import ATGRPOTrainer
    from pettingllms.trainers.policies.model_source import prepare_starting_models
    from pettingllms.trainers.settings.arguments import parse

    # the shapes measured in benchmarks/README.md: the default run of 2026-12-01 (5x5 grids, the default warm
    # start, 16 instances, 24-token completions), pinned here since the default config moved to the miniature's
    pinned = ["--env_kwargs", "{}", "--tiny_warm_start", "{}", "--instances_per_step", "16",
              "--max_completion_length", "24"]  # fmt: skip
    args = parse(["--output_dir", str(folder), "--eval_episodes", "100", *pinned])
    prepare_starting_models(args)
    return ATGRPOTrainer(args, log=lambda message: None)


class FloorUpdate:
    """The plain loop of point 1: `accumulate()` adds the GRPO policy gradient of all samples (the same
    micro-batches, each weighted by its share of the samples) to `.grad`; `update()` is one full optimizer step
    (AdamW as transformers configures it for `PolicyUpdater`: no weight decay; gradient clipping at 1.0)."""

    def __init__(self, model, samples, tokenizer, micro_batch: int, lr: float, temperature: float):
        from pettingllms.trainers.update.updater import collate

        self.model, self.samples, self.temperature = model, list(samples), temperature
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
        chunks = [
            self.samples[start : start + micro_batch] for start in range(0, len(self.samples), micro_batch)
        ]
        self.batches = [(len(chunk), collate(chunk, tokenizer, 1.0)) for chunk in chunks]

    def accumulate(self) -> None:
        self.model.train()
        for size, batch in self.batches:
            ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
            mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
            width = batch["completion_ids"].size(1)
            logits = (
                self.model(input_ids=ids, attention_mask=mask).logits[:, -width - 1 : -1] / self.temperature
            )
            logps = torch.log_softmax(logits.float(), -1).gather(-1, batch["completion_ids"][..., None])[
                ..., 0
            ]
            completion = batch["completion_mask"].float()
            per_sequence = (logps * completion).sum(1) / completion.sum(1).clamp(min=1)
            loss = -(batch["advantages"] * per_sequence).mean() * size / len(self.samples)
            loss.backward()

    def update(self) -> None:
        self.accumulate()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.optimizer.zero_grad()


@torch.inference_mode()
def floor_generate(model, rows, max_new_tokens: int, pad: int, eos: frozenset[int], generator) -> int:
    """The plain sampling loop of point 2: rows stop at an end-of-sequence token (as the backends' do) and the loop
    ends when every row has; returns the number of tokens generated (each row's up to and with its eos)."""
    from pettingllms.backends.shared_prefix import cache_keyword, new_cache

    keyword = cache_keyword(model)
    model.eval()
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    attention = torch.zeros_like(ids)
    for index, row in enumerate(rows):
        ids[index, width - len(row) :] = torch.tensor(row)
        attention[index, width - len(row) :] = 1
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    cache = new_cache(model)
    logits = model(input_ids=ids, attention_mask=attention, position_ids=positions, **{keyword: cache}).logits
    logits, position = logits[:, -1], positions[:, -1:] + 1
    eos_ids = torch.tensor(sorted(eos))
    done = torch.zeros(len(rows), dtype=torch.bool)
    generated = 0
    for _ in range(max_new_tokens):
        tokens = torch.multinomial(torch.softmax(logits.float(), -1), 1, generator=generator)
        generated += int((~done).sum())
        done |= torch.isin(tokens[:, 0], eos_ids)
        if bool(done.all()):
            break
        tokens = tokens.masked_fill(done[:, None], pad)
        attention = torch.cat([attention, torch.ones_like(tokens)], 1)
        out = model(input_ids=tokens, attention_mask=attention, position_ids=position, **{keyword: cache})
        logits, position = out.logits[:, -1], position + 1
    return generated


def peer_trl(model, tokenizer, prompts, completions: int, folder: Path, repeats: int) -> dict:
    """Point 3's peer: seconds per TRL GRPO step of `completions` completions (K=4), after one warm-up step."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    def length_reward(completions, **kwargs):
        """A reward with spread, so that the update does real work (completions are chat messages here)."""
        return [len(completion[0]["content"]) / 100 for completion in completions]

    per_step = completions - completions % 4
    rows = [{"prompt": [{"role": "user", "content": text}]} for text in prompts]
    while len(rows) < per_step // 4 * (repeats + 1):
        rows += rows
    args = GRPOConfig(
        output_dir=str(folder),
        per_device_train_batch_size=per_step,
        num_generations=4,
        max_completion_length=24,
        max_steps=repeats + 1,
        learning_rate=1e-4,
        temperature=1.0,
        use_cpu=True,
        bf16=False,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        activation_checkpointing=False,
        loss_type="grpo",
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=length_reward,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    trainer.train()
    step_times = [entry["step_time"] for entry in trainer.state.log_history if "step_time" in entry][1:]
    seconds = statistics.median(step_times)
    return {"completions_per_step": per_step, "step_s": seconds, "completions_per_s": per_step / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    from pettingllms.backends.base import SamplingConfig
    from pettingllms.backends.shared_prefix import SharedLayout
    from pettingllms.core.seeding import derive_seed
    from pettingllms.runs.layout import RunLayout
    from pettingllms.trainers.advantages import compute_advantages
    from pettingllms.trainers.at_grpo import training_seeds
    from pettingllms.trainers.outputs import checkpoint

    figures: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-train-step-") as scratch:
        trainer = default_trainer(Path(scratch) / "run")
        args, handle = trainer.args, trainer.policies.handles["tool"]
        tool_policy = trainer.policies.backends["tool"]
        rollout = trainer.engine.collect(training_seeds(args, 0), {"split": "train"})
        compute_advantages(rollout.samples, scale_rewards=args.scale_rewards)
        samples = [sample for sample in rollout.samples if sample.policy == "tool"]
        tokens = sum(len(sample.generation.completion_ids) for sample in samples)
        tokenizer = tool_policy.tokenizer

        # 1. update
        floor = FloorUpdate(copy.deepcopy(handle.updater.model), samples, tokenizer, 32, 1e-4, 1.0)
        floor_s = median_time(floor.update, options.repeats)
        ours_s = median_time(lambda: handle.update(samples), options.repeats)
        figures["update"] = {
            "samples": len(samples),
            "completion_tokens": tokens,
            "floor_tokens_per_s": tokens / floor_s,
            "ours_tokens_per_s": tokens / ours_s,
            "ratio": floor_s / ours_s,
            **update_forward_tokens(samples, args.per_device_train_batch_size),
        }

        # 2. generation
        prompts = list(dict.fromkeys(sample.generation.prompt_ids for sample in samples))
        rows = [list(prompt) for prompt in prompts for _ in range(4)]
        generator = torch.Generator().manual_seed(derive_seed(0, "bench_floor"))
        pad = tool_policy.pad_token_id
        model = tool_policy.model
        eos = tool_policy.eos_token_ids
        counts = []
        floor_gen_s = median_time(
            lambda: counts.append(floor_generate(model, rows, 24, pad, eos, generator)), options.repeats
        )
        generation = {
            "rows": len(rows),
            "floor_tokens_per_s": statistics.median(counts) / floor_gen_s,
            "floor_prefill_tokens": sum(len(row) for row in rows),
            "ours_prefill_tokens": SharedLayout.cheapest(rows).computed_tokens,
        }
        for label, stop in (("hf", ()), ("hf_with_stop", ("</answer>",))):
            sampling = SamplingConfig(temperature=1.0, max_new_tokens=24, stop=stop)
            out = tool_policy.generate_from_ids([list(p) for p in prompts], 4, sampling)
            made = sum(len(g.completion_ids) for group in out for g in group)
            seconds = median_time(
                lambda sampling=sampling: tool_policy.generate_from_ids(
                    [list(p) for p in prompts], 4, sampling
                ),
                options.repeats,
            )
            generation[f"{label}_tokens_per_s"] = made / seconds
            generation[f"{label}_ratio"] = (made / seconds) / generation["floor_tokens_per_s"]
        figures["generation"] = generation

        # 4. phases of default-run steps (also the AT-GRPO side of 3)
        steps = [trainer.train_step() for _ in range(options.repeats + 1)][1:]
        step_s = statistics.median(
            m["timing/rollout_s"] + m["timing/update_s"] + m["timing/sync_s"] for m in steps
        )
        start = time.perf_counter()
        stds = compute_advantages(rollout.samples, scale_rewards=args.scale_rewards)
        advantages_s = time.perf_counter() - start
        start = time.perf_counter()
        checkpoint.save(RunLayout(Path(scratch) / "run"), trainer.policies.handles, trainer._loop_state())
        checkpoint_s = time.perf_counter() - start
        evaluation = trainer.evaluate()
        figures["phases"] = {
            "rollout_s": statistics.median(m["timing/rollout_s"] for m in steps),
            "env_s": statistics.median(m["timing/env_s"] for m in steps),
            "advantages_s": advantages_s,
            "update_s": statistics.median(m["timing/update_s"] for m in steps),
            "weight_sync_s": statistics.median(m["timing/sync_s"] for m in steps),
            "checkpoint_s": checkpoint_s,
            "evaluation_s_per_100_episodes": evaluation["timing/eval_s"],
            "groups": len(stds),
        }

        # 3. peer
        completions = round(statistics.median(len_of(m) for m in steps))
        peer = peer_trl(
            copy.deepcopy(handle.updater.model),
            tokenizer,
            [str(sample.prompt) for sample in samples],
            completions,
            Path(scratch) / "trl",
            options.repeats,
        )
        ours = completions / step_s
        figures["peer"] = {
            "trl": peer,
            "at_grpo": {
                "completions_per_step": completions,
                "probe_completions_per_step": statistics.median(m["train/probe_completions"] for m in steps),
                "step_s": step_s,
                "completions_per_s": ours,
            },
            "ratio": ours / peer["completions_per_s"],
        }
        trainer.close()
    print(json.dumps(figures, indent=2))
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps(figures, indent=2) + "\n")


def update_forward_tokens(samples, micro_batch: int) -> dict[str, int]:
    """Tokens each update runs forward (padding aside): the floor runs every sample's whole prompt and completion;
    `PolicyUpdater` runs each micro-batch's prompt tree (`SharedLayout`) once, then each sample's last prompt token
    and completion."""
    from pettingllms.backends.shared_prefix import SharedLayout

    ours = 0
    for start in range(0, len(samples), micro_batch):
        chunk = samples[start : start + micro_batch]
        ours += SharedLayout.cheapest([s.generation.prompt_ids[:-1] for s in chunk]).computed_tokens
        ours += sum(1 + len(s.generation.completion_ids) for s in chunk)
    floor = sum(len(s.generation.prompt_ids) + len(s.generation.completion_ids) for s in samples)
    return {"floor_forward_tokens": floor, "ours_forward_tokens": ours}


def len_of(metrics: dict) -> int:
    """Completions sampled in one step (every candidate of every agent and turn)."""
    return int(metrics["policy/tool/samples"] + metrics["policy/plan/samples"])


if __name__ == "__main__":
    main()
