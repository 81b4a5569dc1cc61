"""One AT-GRPO step, top to bottom, with the package's own pieces (cleanrl-style: read it in one sitting).

    python examples/at_grpo_minimal.py            # a few seconds on a CPU; no download

1. a team env: plan-path-v0, a tool agent (proposes) and a plan agent (moves);
2. one policy per role: a tiny Qwen3 with a tokenizer trained here, warm-started for a few seconds on solver
   demonstrations (noisy ones, so that its K candidates differ in reward), sampled in-process (`HFPolicy`);
3. the rollout: for every instance, turn and agent, K candidates from one shared state, each stepped on its own
   copy and scored `alpha * team + local`; the best is committed (`RolloutEngine`, grouping "agent_turn");
4. advantages within each (instance, turn, agent) group (`compute_advantages`);
5. every sample routed to the policy that produced it; each policy takes one optimizer step on its own samples
   only (`PolicyUpdater`: TRL's GRPO loss).

`pettingllms-train` does the same with checkpoints, evaluations and logs (`pettingllms/trainers/at_grpo.py`).
"""

from __future__ import annotations

import argparse
import functools
import tempfile
from collections import defaultdict

import numpy as np
import torch

import pettingllms
from pettingllms.backends.base import SamplingConfig
from pettingllms.backends.hf import HFPolicy
from pettingllms.models.tiny import build_model, config_for_tokenizer
from pettingllms.models.tokenizer import train_tokenizer
from pettingllms.rollout.engine import RolloutEngine
from pettingllms.trainers.advantages import compute_advantages
from pettingllms.trainers.config import ATGRPOConfig
from pettingllms.trainers.updater import PolicyUpdater
from pettingllms.warmstart.demos import collect_demonstrations
from pettingllms.warmstart.sft import supervised_fine_tune


def warm_started_model(demos, tokenizer, seed: int, steps: int):
    """A fresh tiny model fine-tuned for `steps` steps on the demonstrations (the built-in model does ~300)."""
    model = build_model(config_for_tokenizer(tokenizer), seed=seed)
    supervised_fine_tune(
        model, tokenizer, [demo.messages() for demo in demos], steps=steps, batch_size=16, seed=seed
    )
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=2, help="instances in the step's rollout")
    parser.add_argument("--k", type=int, default=4, help="candidates per agent per turn (K)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sft_steps", type=int, default=40, help="warm-start steps before the AT-GRPO step")
    options = parser.parse_args()

    # 1. the env: every episode of the step is built by env_fn and reset with its own seed
    env_fn = functools.partial(pettingllms.make, "plan-path-v0", workflow="mas")
    agents = env_fn().possible_agents  # ["tool", "plan"]

    # 2. one policy per role: model, tokenizer, update worker (TRL) and generation backend (same model object)
    demos = collect_demonstrations(
        "plan-path-v0", range(64), np.random.default_rng(options.seed), workflow="mas"
    )
    tokenizer = train_tokenizer(text for demo in demos for text in (demo.prompt, demo.target))
    tokenizer.padding_side = "left"
    output_dir = tempfile.mkdtemp(prefix="at-grpo-minimal-")
    args = ATGRPOConfig(
        output_dir=output_dir,
        num_generations=options.k,
        per_device_train_batch_size=16,
        learning_rate=1e-3,
        max_completion_length=16,
        max_steps=1,
        use_cpu=True,
        report_to=[],
        seed=options.seed,
    )
    updaters, backends = {}, {}
    for index, agent in enumerate(agents):
        model = warm_started_model(demos, tokenizer, options.seed + index, options.sft_steps)
        updaters[agent] = PolicyUpdater(agent, model, tokenizer, args)
        backends[agent] = HFPolicy(updaters[agent].model, tokenizer, seed=options.seed + index)

    # 3. the rollout: K candidates per (instance, turn, agent) from one shared state, the best one committed
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=16, stop=("</answer>",))
    engine = RolloutEngine(
        env_fn,
        backends,
        {agent: agent for agent in agents},  # agent -> policy: one policy per role
        dict.fromkeys(agents, sampling),
        num_generations=options.k,
        grouping="agent_turn",
        seed=options.seed,
    )
    rollout = engine.collect(seeds=range(options.instances))
    groups = defaultdict(list)
    for sample in rollout.samples:
        groups[sample.group_id].append(sample)
    print(f"rollout: {len(rollout.samples)} samples in {len(groups)} groups of K={options.k}")
    for group_id, members in list(groups.items())[:4]:
        rewards = ", ".join(f"{m.reward:+.2f}{'*' if m.committed else ''}" for m in members)
        print(f"  group {group_id:<10} rewards {rewards}   (* committed)")

    # 4. advantages within each group: (r - mean) / (std + eps)
    stds = compute_advantages(rollout.samples, scale_rewards="group")
    print(f"groups with a reward signal: {sum(std > 0 for std in stds.values())} of {len(stds)}")

    # 5. each policy trains on its own agent's samples only
    for agent, updater in updaters.items():
        own = [sample for sample in rollout.samples if sample.policy == agent]
        before = [p.detach().clone() for p in updater.model.parameters()]
        metrics = updater.update(own)
        moved = sum(not torch.equal(b, p) for b, p in zip(before, updater.model.parameters(), strict=True))
        print(
            f"policy {agent}: {len(own)} samples, loss {metrics['loss']:+.4f}, grad norm {metrics['grad_norm']:.4f}, "
            f"{moved} parameter tensors changed"
        )
    print(f"train success (committed episodes): {rollout.success_rate:.2f}")


if __name__ == "__main__":
    main()
