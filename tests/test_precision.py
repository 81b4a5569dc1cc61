"""Mixed precision keeps float32 master weights: with `bf16` an update at the paper's learning rate (1e-6) moves
the weights a checkpoint holds as far as a float32 run's do. In pure bfloat16 an AdamW step of about lr per
element rounds away on almost every weight above ~2^-11 in magnitude, so a bf16-weight run never learns.

Also pinned: the optimizer states are float32, generation samples from a bfloat16 copy of the weights, and the
copy equals the master weights (rounded) after every update."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import args_for  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from pettingllms.runs.layout import RunLayout  # noqa: E402
from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")


def test_pure_bf16_weights_lose_an_adamw_step_at_lr_1e6():
    """The failure this module guards against, shown on its own: 20 AdamW steps at lr 1e-6 on a bfloat16
    512x512 matrix of N(0, 0.02) change a few percent of its elements; on float32 masters every element moves."""
    generator = torch.Generator().manual_seed(0)
    start = torch.randn(512, 512, generator=generator) * 0.02
    moved = {}
    for dtype in (torch.bfloat16, torch.float32):
        weight = torch.nn.Parameter(start.to(dtype).clone())
        optimizer = torch.optim.AdamW([weight], lr=1e-6, weight_decay=0.0)
        for _ in range(20):
            weight.grad = torch.randn(512, 512, generator=generator).to(dtype)
            optimizer.step()
        moved[dtype] = (weight.detach() != start.to(dtype)).float().mean().item()
    assert moved[torch.bfloat16] < 0.1 and moved[torch.float32] > 0.99


def trained(tiny_model, tmp_path, bf16: str) -> tuple[ATGRPOTrainer, dict[str, dict[str, torch.Tensor]]]:
    """A 1-step letters run at lr 1e-6; the starting weights and the step-1 checkpoint's, per policy."""
    flags = ("--max_steps", "1", "--learning_rate", "1e-6", "--bf16", bf16, "--use_cpu", "true")
    trainer = ATGRPOTrainer(args_for(tiny_model, tmp_path, *flags), log=lambda _: None)
    trainer.train()
    saved = RunLayout(tmp_path).checkpoint(1)
    start = load_file(f"{tiny_model}/model.safetensors")
    deltas = {}
    for name in trainer.policies.handles:
        weights = load_file(str(saved.model(name) / "model.safetensors"))
        deltas[name] = {
            key: weights[key].float() - start[key].to(weights[key].dtype).float() for key in weights
        }
    return trainer, deltas


def moved_share_and_size(deltas: dict[str, torch.Tensor]) -> tuple[float, float]:
    values = torch.cat([delta.flatten() for delta in deltas.values()])
    return (values != 0).float().mean().item(), values.abs().mean().item()


def test_a_bf16_run_at_lr_1e6_moves_its_checkpoint_as_far_as_a_float32_run(tiny_model, tmp_path):
    full, full_deltas = trained(tiny_model, tmp_path / "fp32", "false")
    mixed, mixed_deltas = trained(tiny_model, tmp_path / "bf16", "true")
    for name in ("tool", "plan"):
        full_share, full_size = moved_share_and_size(full_deltas[name])
        mixed_share, mixed_size = moved_share_and_size(mixed_deltas[name])
        assert full_share > 0.5, f"{name}: the float32 run moved only {full_share:.1%} of its weights"
        assert mixed_share >= 0.9 * full_share, (name, mixed_share, full_share)
        assert 0.5 < mixed_size / full_size < 2.0, (name, mixed_size, full_size)
    for name, handle in mixed.policies.handles.items():
        master = handle.updater.model
        assert all(p.dtype == torch.float32 for p in master.parameters()), name
        states = [
            v for state in handle.updater.optimizer.state.values() for v in state.values() if v.numel() > 1
        ]
        assert states and all(v.dtype == torch.float32 for v in states), name
        copy = handle.backend.model
        assert copy is not master and all(p.dtype == torch.bfloat16 for p in copy.parameters()), name
        own = copy.state_dict()
        for key, value in master.state_dict().items():
            assert torch.equal(own[key], value.to(torch.bfloat16)), (name, key)
    assert all(handle.backend.model is handle.updater.model for handle in full.policies.handles.values())
