"""The tripwire on TRL's private internals (`pettingllms.trainers.trl_adapter`): it passes on the pinned TRL and
fails loudly, naming the internal, when one moves."""

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from letters import args_for  # noqa: E402

from pettingllms.trainers.trl_adapter import (  # noqa: E402
    PRIVATE_ATTRIBUTES,
    TRLChangedError,
    check_trl,
)


def test_the_installed_trl_has_every_private_internal_used():
    check_trl()


def test_a_missing_internal_is_named(monkeypatch):
    monkeypatch.delattr(trl.GRPOTrainer, "_get_per_token_logps_and_entropies")
    with pytest.raises(TRLChangedError, match="_get_per_token_logps_and_entropies is gone"):
        check_trl()


def test_a_changed_signature_is_named(monkeypatch):
    monkeypatch.setattr(trl.GRPOTrainer, "_prepare_inputs", lambda self, inputs, extra: inputs)
    with pytest.raises(TRLChangedError, match=r"_prepare_inputs now takes \('self', 'inputs'\)"):
        check_trl()


def test_a_loss_that_stops_reading_the_accumulation_steps_is_named(monkeypatch):
    monkeypatch.setattr(trl.GRPOTrainer, "_compute_loss", lambda self, model, inputs: 0.0)
    with pytest.raises(TRLChangedError, match="no longer reads self.current_gradient_accumulation_steps"):
        check_trl()


def test_an_init_that_stops_setting_a_private_attribute_is_named(monkeypatch):
    def init(self, *args, **kwargs):  # sets what TRL 1.16 does, except its metrics log
        self._entropy_bonus_enabled = False

    monkeypatch.setattr(trl.GRPOTrainer, "__init__", init)
    with pytest.raises(TRLChangedError, match=r"__init__ no longer sets self._metrics"):
        check_trl()


def test_trl_is_pinned_to_the_tested_minor():
    pin = re.search(
        r'"trl>=(\d+\.\d+),<(\d+\.\d+)"', (Path(__file__).parents[1] / "pyproject.toml").read_text()
    )
    assert pin is not None, "pyproject.toml pins trl to one minor version"
    assert trl.__version__.startswith(pin[1] + "."), (trl.__version__, pin[0])


@pytest.mark.usefixtures("letters_env")
def test_the_private_attributes_exist_on_an_update_worker(tiny_model, tmp_path):
    from pettingllms.backends.hf import load_pretrained
    from pettingllms.trainers.updater import PolicyUpdater

    model, tokenizer = load_pretrained(tiny_model)
    updater = PolicyUpdater("p", model, tokenizer, args_for(tiny_model, tmp_path))
    assert [name for name in PRIVATE_ATTRIBUTES if not hasattr(updater, name)] == []
    assert updater.drain_metrics() == {} and updater.entropy_bonus_enabled is False
