"""One rank of a data-parallel check, run by `tests/test_distributed.py` under `torchrun` (or alone: one rank).

    python tests/distributed_worker.py update MODEL OUT LOSS_TYPE   # one update on `fixed_samples()`, weights -> OUT
    python tests/distributed_worker.py train MODEL RUN_DIR [FLAG VALUE ...]   # a letters run (tests/letters.py)
    python tests/distributed_worker.py vllm MODEL RUN_DIR   # two steps with one vLLM engine per rank (.venv-vllm)

`update` gives each rank its share of the same five samples (`letters.unequal_samples`: rank 0 gets 3, rank 1 2) (`World.shard`) and writes the updated full weights
(rank 0) to OUT with `torch.save`, so that one process and two can be compared.
"""

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from letters import args_for, register_letters, unequal_samples  # noqa: E402

from pettingllms.backends.hf import load_pretrained  # noqa: E402
from pettingllms.parallel.world import current_world, leave_process_group  # noqa: E402


def update(model_path: str, out: str, loss_type: str, *flags: str) -> None:
    from pettingllms.backends.weights import model_stream
    from pettingllms.trainers.update.sharding import full_model_state, is_sharded
    from pettingllms.trainers.update.updater import PolicyUpdater

    args = args_for(
        model_path,
        Path(out).parent / "run",
        "--loss_type",
        loss_type,
        "--per_device_train_batch_size",
        "2",
        "--num_generations",
        "2",
        "--use_cpu",
        "true",
        *flags,
    )
    model, tokenizer = load_pretrained(model_path)
    updater = PolicyUpdater("plan", model, tokenizer, args)
    world = current_world()
    metrics = updater.update(world.shard(unequal_samples()))
    state = full_model_state(updater.model) if is_sharded(updater.model) else updater.model.state_dict()
    # what a sync sends: every rank gathers one parameter at a time, in the same order
    streamed = {name: tensor.to("cpu", copy=True) for name, tensor in model_stream(updater.model).tensors()}
    if world.is_main:
        saved = {
            "weights": state,
            "sharded": is_sharded(updater.model),
            "metrics": metrics,
            "streamed": streamed,
        }
        torch.save(saved, out)


def train(model_path: str, run_dir: str, *flags: str) -> None:
    from pettingllms.trainers.at_grpo import ATGRPOTrainer

    args = args_for(model_path, run_dir, "--use_cpu", "true", *flags)
    ATGRPOTrainer(args, log=print).train()


def vllm(model_path: str, run_dir: str, layout: str) -> None:
    """Two steps with one vLLM engine per policy and rank; then each rank's engines must give the greedy
    completions of the updated (gathered) models, having slept through both updates."""
    import pettingllms
    from pettingllms.backends.base import SamplingConfig
    from pettingllms.backends.hf import HFPolicy
    from pettingllms.trainers.at_grpo import ATGRPOTrainer
    from pettingllms.trainers.update.sharding import full_weights

    flags = ("--use_cpu", "true", "--policy_layout", layout, "--generation_backend", "vllm")
    trainer = ATGRPOTrainer(args_for(model_path, run_dir, *flags, "--max_completion_length", "12"), log=print)
    for _ in range(2):
        trainer.train_step()
    env = pettingllms.make("test-letters-v0")
    env.reset(seed=current_world().rank)
    prompts = [str(env.observe(agent)) for agent in env.possible_agents]
    greedy = SamplingConfig(temperature=0.0, max_new_tokens=8)
    engine_pids: set[int] = set()
    for name, handle in trainer.policies.handles.items():
        with full_weights(handle.updater.model):
            hf = HFPolicy(handle.updater.model, handle.updater.processing_class)
            expected = hf.generate(prompts, 1, greedy)
        got = handle.backend.generate(prompts, 1, greedy)
        assert [g.completion_ids for (g,) in got] == [g.completion_ids for (g,) in expected], (got, expected)
        assert handle.sleeper.sleeps == handle.sleeper.wakes == 2
        (engine_process,) = handle.backend.llm.collective_rpc("pettingllms_process")
        assert engine_process["pid"] != os.getpid() and engine_process["WORLD_SIZE"] == "1", engine_process
        engine_pids.add(engine_process["pid"])
        print(f"rank {current_world().rank}: {name}'s engine serves the updated weights")
    assert len(engine_pids) == len(trainer.policies.handles)  # one process per engine
    trainer.close()


if __name__ == "__main__":
    register_letters()
    torch.manual_seed(0)
    mode, *rest = sys.argv[1:]
    {"update": update, "train": train, "vllm": vllm}[mode](*rest)
    leave_process_group()
