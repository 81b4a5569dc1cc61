"""The update weighs every sample as one batch would, whatever the micro-batch cut, for every TRL loss type.

Checked against two independent computations: TRL's own `GRPOTrainer._compute_loss` on the whole batch at once,
and, for one sequence-mean and one token-mean loss, the policy gradient written out by hand.
"""

from unittest import mock

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import args_for, unequal_samples  # noqa: E402
from trl import GRPOTrainer  # noqa: E402

from pettingllms.backends.base import Generation  # noqa: E402
from pettingllms.backends.hf import load_pretrained as load_model  # noqa: E402
from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.rollout.samples import Sample  # noqa: E402
from pettingllms.trainers.update.activation_checkpointing import enable_activation_checkpointing  # noqa: E402
from pettingllms.trainers.update.completion_logps import completion_logps  # noqa: E402
from pettingllms.trainers.update.grpo_loss import LOSS_TYPES  # noqa: E402
from pettingllms.trainers.update.updater import PolicyUpdater, collate  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")


@pytest.fixture(scope="module", autouse=True)
def one_thread(one_torch_thread):
    """Every test of this module computes with one torch thread (restored after the module)."""


def grouped_samples() -> list[Sample]:
    """Three groups of three candidates whose prompts share a 4-token prefix (the chat template's, say) and differ
    after it in content and length, as an AT-GRPO turn's do; completions of unequal lengths."""
    rng = torch.Generator().manual_seed(1)
    prefix = torch.randint(5, 250, (4,), generator=rng).tolist()
    out = []
    for group, suffix_len in enumerate((3, 1, 5)):
        prompt = prefix + torch.randint(5, 250, (suffix_len,), generator=rng).tolist()
        for candidate, completion_len in enumerate((2, 5, 1)):
            completion = torch.randint(5, 250, (completion_len + group,), generator=rng).tolist()
            generation = Generation("", tuple(prompt), tuple(completion))
            sample = Sample(f"g{group}", group, 0, "plan", "plan", "", "", 0.0, 0.0, 0.0, generation)
            sample.advantage = (candidate - 1.0) * (group + 1)
            out.append(sample)
    return out


def updater_for(tiny_model, tmp_path, loss_type: str, batch_size: int) -> PolicyUpdater:
    level = "sequence" if loss_type == "luspo" else "token"
    args = args_for(
        tiny_model,
        tmp_path,
        "--loss_type",
        loss_type,
        "--importance_sampling_level",
        level,
        "--per_device_train_batch_size",
        str(batch_size),
    )
    model, tokenizer = load_model(tiny_model)
    return PolicyUpdater("plan", model, tokenizer, args)


def gradients(model) -> dict[str, torch.Tensor]:
    return {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}


def assert_same(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> None:
    """Equal up to float rounding (padding differs between cuts): 1e-5 of each tensor's largest entry."""
    assert got.keys() == want.keys() and got
    for name in want:
        scale = want[name].abs().max()
        if scale == 0:  # e.g. a LoRA A matrix while B is still zero
            assert got[name].abs().max() == 0, f"{name}: {got[name].abs().max():.2e} where TRL has 0"
            continue
        error = (got[name] - want[name]).abs().max() / scale
        assert error < 1e-5, f"{name}: relative error {error:.2e}"


def chunked_gradients(updater: PolicyUpdater, batch_size: int) -> dict[str, torch.Tensor]:
    updater.args.per_device_train_batch_size = batch_size
    updater.model.zero_grad()
    updater.accumulate_gradients(unequal_samples())
    return gradients(updater.model)


def trl_gradients(updater: PolicyUpdater, batch: list[Sample] | None = None) -> dict[str, torch.Tensor]:
    """TRL's own loss on all samples as one batch, no accumulation, backpropagated by hand; the log-probabilities
    are TRL's own too (one full forward per row), not the updater's shared-prefix ones."""
    batch = unequal_samples() if batch is None else batch
    tokens = sum(len(s.generation.completion_ids) for s in batch)
    inputs = collate(batch, updater.processing_class, tokens * updater.args.steps_per_generation)
    updater.model.zero_grad()
    updater.model.train()
    updater.current_gradient_accumulation_steps = 1
    GRPOTrainer._compute_loss(updater, updater.model, inputs).backward()
    return gradients(updater.model)


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_ragged_micro_batches_give_the_gradient_of_one_batch(tiny_model, tmp_path, loss_type):
    updater = updater_for(tiny_model, tmp_path, loss_type, batch_size=4)
    reference = trl_gradients(updater)
    for batch_size in (5, 4, 2, 1):  # one chunk; 4 + 1; 2 + 2 + 1; five chunks of one
        assert_same(chunked_gradients(updater, batch_size), reference)


def hand_gradients(updater: PolicyUpdater, per_token: bool) -> dict[str, torch.Tensor]:
    """-sum_i A_i * sum_t log p_it, divided by (N * T_i) for the sequence mean or by the total token count.

    With one iteration per batch the importance ratio is exp(logp - logp.detach()) = 1 with gradient
    grad(logp), so the clipped surrogate's gradient is exactly the plain policy gradient.
    """
    batch = unequal_samples()
    updater.model.zero_grad()
    total_tokens = sum(len(s.generation.completion_ids) for s in batch)
    loss = 0.0
    for sample in batch:
        prompt, completion = sample.generation.prompt_ids, sample.generation.completion_ids
        ids = torch.tensor([list(prompt) + list(completion)])
        logits = updater.model(input_ids=ids).logits[0, len(prompt) - 1 : -1]
        logps = torch.log_softmax(logits.float(), dim=-1).gather(1, torch.tensor(completion)[:, None]).sum()
        scale = total_tokens if per_token else len(batch) * len(completion)
        loss = loss - sample.advantage * logps / scale
    loss.backward()
    return gradients(updater.model)


@pytest.mark.parametrize(("loss_type", "per_token"), [("grpo", False), ("dapo", True)])
def test_the_update_is_the_hand_written_policy_gradient(tiny_model, tmp_path, loss_type, per_token):
    updater = updater_for(tiny_model, tmp_path, loss_type, batch_size=4)
    assert_same(chunked_gradients(updater, 2), hand_gradients(updater, per_token))


def test_an_entropy_bonus_with_a_sequence_mean_loss_is_refused_by_the_config(tiny_model, tmp_path):
    with pytest.raises(ConfigError, match="entropy_coef with loss_type='grpo'"):
        args_for(tiny_model, tmp_path, "--loss_type", "grpo", "--entropy_coef", "0.01")
    assert (
        args_for(tiny_model, tmp_path, "--loss_type", "dapo", "--entropy_coef", "0.01").entropy_coef == 0.01
    )


def test_log_probabilities_use_each_policys_own_sampling_temperature(tiny_model, tmp_path):
    args = args_for(tiny_model, tmp_path, "--policy_sampling", '{"plan": {"temperature": 2.0}}')
    for name, temperature in (("plan", 2.0), ("tool", 1.0)):
        model, tokenizer = load_model(tiny_model)
        updater = PolicyUpdater(name, model, tokenizer, args)
        sample = unequal_samples()[0]
        prompt, completion = sample.generation.prompt_ids, sample.generation.completion_ids
        ids = torch.tensor([list(prompt) + list(completion)])
        with torch.no_grad():
            got, _, _ = completion_logps(
                updater.model, ids, torch.ones_like(ids), len(completion), pad_token_id=tokenizer.pad_token_id
            )
            logits = updater.model(input_ids=ids).logits[0, len(prompt) - 1 : -1] / temperature
        want = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(completion)[:, None])[:, 0]
        torch.testing.assert_close(got[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("loss_type", ["grpo", "dapo"])
def test_prompts_shared_across_a_group_give_trls_gradient(tiny_model, tmp_path, loss_type):
    """The updater computes each shared prompt token once (`shared_prefix_logps`); the gradient is TRL's, whose
    forward runs every row's whole prompt."""
    updater = updater_for(tiny_model, tmp_path, loss_type, batch_size=4)
    reference = trl_gradients(updater, grouped_samples())
    for batch_size in (9, 4, 1):
        updater.args.per_device_train_batch_size = batch_size
        updater.model.zero_grad()
        updater.accumulate_gradients(grouped_samples())
        assert_same(gradients(updater.model), reference)


def test_shared_prefix_log_probabilities_and_entropies_are_trls(tiny_model, tmp_path):
    updater = updater_for(tiny_model, tmp_path, "grpo", batch_size=4)
    inputs = collate(grouped_samples(), updater.processing_class, 1.0)
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
    mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
    width = inputs["completion_ids"].size(1)
    with torch.no_grad():
        ours = completion_logps(
            updater.model, ids, mask, width, pad_token_id=updater.processing_class.pad_token_id
        )
        trls = GRPOTrainer._get_per_token_logps_and_entropies(
            updater, updater.model, ids, mask, width, compute_entropy=True
        )
    for got, want in zip(ours[:2], trls[:2], strict=True):
        assert got.shape == want.shape == inputs["completion_ids"].shape
        assert torch.allclose(got, want, atol=1e-5)
    assert (ours[0][inputs["completion_mask"] == 0] == 0).all()


def test_under_activation_checkpointing_the_update_falls_back_to_trls_forward(tiny_model, tmp_path):
    """Checkpointed layers drop the KV cache the shared prefix lives in; the update must then run TRL's own
    forward and still give TRL's gradient."""
    updater = updater_for(tiny_model, tmp_path, "grpo", batch_size=4)
    reference = trl_gradients(updater, grouped_samples())
    enable_activation_checkpointing(updater.model, {})
    updater.model.zero_grad()
    with mock.patch(
        "pettingllms.trainers.update.completion_logps.shared_prefix_logps",
        side_effect=AssertionError("not a fallback"),
    ):
        updater.accumulate_gradients(grouped_samples())
    assert_same(gradients(updater.model), reference)


def test_a_lora_adapter_gets_trls_gradient_through_the_shared_prefix(tiny_model, tmp_path):
    """PEFT forwards the shared cache, positions and TRL's fused head to the base model: the adapter's gradient
    is TRL's."""
    from pettingllms.trainers.at_grpo import ATGRPOTrainer
    from pettingllms.trainers.policies.build import activate_adapter

    trainer = ATGRPOTrainer(
        args_for(tiny_model, tmp_path, "--policy_layout", "lora_per_role"), log=lambda _: None
    )
    updater = next(iter(trainer.policies.updaters.values()))
    activate_adapter(updater.model, updater.name)
    reference = trl_gradients(updater, grouped_samples())
    assert any("lora_B" in name for name in reference)
    updater.model.zero_grad()
    updater.accumulate_gradients(grouped_samples())
    assert_same(gradients(updater.model), reference)


def test_micro_batches_packed_by_tokens_hold_every_sample_once_within_counts_bound():
    from pettingllms.trainers.update.micro_batches import by_count, by_tokens, padded_tokens

    samples = unequal_samples() + grouped_samples()
    longest = max(len(s.generation.prompt_ids) for s in samples) + max(
        len(s.generation.completion_ids) for s in samples
    )
    for rows in (1, 2, 3, 4, 20):
        packed, counted = by_tokens(samples, rows), by_count(samples, rows)
        assert sorted(id(s) for chunk in packed for s in chunk) == sorted(map(id, samples))
        assert all(padded_tokens(chunk) <= rows * longest for chunk in packed)
        assert len(packed) <= len(counted)
    assert [len(chunk) for chunk in by_tokens(samples, 2)] != [len(chunk) for chunk in by_count(samples, 2)]


@pytest.mark.parametrize("loss_type", ("grpo", "dapo", "bnpo"))
def test_micro_batches_packed_by_tokens_give_the_gradient_of_one_batch(tiny_model, tmp_path, loss_type):
    updater = updater_for(tiny_model, tmp_path, loss_type, batch_size=4)
    batch = unequal_samples() + grouped_samples()
    reference = trl_gradients(updater, batch)
    updater.args.per_device_train_batch_size, updater.args.micro_batching = 3, "tokens"
    updater.model.zero_grad()
    updater.accumulate_gradients(batch)
    assert_same(gradients(updater.model), reference)
