"""The memory planner against measured bytes on small models, and the plans of the paper's configs.

Exact: the weights (the planner counts parameters on the meta device; the loaded model's tensors are measured),
AdamW's states after a real update, the KV cache of a real forward, the adapters of `lora_per_role` (PEFT's
count). Within 5% (2% measured; 25% asked): the activations one micro-batch saves, measured with saved-tensor hooks (each storage once,
parameters excluded) on a Qwen3 with Qwen3-1.7B's attention geometry (16 heads, 8 KV heads, head_dim 128: not a
shape the formula's coefficients were read from), padded rows of unequal lengths as an update's are, in float32
and bfloat16, with and without activation checkpointing.
"""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import args_for  # noqa: E402
from transformers import AutoModelForCausalLM, Qwen3Config  # noqa: E402
from trl.trainer.utils import add_fused_lm_head  # noqa: E402

from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.trainers.policies.memory_plan import (  # noqa: E402
    GIB,
    Hardware,
    adamw_bytes,
    apply_plan,
    plan_run,
    saved_activation_bytes,
)
from pettingllms.trainers.policies.model_shapes import ModelShape, shape_of  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")


def attention_geometry_config(**overrides) -> Qwen3Config:
    """Qwen3-1.7B's attention (16 heads, 8 KV heads, head_dim 128) on a small body and vocabulary."""
    fields = dict(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=192,
        num_hidden_layers=2,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        tie_word_embeddings=True,
    )
    return Qwen3Config(**{**fields, **overrides})


def test_weights_are_counted_exactly_before_any_weight_loads():
    for config in (attention_geometry_config(), attention_geometry_config(tie_word_embeddings=False)):
        shape = ModelShape.of(config)
        model = AutoModelForCausalLM.from_config(config)
        assert shape.parameters * 4 == sum(p.nbytes for p in model.parameters())
        assert shape.parameters * 2 == sum(p.nbytes for p in model.to(torch.bfloat16).parameters())
        assert shape.tensors == len(list(model.parameters()))


def test_the_paper_models_are_planned_offline_with_their_real_sizes(tmp_path):
    args = args_for("Qwen/Qwen3-1.7B", tmp_path)  # the settings only: nothing is loaded
    assert (
        round(shape_of("Qwen/Qwen3-1.7B", args).parameters / 1e9, 2) == 1.72
    )  # the model cards: 1.7B and 8.2B
    assert round(shape_of("Qwen/Qwen3-8B", args).parameters / 1e9, 2) == 8.19


def test_adamw_states_are_counted_exactly_after_a_real_update(tiny_model, tmp_path):
    from letters import unequal_samples

    from pettingllms.backends.hf import load_pretrained
    from pettingllms.trainers.update.updater import PolicyUpdater

    model, tokenizer = load_pretrained(tiny_model)
    updater = PolicyUpdater("plan", model, tokenizer, args_for(tiny_model, tmp_path))
    updater.update(unequal_samples())
    measured = sum(
        value.nbytes
        for state in updater.optimizer.state.values()
        for value in state.values()
        if torch.is_tensor(value)
    )
    shape = ModelShape.of(model.config)
    assert measured == adamw_bytes(shape.parameters, shape.tensors, 4)


def test_a_mixed_precision_policy_is_counted_exactly_as_it_is_built(tiny_model, tmp_path):
    """bf16: float32 master weights, gradients and AdamW states, and a bfloat16 copy that generation samples
    from, each as the trainer allocates them."""
    from letters import unequal_samples

    from pettingllms.trainers.at_grpo import ATGRPOTrainer

    args = args_for(tiny_model, tmp_path, "--bf16", "true", "--use_cpu", "true")
    trainer = ATGRPOTrainer(args, log=lambda _: None)
    plan = plan_run(args, trainer.agents, Hardware(1, 100 * GIB))
    planned = {policy.name: policy for policy in plan.devices[0].policies}
    for name, handle in trainer.policies.handles.items():
        updater = handle.updater
        updater.accumulate_gradients(unequal_samples())
        assert sum(p.nbytes for p in updater.model.parameters()) == planned[name].weights
        assert sum(p.grad.nbytes for p in updater.model.parameters()) == planned[name].gradients
        assert sum(p.nbytes for p in handle.backend.model.parameters()) == planned[name].generation_copy
        updater.optimizer.step()
        states = updater.optimizer.state.values()
        assert (
            sum(v.nbytes for s in states for v in s.values() if torch.is_tensor(v)) == planned[name].optimizer
        )
    trainer.close()


def test_mixed_precision_plans_16_bytes_a_parameter_before_activations():
    for config, params, total in (("qwen3-1.7b", 1.72e9, 27), ("qwen3-8b", 8.19e9, 131)):
        args = paper_args(f"configs/paper/{config}/plan_path.yaml", "--policy_layout", "shared")
        policy = plan_run(args, agents_of(args), Hardware(8, 141 * GIB)).devices[0].policies[0]
        trained = policy.weights + policy.gradients + policy.optimizer
        assert trained == pytest.approx(16 * params, rel=0.01) and trained / 1e9 == pytest.approx(
            total, abs=1
        )
        assert policy.generation_copy == pytest.approx(2 * params, rel=0.01)  # bf16 copy for sampling


def test_vllm_engines_are_sized_for_their_rows_and_sleep_through_the_update():
    args = paper_args("configs/paper/qwen3-1.7b/plan_path.yaml", "--generation_backend", "vllm")
    plan = plan_run(args, agents_of(args), Hardware(1, 141 * GIB))
    assert plan.fits, plan.render()
    engine = plan.settings({})["vllm_engine_kwargs"]
    assert engine["max_model_len"] == 3328 + 4096  # the config's plan_prompt_tokens + max_completion_length
    device = plan.devices[0]
    assert device.engines_awake == int(2 * engine["gpu_memory_utilization"] * device.budget)
    assert device.update_peak < device.usable  # beside the sleeping engines, not their peak
    assert plan.settings({"max_model_len": 9000})["vllm_engine_kwargs"]["max_model_len"] == 9000
    on_ray = paper_args(
        "configs/paper/qwen3-1.7b/plan_path.yaml", "--generation_backend", "vllm", "--distributed", "ray"
    )
    assert plan_run(on_ray, agents_of(on_ray), Hardware(1, 141 * GIB)).engine_share == 0.9  # a GPU of its own
    big = paper_args("configs/paper/qwen3-8b/plan_path.yaml", "--generation_backend", "vllm")
    tight = plan_run(
        big, agents_of(big), Hardware(8, 80 * GIB, ranks=8)
    )  # the update fits, the engines do not
    assert not tight.fits and tight.micro_batch is not None
    assert "each vLLM engine beside the update workers on cuda:0" in tight.refusal()
    assert "less than an engine needs" in tight.refusal()


def test_the_fused_heads_backward_buffers_are_planned():
    args = paper_args("configs/paper/qwen3-8b/plan_path.yaml")
    device = plan_run(args, agents_of(args), Hardware(8, 141 * GIB, ranks=8)).devices[0]
    shape = shape_of("Qwen/Qwen3-8B", args)
    rows = device.head_backward // (4 * shape.hidden) - shape.vocab
    assert rows % (3328 + 4096) == 0 and rows // (3328 + 4096) >= 1


def test_the_kv_cache_is_counted_exactly():
    config = attention_geometry_config()
    model = AutoModelForCausalLM.from_config(config).eval()
    rows, tokens = 3, 37
    with torch.no_grad():
        cache = model(torch.randint(0, 512, (rows, tokens)), use_cache=True).past_key_values
    measured = sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)
    assert measured == rows * tokens * ModelShape.of(config).kv_bytes_per_token(4)


def test_lora_adapters_are_counted_as_peft_builds_them():
    from peft import LoraConfig, get_peft_model

    config = attention_geometry_config()
    model = get_peft_model(
        AutoModelForCausalLM.from_config(config),
        LoraConfig(r=8, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert trainable == ModelShape.of(config).lora_parameters(8)


def measured_activations(config, dtype, checkpointing: bool) -> tuple[int, int, int]:
    """(saved bytes, rows, tokens) of TRL's fused-head forward on 3 left-padded prompts + right-padded
    completions."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).to(dtype)
    add_fused_lm_head(model)
    if checkpointing:
        model.gradient_checkpointing_enable()
    model.train()
    rows, prompts, completions = 3, (150, 120, 101), (120, 64, 90)
    width = max(prompts) + max(completions)
    ids = torch.randint(0, 512, (rows, width))
    mask = torch.zeros_like(ids)
    for row, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        mask[row, max(prompts) - prompt : max(prompts) + completion] = 1
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, : max(prompts)] = -100
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            saved.setdefault(storage.data_ptr(), storage.nbytes())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    return sum(saved.values()), rows, width


@pytest.mark.parametrize("dtype, size", [(torch.float32, 4), (torch.bfloat16, 2)])
@pytest.mark.parametrize("checkpointing", [False, True])
def test_activations_are_within_a_quarter_of_what_the_forward_saves(dtype, size, checkpointing):
    config = attention_geometry_config()
    measured, rows, tokens = measured_activations(config, dtype, checkpointing)
    predicted = saved_activation_bytes(ModelShape.of(config), rows, tokens, size, checkpointing=checkpointing)
    assert 0.95 <= predicted / measured <= 1.05, (predicted, measured)  # the issue asks 25%: it holds to 2%


# ----------------------------------------------------------------- plans


def paper_args(config: str, *flags: str):
    from pettingllms.trainers.settings.arguments import parse

    return parse(["--config", config, "--use_cpu", "true", *flags])


def agents_of(args) -> list[str]:
    import pettingllms

    return list(pettingllms.make(args.env_id, workflow=args.workflow).possible_agents)


def test_qwen3_8b_per_role_is_refused_on_one_80_gib_gpu_with_the_numbers_and_the_knobs():
    args = paper_args("configs/paper/qwen3-8b/plan_path.yaml")
    plan = plan_run(args, agents_of(args), Hardware(1, 80 * GIB))
    assert not plan.fits
    message = plan.refusal()
    assert (
        "cuda:0 needs" in message and "weights 61.0, optimizer 122.1, generation copy 30.5" in message
    )  # 2 policies x 8.19B: float32 weights, 2 float32 AdamW states, a bfloat16 copy for sampling
    assert "torchrun" in message and "lora_per_role" in message
    assert "activation_checkpointing" not in message  # the paper configs have it on already
    with pytest.raises(ConfigError, match="the run does not fit"):
        apply_plan(args, plan, print)


def test_the_plan_chooses_the_micro_batch_and_the_rows_that_fit():
    args = paper_args("configs/paper/qwen3-8b/plan_path.yaml", "--activation_checkpointing", "true")
    plan = plan_run(args, agents_of(args), Hardware(8, 80 * GIB, ranks=8))
    assert plan.fits and 1 <= plan.micro_batch < 64 and plan.generation_rows <= 32
    assert all(device.peak <= device.usable for device in plan.devices)
    more = plan_run(args, agents_of(args), Hardware(8, 141 * GIB, ranks=8))
    assert more.micro_batch > plan.micro_batch  # more memory, larger micro-batches
    logged: list[str] = []
    apply_plan(args, plan, logged.append)
    assert args.per_device_train_batch_size == plan.micro_batch
    assert logged and "per_device_train_batch_size 64 ->" in logged[0]


def test_sharding_over_ranks_divides_weights_gradients_and_optimizer_states():
    args = paper_args("configs/paper/qwen3-1.7b/plan_path.yaml")
    one = plan_run(args, agents_of(args), Hardware(8, 80 * GIB)).devices[0].policies[0]
    eight = plan_run(args, agents_of(args), Hardware(8, 80 * GIB, ranks=8)).devices[0].policies[0]
    assert eight.weights * 8 == pytest.approx(one.weights, abs=8)
    assert eight.optimizer * 8 == pytest.approx(one.optimizer, abs=8)
    assert eight.generation_copy == one.generation_copy  # sampling's bfloat16 copy holds the whole model


def test_pettingllms_train_plan_prints_the_plan_and_exits(capsys):
    from pettingllms.trainers.cli import main

    code = main(
        [
            "--config",
            "configs/paper/qwen3-1.7b/plan_path.yaml",
            "--plan",
            "--plan_gpus",
            "8",
            "--plan_gpu_gib",
            "80",
            "--plan_ranks",
            "8",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "cuda:0-7" in out and "chosen:" in out
    assert main(["--config", "configs/paper/qwen3-1.7b/plan_path.yaml", "--plan"]) == 2  # no GPU here
    assert "--plan_gpus N --plan_gpu_gib G" in capsys.readouterr().err


def test_plan_exits_1_when_a_device_does_not_fit_so_a_launch_script_can_check(capsys):
    from pettingllms.trainers.cli import PLAN_DOES_NOT_FIT, main

    flags = ["--policy_layout", "per_role", "--plan", "--plan_gpus", "1", "--plan_gpu_gib", "141"]
    code = main(["--config", "configs/paper/qwen3-8b/plan_path.yaml", *flags])
    out = capsys.readouterr().out
    assert code == PLAN_DOES_NOT_FIT == 1 and "NO" in out and "does not fit" in out


@pytest.mark.parametrize(
    "config",
    sorted(Path("configs/paper").glob("*/*.yaml")),
    ids=lambda path: f"{path.parent.name}/{path.stem}",
)
def test_plan_prints_the_plan_of_every_paper_config(config, capsys):
    from pettingllms.trainers.cli import main

    flags = ["--plan", "--plan_gpus", "8", "--plan_gpu_gib", "141", "--plan_ranks", "8"]
    assert main(["--config", str(config), *flags]) == 0
    out = capsys.readouterr().out
    assert "gen. copy" in out and "chosen:" in out
    assert (
        f"rows of {parse_tokens(config)} tokens" in out
    )  # the env's own prompt length + the completion budget


def parse_tokens(config) -> int:
    args = paper_args(str(config))
    return args.plan_prompt_tokens + args.max_completion_length


def test_the_table_of_what_fits_where_in_the_docs_is_what_the_planner_says():
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "scripts" / "memory_plans.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr


def test_a_run_on_gpus_that_cannot_fit_is_refused_before_any_weight_loads(tiny_model, tmp_path):
    from unittest import mock

    from pettingllms.trainers.at_grpo import ATGRPOTrainer

    args = args_for(tiny_model, tmp_path, "--use_cpu", "false")
    with (
        mock.patch("pettingllms.trainers.at_grpo.visible_gpus", return_value=1),
        mock.patch.object(Hardware, "visible", return_value=Hardware(1, 2**20)),
        mock.patch("pettingllms.trainers.policies.build.load_pretrained") as load,
        pytest.raises(ConfigError, match="the run does not fit: cuda:0 needs"),
    ):
        ATGRPOTrainer(args, log=lambda _: None)
    load.assert_not_called()
