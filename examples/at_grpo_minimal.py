"""One AT-GRPO step, top to bottom, with its two ideas written out inline (cleanrl-style: read it in one sitting).

    python examples/at_grpo_minimal.py            # a few minutes on a CPU (the warm start); no download

1. a team env: plan-path-v0, a tool agent (proposes) and a plan agent (moves); one policy per role, a tiny Qwen3
   with a tokenizer trained here, warm-started for a few seconds on solver demonstrations (noisy ones, so that its
   K candidates differ in reward), sampled in-process (`HFPolicy`);
2. **tree sampling** (`rollout_step`): for every instance, turn and agent, K candidates sampled from the one shared
   state, each stepped on its own clone of the env and scored by its step's reward `alpha * team + local`; the best
   clone becomes the episode's state. The candidates of one (instance, turn, agent) form a group;
3. **the group-relative policy gradient** (`group_advantages`, `grpo_loss`): each candidate's advantage is its
   reward minus its group's mean, over the group's standard deviation; the loss is TRL's GRPO surrogate (the
   clipped importance ratio times the advantage, averaged over each completion's tokens, then over completions);
4. every policy takes one optimizer step on its own agent's samples only.

`pettingllms-train` does the same with the package's pieces (`RolloutEngine`, `compute_advantages`,
`PolicyUpdater`), plus turn credit (later agents' greedy answers score a candidate's turn), checkpoints,
evaluations and logs; `tests/test_examples.py` pins this file's samples and gradients equal to those pieces'
(with `team_credit="step"`, the scoring written here).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
from collections import defaultdict

import numpy as np
import torch

import pettingllms
from pettingllms.backends.base import Generation, SamplingConfig
from pettingllms.backends.hf import HFPolicy
from pettingllms.core.seeding import derive_seed
from pettingllms.models.tiny import build_model, config_for_tokenizer
from pettingllms.models.tokenizer import train_tokenizer
from pettingllms.warmstart.demos import collect_demonstrations
from pettingllms.warmstart.sft import supervised_fine_tune


@dataclasses.dataclass
class Candidate:
    """One sampled completion of `agent` at `turn` of `instance`, its reward, and whether it was executed."""

    instance: int
    turn: int
    agent: str
    generation: Generation
    reward: float
    committed: bool
    advantage: float = 0.0


def rollout_step(env_fn, policies, sampling, k: int, seeds, sample_seed: int) -> list[Candidate]:
    """Tree sampling (point 2): play one episode per seed; at every agent step, K candidates from one state, each
    stepped on a clone, the best (first maximum) committed. The i-th prompt of episode e is seeded
    `derive_seed(sample_seed, e, i)`, as the rollout engine seeds it."""
    candidates = []
    for episode, seed in enumerate(seeds):
        env = env_fn()
        env.reset(seed=int(seed), options={})
        prompts_asked = 0
        while env.agents:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)  # PettingZoo: a finished agent steps with None
                continue
            turn, prompt = int(env.unwrapped.turn), str(env.observe(agent))
            prompt_seed = derive_seed(sample_seed, episode, prompts_asked)
            prompts_asked += 1
            (generations,) = policies[agent].generate([prompt], k, sampling, seeds=[prompt_seed])
            clones = [env.clone() for _ in generations]
            for clone, generation in zip(clones, generations, strict=True):
                clone.step(generation.action)
            rewards = [float(clone.rewards[agent]) for clone in clones]  # alpha * team + local
            best = int(np.argmax(rewards))
            for position, (generation, reward) in enumerate(zip(generations, rewards, strict=True)):
                candidates.append(Candidate(episode, turn, agent, generation, reward, position == best))
            env = clones[best]
    return candidates


def group_advantages(candidates: list[Candidate], eps: float = 1e-4) -> None:
    """Point 3: `advantage = (reward - group mean) / (group std + eps)` within each (instance, turn, agent) group
    (the unbiased std, as TRL's; a group whose rewards are all equal carries no signal)."""
    groups = defaultdict(list)
    for candidate in candidates:
        groups[candidate.instance, candidate.turn, candidate.agent].append(candidate)
    for members in groups.values():
        rewards = np.array([m.reward for m in members])
        std = rewards.std(ddof=1) if len(members) > 1 else 0.0
        for member in members:
            member.advantage = float((member.reward - rewards.mean()) / (std + eps)) if std > 0 else 0.0


def completion_logps(model, generation: Generation, temperature: float) -> torch.Tensor:
    """log pi(token | prefix) of each completion token, the logits divided by the sampling temperature."""
    ids = torch.tensor([list(generation.prompt_ids) + list(generation.completion_ids)])
    logits = model(input_ids=ids).logits[0, :-1] / temperature
    completion = len(generation.completion_ids)
    targets = ids[0, 1:][-completion:]
    return torch.log_softmax(logits[-completion:].float(), dim=-1).gather(-1, targets[:, None])[:, 0]


def grpo_loss(model, candidates: list[Candidate], epsilon: float = 0.2, temperature: float = 1.0):
    """Point 3: `-mean over completions of mean over tokens of min(ratio * A, clip(ratio, 1-eps, 1+eps) * A)`, with
    `ratio = pi / pi_old` per token; on-policy pi_old is pi itself (detached), so the ratio is 1 and the gradient
    is `-A * grad log pi`, averaged the same way (TRL's `loss_type="grpo"`, `beta=0`)."""
    per_completion = []
    for candidate in candidates:
        logps = completion_logps(model, candidate.generation, temperature)
        ratio = torch.exp(logps - logps.detach())
        advantage = candidate.advantage
        surrogate = torch.minimum(ratio * advantage, torch.clamp(ratio, 1 - epsilon, 1 + epsilon) * advantage)
        per_completion.append(surrogate.mean())
    return -torch.stack(per_completion).mean()


def warm_started_model(demos, tokenizer, seed: int, steps: int):
    """A fresh tiny model fine-tuned for `steps` steps on the demonstrations (the built-in model does ~300)."""
    model = build_model(config_for_tokenizer(tokenizer), seed=seed)
    supervised_fine_tune(
        model, tokenizer, [demo.messages() for demo in demos], steps=steps, batch_size=16, seed=seed
    )
    return model


def team(seed: int, sft_steps: int):
    """The env factory and one (model, sampler) per role (point 1)."""
    env_fn = functools.partial(pettingllms.make, "plan-path-v0", workflow="mas")
    demos = collect_demonstrations("plan-path-v0", range(64), np.random.default_rng(seed), workflow="mas")
    tokenizer = train_tokenizer(text for demo in demos for text in (demo.prompt, demo.target))
    tokenizer.padding_side = "left"
    models, policies = {}, {}
    for index, agent in enumerate(env_fn().possible_agents):  # ["tool", "plan"]
        models[agent] = warm_started_model(demos, tokenizer, seed + index, sft_steps)
        policies[agent] = HFPolicy(models[agent], tokenizer, seed=seed + index)
    return env_fn, models, policies


def train_step(env_fn, models, policies, k: int, instances: int, seed: int) -> list[str]:
    """One AT-GRPO step (points 2-4) on the team; the lines it prints."""
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=16, stop=("</answer>",))
    sample_seed = int(np.random.default_rng(seed).integers(2**32))  # as the engine draws a step's seed
    candidates = rollout_step(env_fn, policies, sampling, k, range(instances), sample_seed)
    group_advantages(candidates)
    groups = {(c.instance, c.turn, c.agent) for c in candidates}
    lines = [f"rollout: {len(candidates)} samples in {len(groups)} groups of K={k}"]
    for agent, model in models.items():  # point 4: each policy on its own agent's samples only
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
        own = [c for c in candidates if c.agent == agent]
        before = [p.detach().clone() for p in model.parameters()]
        loss = grpo_loss(model, own)
        loss.backward()
        optimizer.step()
        moved = sum(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
        lines.append(
            f"policy {agent}: {len(own)} samples, loss {loss.item():+.4f}, {moved} parameter tensors changed"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=2, help="instances in the step's rollout")
    parser.add_argument("--k", type=int, default=4, help="candidates per agent per turn (K)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sft_steps", type=int, default=40, help="warm-start steps before the AT-GRPO step")
    options = parser.parse_args()
    env_fn, models, policies = team(options.seed, options.sft_steps)
    print("\n".join(train_step(env_fn, models, policies, options.k, options.instances, options.seed)))


if __name__ == "__main__":
    main()
