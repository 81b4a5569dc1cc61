"""How each loss type weighs the tokens that every candidate of a group shares, measured on real rollouts.

    .venv/bin/python scripts/length_bias_probe.py                       # Sokoban's team warm start, 10 steps
    .venv/bin/python scripts/length_bias_probe.py --env math-v0 --steps 4 --out /tmp/probe.json

When the K candidates of a group all begin with the same tokens (a tool agent's opening ```python fence), the
loss's gradient on those tokens' log-probability is a weighted sum of the candidates' advantages A_i (which sum to
0 in a group: `scale_rewards="none"` or "group"). `loss_type="grpo"` averages each sequence over its own length
L_i, so the shared tokens get Σ_i A_i / L_i (over B sequences): zero only when advantage and length are unrelated.
If the better candidates are longer, it is negative, and every step lowers the probability of the shared prefix
however good the programs are. `dr_grpo` (Σ_i A_i / (B · max_completion_length)), `bnpo` and `dapo`
(Σ_i A_i / Σ tokens) give exactly 0.

This plays `--steps` training rollouts of the miniature's per-role AT-GRPO recipe (`reproduce_miniature.py`'s
flags, its warm start of `--env`), computes the advantages as the trainer does, and reports, over the groups of
`--agent` in which two candidates or more begin with `--prefix` with different advantages, the per-group
length-driven weight of the grpo loss on that prefix (`shared_prefix_weights`; times the mean length, to read it in
units of a typical token's weight), the share of groups where it is negative, and the mean length of those
candidates above and below their mean advantage.
Nothing is trained. The figures go to `--out` (JSON) and stdout.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _miniature():
    """`scripts/reproduce_miniature.py` as a module (its flags, domains and warm-start settings)."""
    spec = importlib.util.spec_from_file_location(
        "reproduce_miniature", ROOT / "scripts" / "reproduce_miniature.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def shared_prefix_weights(samples, agent: str, prefix: str) -> dict:
    """The figures of the module docstring over `samples` (advantages set), for the groups of `agent` in which at
    least two candidates' completions start with `prefix` and those candidates' advantages differ.

    A group's coefficient is the length-driven part of grpo's weight on the shared prefix: with F the candidates
    that start with it, mean(L) · Σ_{i∈F} A_i (1/L_i - mean_{j∈F} 1/L_j) / K. It is the whole weight when every
    candidate starts with the prefix (the advantages then sum to 0), and 0 for every loss that does not divide by
    a sequence's own length."""
    groups = defaultdict(list)
    for sample in samples:
        if sample.agent == agent:
            groups[sample.group_id].append(sample)
    coefficients, above, below = [], [], []
    for members in groups.values():
        sharing = [m for m in members if m.completion.startswith(prefix)]
        if len(sharing) < 2 or len({m.advantage for m in sharing}) < 2:
            continue
        lengths = [len(m.generation.completion_ids) for m in sharing]
        inverse_mean = statistics.fmean(1 / n for n in lengths)
        weight = sum(m.advantage * (1 / n - inverse_mean) for m, n in zip(sharing, lengths, strict=True))
        coefficients.append(statistics.fmean(lengths) * weight / len(members))
        mean_advantage = statistics.fmean(m.advantage for m in sharing)
        above += [n for m, n in zip(sharing, lengths, strict=True) if m.advantage > mean_advantage]
        below += [n for m, n in zip(sharing, lengths, strict=True) if m.advantage < mean_advantage]
    return {
        "groups": len(coefficients),
        "mean_coefficient": statistics.fmean(coefficients) if coefficients else None,
        "negative_share": sum(c < 0 for c in coefficients) / len(coefficients) if coefficients else None,
        "coefficients": coefficients,
        "mean_length_above_group_mean": statistics.fmean(above) if above else None,
        "mean_length_below_group_mean": statistics.fmean(below) if below else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="sokoban-v0")
    parser.add_argument(
        "--steps", type=int, default=10, help="training rollouts to play (steps 0..N-1's instances)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agent", default="tool")
    parser.add_argument("--prefix", default="```python")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    from pettingllms.trainers.advantages import compute_advantages
    from pettingllms.trainers.at_grpo import ATGRPOTrainer, training_seeds
    from pettingllms.trainers.settings.arguments import parse
    from pettingllms.warmstart.build import ensure_tiny_model

    mini = _miniature()
    domain = mini.DOMAINS[args.env]
    warm_start = ensure_tiny_model(args.env, tag=domain.tag, env_kwargs=dict(domain.env_kwargs),
                                   **mini.warm_start_settings(domain, "mas"))  # fmt: skip
    _, flags = mini.method_flags("mas+at-grpo-per-role")
    samples = []
    with tempfile.TemporaryDirectory() as folder:
        config = parse([
            "--output_dir", folder, "--env_id", args.env, "--env_kwargs", json.dumps(dict(domain.env_kwargs)),
            "--max_completion_length", str(domain.max_completion_tokens), "--model_name_or_path", str(warm_start),
            "--seed", str(args.seed), "--max_steps", str(args.steps), *mini.COMMON, *flags,
        ])  # fmt: skip
        trainer = ATGRPOTrainer(config, log=lambda message: None)
        try:
            for step in range(args.steps):
                with trainer.policies.full_weights():
                    rollout = trainer.engine.collect(training_seeds(config, step), {"split": "train"})
                compute_advantages(rollout.samples, scale_rewards=config.scale_rewards)
                samples += rollout.samples
        finally:
            trainer.close()
    figures = {"env": args.env, "steps": args.steps, "seed": args.seed, "agent": args.agent,
               "prefix": args.prefix, "warm_start": str(warm_start.name),
               **shared_prefix_weights(samples, args.agent, args.prefix)}  # fmt: skip
    print(json.dumps({k: v for k, v in figures.items() if k != "coefficients"}, indent=2))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
