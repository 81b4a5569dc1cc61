"""The examples run, and say what they show."""

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_the_minimal_examples_samples_and_gradients_are_the_engines_and_the_updaters_and_its_step_trains(
    tmp_path,
):
    """Written out inline, the example's tree sampling gives the rollout engine's samples (same seed, step
    scoring), its advantages are `compute_advantages`', and its loss's gradient is `PolicyUpdater`'s (TRL's GRPO
    loss) on the same samples; then the script's own step moves both policies' weights. The file stays one
    sitting's read."""
    assert len((EXAMPLES / "at_grpo_minimal.py").read_text().splitlines()) < 300
    import numpy as np
    import torch
    from scripts_loader import load_script

    from pettingllms.backends.base import SamplingConfig
    from pettingllms.rollout.engine import RolloutEngine
    from pettingllms.trainers.advantages import compute_advantages
    from pettingllms.trainers.settings.config import ATGRPOConfig
    from pettingllms.trainers.update.updater import PolicyUpdater

    example = load_script("at_grpo_minimal", "examples")
    env_fn, models, policies = example.team(seed=0, sft_steps=40)
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=16, stop=("</answer>",))
    engine = RolloutEngine(
        env_fn, policies, {a: a for a in policies}, dict.fromkeys(policies, sampling), num_generations=4,
        grouping="agent_turn", team_credit="step", seed=0,
    )  # fmt: skip
    rollout = engine.collect(range(2))
    sample_seed = int(np.random.default_rng(0).integers(2**32))
    candidates = example.rollout_step(env_fn, policies, sampling, 4, range(2), sample_seed)
    assert [
        (c.instance, c.turn, c.agent, c.generation.completion_ids, c.reward, c.committed) for c in candidates
    ] == [
        (s.instance, s.turn, s.agent, s.generation.completion_ids, s.reward, s.committed)
        for s in rollout.samples
    ]

    compute_advantages(rollout.samples, scale_rewards="group")
    example.group_advantages(candidates)
    assert [c.advantage for c in candidates] == pytest.approx(
        [s.advantage for s in rollout.samples], abs=1e-9
    )

    args = ATGRPOConfig(
        output_dir=str(tmp_path), num_generations=4, per_device_train_batch_size=8, loss_type="grpo", beta=0.0,
        use_cpu=True, report_to=[], max_steps=1,
    )  # fmt: skip
    with_signal = 0
    for agent, model in models.items():
        own = [s for s in rollout.samples if s.agent == agent]
        with_signal += any(s.advantage != 0 for s in own)
        updater = PolicyUpdater(agent, model, policies[agent].tokenizer, args)
        updater.model.zero_grad()
        updater.accumulate_gradients(own)
        want = {name: p.grad.clone() for name, p in model.named_parameters()}
        model.zero_grad()
        example.grpo_loss(model, [c for c in candidates if c.agent == agent]).backward()
        for name, p in model.named_parameters():
            scale = want[name].abs().max().clamp_min(1e-12)
            assert torch.allclose(p.grad, want[name], atol=1e-5 * float(scale), rtol=0), name
    assert with_signal >= 1  # at least one policy's gradient is not zero

    lines = example.train_step(env_fn, models, policies, k=4, instances=2, seed=0)  # the script's step
    assert lines[0].startswith("rollout: ") and "groups of K=4" in lines[0]
    for agent in ("tool", "plan"):
        line = next(line for line in lines if line.startswith(f"policy {agent}:"))
        assert " 0 parameter tensors changed" not in line, line  # the update moved the weights
