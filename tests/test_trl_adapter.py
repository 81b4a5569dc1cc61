"""The tripwire on TRL's private internals (`pettingllms.trainers.update.trl_adapter`): it passes on the pinned TRL and
fails loudly, naming the internal, when one moves."""

import inspect
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from letters import args_for  # noqa: E402

from pettingllms.trainers.update.trl_adapter import (  # noqa: E402
    PRIVATE_ATTRIBUTES,
    PRIVATE_SURFACE,
    TRLChangedError,
    check_trl,
)


def test_the_installed_trl_has_every_private_internal_used():
    check_trl()


def test_a_missing_internal_is_named(monkeypatch):
    monkeypatch.setitem(PRIVATE_SURFACE, "_a_method_trl_renamed", ("self",))
    with pytest.raises(TRLChangedError, match="_a_method_trl_renamed is gone"):
        check_trl()


def test_a_changed_signature_is_named(monkeypatch):
    monkeypatch.setattr(trl.GRPOTrainer, "_prepare_inputs", lambda self, inputs, extra: inputs)
    with pytest.raises(TRLChangedError, match=r"_prepare_inputs now takes \('self', 'inputs'\)"):
        check_trl()


def test_an_init_that_stops_setting_a_private_attribute_is_named(monkeypatch):
    def init(self, *args, **kwargs):  # sets what TRL 1.16 does, except its metrics log
        self._step = 0

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
    from pettingllms.trainers.update.updater import PolicyUpdater

    model, tokenizer = load_pretrained(tiny_model)
    updater = PolicyUpdater("p", model, tokenizer, args_for(tiny_model, tmp_path))
    assert [name for name in PRIVATE_ATTRIBUTES if not hasattr(updater, name)] == []
    assert updater.drain_metrics() == {}


def test_no_other_trainer_module_names_a_private_internal_of_trls_trainer():
    """Private names defined by TRL's `GRPOTrainer` (its methods and what its `__init__` sets) appear, among the
    trainers and the TRL bridge, only in the adapter."""
    package = Path(__file__).parents[1] / "pettingllms"
    names = {
        name
        for cls in trl.GRPOTrainer.__mro__
        if cls.__module__.startswith("trl")
        for name in vars(cls)
        if name.startswith("_") and not name.startswith("__")
    }
    names |= set(re.findall(r"self\.(_[a-z]\w*)\s*=", inspect.getsource(trl.GRPOTrainer.__init__)))
    assert {"_compute_loss", "_get_per_token_logps_and_entropies", "_metrics"} <= names
    modules = sorted((package / "trainers").glob("*.py")) + sorted((package / "integrations").rglob("*.py"))
    found = {
        path.name: sorted(name for name in names if re.search(rf"\.{name}\b", path.read_text()))
        for path in modules
        if path.name != "trl_adapter.py"
    }
    assert {module: used for module, used in found.items() if used} == {}
