"""One-step-off-policy training (`off_policy_steps=1`, `trainers/policies/update_phase.py`): the staleness bound, the
sampling log-probabilities that become the loss's old ones (checked against the weights that sampled them), the
refusals, and the collate of those log-probabilities."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import args_for  # noqa: E402

from pettingllms.backends.base import Generation  # noqa: E402
from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.rollout.samples import Sample  # noqa: E402
from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402
from pettingllms.trainers.settings.arguments import parse  # noqa: E402
from pettingllms.trainers.update.updater import collate  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")


@pytest.fixture(scope="module", autouse=True)
def one_thread(one_torch_thread):
    """Every test of this module computes with one torch thread (restored after the module)."""


def completion_logps(model, generation: Generation) -> list[float]:
    """log p(completion token | everything before it) under `model`: an independent computation of the sampler's
    log-probabilities."""
    ids = torch.tensor([list(generation.prompt_ids) + list(generation.completion_ids)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    start = len(generation.prompt_ids)
    logps = torch.log_softmax(logits[start - 1 : -1], dim=-1)
    return logps.gather(-1, torch.tensor(generation.completion_ids)[:, None])[:, 0].tolist()


def test_the_next_rollout_samples_from_the_weights_before_the_update_and_staleness_stays_within_one(
    tiny_model, tmp_path
):
    args = args_for(
        tiny_model, tmp_path, "--off_policy_steps", "1", "--max_steps", "4", "--eval_every", "0",
        "--save_steps", "3", "--max_completion_length", "6",
    )  # fmt: skip
    trainer = ATGRPOTrainer(args, log=lambda _: None)
    handles = trainer.policies.handles
    for (
        name,
        handle,
    ) in handles.items():  # the generator samples from a copy of the weights, synced after updates
        assert handle.backend.model is not trainer.policies.updaters[name].model

    def snapshot():  # every policy's trained weights now
        return {
            name: {k: v.detach().clone() for k, v in handle.updater.model.state_dict().items()}
            for name, handle in handles.items()
        }

    snapshots = [snapshot()]
    collected = []
    collect = trainer.engine.collect

    def recording_collect(seeds, options):
        rollout = collect(seeds, options)
        collected.append(rollout)
        return rollout

    trainer.engine.collect = recording_collect
    staleness = []
    while not trainer.finished:
        metrics = trainer.train_step()
        staleness.append(metrics["train/staleness"])
        # each generator's idle share of its step's rollout (the rollout ahead reports its own)
        assert all(0.0 <= metrics[f"timing/idle/{name}"] <= 1.0 for name in handles)
        snapshots.append(snapshot())
    trainer.close()
    # step 3 is followed by a checkpoint: step 3's update runs alone, and step 4 samples after it
    assert staleness == [0, 1, 1, 0]
    model = trainer.policies.updaters["tool"].model.__class__.from_pretrained(tiny_model)
    model.eval()
    for step, (rollout, stale) in enumerate(zip(collected, staleness, strict=True)):
        version = step - stale  # the updates the sampling weights had
        for name in handles:
            sample = next(
                s for s in rollout.samples if s.policy == name and len(s.generation.completion_ids) > 2
            )
            model.load_state_dict(snapshots[version][name])
            assert sample.generation.logprobs == pytest.approx(
                completion_logps(model, sample.generation), abs=1e-4
            )
            if stale:  # the weights after the update (what an on-policy rollout would use) give other values
                model.load_state_dict(snapshots[version + 1][name])
                assert sample.generation.logprobs != pytest.approx(
                    completion_logps(model, sample.generation), abs=1e-4
                )
    for handle in handles.values():  # the last sync brought the generator up to date
        own = handle.backend.model.state_dict()
        assert all(torch.equal(own[k], v) for k, v in handle.updater.model.state_dict().items())


def test_collate_gives_the_samples_sampling_logps_as_the_old_ones_and_refuses_samples_without_them(
    tiny_model,
):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)

    def sample(completion, logprobs):
        generation = Generation("x", (1, 2, 3), completion, logprobs)
        return Sample("g", 0, 0, "tool", "tool", "p", "x", 1.0, 1.0, 0.0, generation, advantage=0.5)

    batch = collate(
        [sample((4, 5), (-0.5, -1.5)), sample((6,), (-2.0,))], tokenizer, 3.0, sampling_logps=True
    )
    torch.testing.assert_close(batch["old_per_token_logps"], torch.tensor([[-0.5, -1.5], [-2.0, 0.0]]))
    assert "old_per_token_logps" not in collate([sample((4,), None)], tokenizer, 1.0)
    with pytest.raises(ValueError, match="sampling log-probability"):
        collate([sample((4, 5), None)], tokenizer, 2.0, sampling_logps=True)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--off_policy_steps", "2"], r"allowed values: \[0, 1\]"),
        (["--off_policy_steps", "1", "--temperature", "0.7"], "needs training temperature 1"),
        (
            ["--off_policy_steps", "1", "--policy_sampling", '{"tool": {"temperature": 1.3}}'],
            "policy_sampling",
        ),
        (["--off_policy_steps", "1", "--policy_layout", "lora_per_role"], "'shared' or 'per_role'"),
    ],
)
def test_unsupported_off_policy_settings_are_refused_by_name(flags, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        parse(["--env_id", "plan-path-v0", "--output_dir", str(tmp_path), *flags])
