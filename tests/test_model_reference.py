"""A model is named by a folder or a Hugging Face id, wherever a model is named (HF backend, vLLM, Ray actors,
the trainer): `resolve_model` turns an id into its cached snapshot, and an id it cannot get into one clear line."""

import time

import pytest

pytest.importorskip("transformers")

from huggingface_hub import constants  # noqa: E402

from pettingllms.backends.base import SamplingConfig  # noqa: E402
from pettingllms.backends.hf import HFPolicy  # noqa: E402
from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.models.reference import resolve_model  # noqa: E402
from pettingllms.models.tiny import build_model, config_for_tokenizer  # noqa: E402
from pettingllms.models.tokenizer import train_tokenizer  # noqa: E402

REVISION = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """A Hugging Face cache holding `owner/tiny` as `huggingface_hub` lays it out (refs/main -> a snapshot)."""
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    repo = tmp_path / "hub" / "models--owner--tiny"
    snapshot = repo / "snapshots" / REVISION
    tokenizer = train_tokenizer(["hello world", "<answer>U R</answer>"] * 20, vocab_size=300)
    config = config_for_tokenizer(
        tokenizer, hidden_size=32, intermediate_size=64, num_hidden_layers=1, head_dim=8
    )
    build_model(config, seed=0).save_pretrained(snapshot)
    tokenizer.save_pretrained(snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    return snapshot


def test_a_folder_is_itself_and_a_cached_hub_id_is_its_snapshot(hub_cache):
    assert resolve_model(hub_cache) == hub_cache
    assert resolve_model("owner/tiny") == hub_cache


def test_the_hf_backend_loads_a_hub_id_from_the_cache(hub_cache):
    policy = HFPolicy.from_pretrained("owner/tiny", seed=0)
    [[generation]] = policy.generate(["hello"], 1, SamplingConfig(temperature=0.0, max_new_tokens=3))
    assert len(generation.completion_ids) <= 3


def test_an_id_that_is_neither_cached_nor_reachable_is_one_line_naming_it(hub_cache, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    started = time.perf_counter()
    with pytest.raises(ConfigError) as error:
        resolve_model("owner/not-there")
    message = str(error.value)
    assert "'owner/not-there'" in message and "huggingface-cli download owner/not-there" in message
    assert "'tiny', 'qwen3-test' and 'smollm2' need no download" in message  # what runs offline instead
    assert "no such folder here" in message and "no such model in the local Hugging Face cache" in message
    assert "\n" not in message and time.perf_counter() - started < 10


def test_a_mistyped_path_is_not_sent_to_the_hub(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(ConfigError, match="no such folder"):
        resolve_model("runs/typo")  # the form of an id, but runs/ is a folder here


def test_the_trainer_resolves_a_hub_id_once_to_the_folder_every_backend_loads(hub_cache, tmp_path):
    from pettingllms.trainers.policies.model_source import starting_model
    from pettingllms.trainers.settings.arguments import parse

    args = parse(["--model_name_or_path", "owner/tiny", "--output_dir", str(tmp_path / "run")])
    assert starting_model(args.model_name_or_path, args) == str(hub_cache)  # HF, vLLM and Ray actors get it
