"""The one factory of generation backends (`trainers.policies.generation`): the vLLM branches that only a GPU
reaches (compute dtype, sleep mode, LoRA engines, the off-policy refusal), run on the CPU against a recording stand-in
for `VLLMPolicy`, and the HF branches against a real tiny model."""

import pytest

pytest.importorskip("trl")

from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.trainers.policies.generation import generation_backend  # noqa: E402
from pettingllms.trainers.settings.config import ATGRPOConfig  # noqa: E402


class RecordedEngine:
    """Stands for `VLLMPolicy`: keeps what it was built with."""

    def __init__(self, path, seed=0, **kwargs):
        self.path, self.seed, self.kwargs = path, seed, kwargs


@pytest.fixture
def engines(monkeypatch):
    import pettingllms.backends.vllm_engine as vllm_engine

    monkeypatch.setattr(vllm_engine, "VLLMPolicy", RecordedEngine)


def config(tmp_path, **fields) -> ATGRPOConfig:
    return ATGRPOConfig(output_dir=str(tmp_path), use_cpu=True, generation_backend="vllm", **fields)


def test_an_engine_sharing_a_gpu_with_its_update_sleeps_in_the_compute_dtype(engines, tmp_path):
    args = config(tmp_path, bf16=True, vllm_engine_kwargs={"max_model_len": 512})
    engine = generation_backend(args, seed=7, path="m", device="cuda:1", on_gpu=True, sleep=True)
    assert engine.path == "m" and engine.seed == 7
    assert engine.kwargs == {
        "engine_kwargs": {"max_model_len": 512, "dtype": "bfloat16"},
        "sleep_mode": True,
        "device": "cuda:1",
    }


def test_a_lora_engine_serves_every_adapter_in_the_compute_dtype_on_a_gpu(engines, tmp_path):
    args = config(tmp_path, bf16=True, lora_r=8, vllm_engine_kwargs={"dtype": "float16"})
    engine = generation_backend(args, seed=0, path="base", on_gpu=True, lora_adapters=2)
    assert engine.kwargs == {
        "engine_kwargs": {"dtype": "float16"},  # the kwargs' own dtype wins
        "sleep_mode": False,
        "enable_lora": True,
        "max_lora_rank": 8,
        "max_loras": 2,
    }
    on_cpu = generation_backend(args, seed=0, path="base", lora_adapters=2)
    assert on_cpu.kwargs["engine_kwargs"] == {"dtype": "float16"} and "device" not in on_cpu.kwargs


def test_a_sleeping_engine_refuses_off_policy_training(engines, tmp_path):
    args = config(tmp_path, off_policy_steps=1)
    with pytest.raises(ConfigError, match="off_policy_steps=1 with generation_backend='vllm' on a GPU"):
        generation_backend(args, seed=0, path="m", device="cuda:0", on_gpu=True, sleep=True)
    awake = generation_backend(args, seed=0, path="m", on_gpu=True)  # a Ray actor's engine does not sleep
    assert awake.kwargs["sleep_mode"] is False


def test_hf_samples_from_the_given_model_or_loads_the_folder_in_the_compute_dtype(tmp_path):
    import torch
    from letters import build_tiny_model

    folder = build_tiny_model(tmp_path / "model")
    args = ATGRPOConfig(output_dir=str(tmp_path / "run"), use_cpu=True, max_generation_rows=3)
    loaded = generation_backend(args, seed=0, path=folder, device="cpu")
    assert next(loaded.model.parameters()).dtype == torch.float32 and loaded.max_batch_rows == 3
    shared = generation_backend(args, seed=0, model=loaded.model, tokenizer=loaded.tokenizer, device="cpu")
    assert shared.model is loaded.model
