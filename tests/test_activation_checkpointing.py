"""Activation checkpointing works with every transformers the `train` extra accepts: the paper configs turn it on,
and transformers 5.17 (what `pip install '.[train,vllm]'` resolves to; CI runs this file in that environment too)
has only the `gradient_checkpointing*` names. Checked on a real update: checkpointing is on in the model, and the
gradient is the one computed without it."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import args_for  # noqa: E402
from test_updater_weights import grouped_samples  # noqa: E402

from pettingllms.backends.hf import load_pretrained  # noqa: E402
from pettingllms.backends.shared_prefix import uses_activation_checkpointing  # noqa: E402
from pettingllms.trainers.update.activation_checkpointing import checkpointing_options  # noqa: E402
from pettingllms.trainers.update.updater import PolicyUpdater  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")


def gradients(tiny_model, tmp_path, *flags) -> tuple[PolicyUpdater, dict[str, torch.Tensor]]:
    args = args_for(tiny_model, tmp_path, "--optim", "sgd", *flags)
    model, tokenizer = load_pretrained(tiny_model)
    updater = PolicyUpdater("plan", model, tokenizer, args, device="cpu")
    updater.accumulate_gradients(grouped_samples())
    return updater, {name: p.grad.clone() for name, p in updater.model.named_parameters()}


def test_the_alias_turns_checkpointing_on_as_newer_transformers_do(tiny_model, tmp_path):
    args = args_for(tiny_model, tmp_path, "--gradient_checkpointing", "true")
    assert args.activation_checkpointing is True and args.gradient_checkpointing is True
    assert args_for(tiny_model, tmp_path).activation_checkpointing is False


def test_an_update_with_checkpointing_has_the_gradient_of_one_without(tiny_model, tmp_path):
    options = ["--gradient_checkpointing_kwargs", '{"use_reentrant": false, "every_n_layers": 2}']
    checkpointed, with_it = gradients(tiny_model, tmp_path, "--activation_checkpointing", "true", *options)
    assert checkpointing_options(checkpointed.args) == {"use_reentrant": False, "every_n_layers": 2}
    assert uses_activation_checkpointing(checkpointed.model)
    plain, without = gradients(tiny_model, tmp_path, "--activation_checkpointing", "false")
    assert not uses_activation_checkpointing(plain.model)
    assert with_it.keys() == without.keys()
    for name, grad in with_it.items():
        torch.testing.assert_close(grad, without[name], rtol=1e-4, atol=1e-6, msg=name)
    assert any(grad.abs().sum() > 0 for grad in with_it.values())
