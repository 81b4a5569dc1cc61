"""`grpo_loss` is TRL's GRPO loss: for every loss type, importance-sampling level and option, its loss, its gradient
and its metrics equal TRL 1.16's own `GRPOTrainer._compute_loss` on the same batch, bit for bit; and two small
batches worked out by hand (grpo and dapo) give the written-out numbers.

TRL is the oracle: its `_compute_loss` runs on a stand-in for the trainer that hands it the batch's log-probabilities
and entropies (in place of a model forward) and does the one-process accelerator's identity collectives.
"""

import math
from collections import defaultdict
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.trainers.settings.config import ATGRPOConfig  # noqa: E402
from pettingllms.trainers.update.grpo_loss import LOSS_TYPES, grpo_loss  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:`gradient_checkpointing` is deprecated:FutureWarning")


def config(tmp_path, **settings) -> GRPOConfig:
    return GRPOConfig(output_dir=str(tmp_path), bf16=False, use_cpu=True, report_to="none", **settings)


def batch(*, old: bool, seed: int = 0, per_token_advantages: bool = False) -> dict[str, torch.Tensor]:
    """Four completions of 5, 3, 1 and 0 tokens (0 on padding, as the fused head gives) whose ratios leave the
    clip range both ways; leaves that require gradients for the log-probabilities and the entropies."""
    rng = torch.Generator().manual_seed(seed)
    mask = (torch.arange(5)[None] < torch.tensor([5, 3, 1, 0])[:, None]).long()
    logps = -3 * torch.rand(4, 5, generator=rng) * mask
    shape = (4, 5) if per_token_advantages else (4,)
    out = {
        "logps": logps.requires_grad_(),
        "entropies": (4 * torch.rand(4, 5, generator=rng) * mask).requires_grad_(),
        "ref": (logps.detach() + 0.3 * torch.randn(4, 5, generator=rng)) * mask,
        "advantages": torch.randn(shape, generator=rng),
        "mask": mask,
    }
    if old:
        out["old"] = (logps.detach() + 0.5 * torch.randn(4, 5, generator=rng)) * mask
    return out


class _OneProcess:
    """What a one-process accelerator does in TRL's loss: every collective is the identity."""

    num_processes = 1
    sync_gradients = True

    def reduce(self, tensor, reduction="sum"):
        return tensor

    def gather(self, tensor):
        return tensor

    gather_for_metrics = gather

    def pad_across_processes(self, tensor, dim=0, pad_index=0):
        return tensor


def trls(settings: GRPOConfig, data: dict, num_items: float) -> tuple[torch.Tensor, dict[str, float]]:
    """TRL's `_compute_loss` on `data`, with the attributes its `__init__` derives from `settings`."""
    trainer = object.__new__(GRPOTrainer)
    vars(trainer).update(
        args=settings,
        model=SimpleNamespace(training=True),
        accelerator=_OneProcess(),
        loss_type=settings.loss_type,
        importance_sampling_level=settings.importance_sampling_level,
        epsilon_low=settings.epsilon,
        epsilon_high=settings.epsilon if settings.epsilon_high is None else settings.epsilon_high,
        beta=settings.beta,
        max_completion_length=settings.max_completion_length,
        top_entropy_quantile=settings.top_entropy_quantile,
        entropy_coef=settings.entropy_coef,
        use_adaptive_entropy=False,
        _entropy_bonus_enabled=settings.entropy_coef != 0.0,
        off_policy_mask_threshold=None,
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        aux_loss_enabled=False,
        current_gradient_accumulation_steps=1,
        _metrics={"train": defaultdict(list)},
        _get_per_token_logps_and_entropies=lambda *args, **kwargs: (data["logps"], data["entropies"], None),
    )
    rows, width = data["mask"].shape
    inputs = {
        "prompt_ids": torch.zeros(rows, 1, dtype=torch.long),
        "prompt_mask": torch.ones(rows, 1, dtype=torch.long),
        "completion_ids": torch.zeros(rows, width, dtype=torch.long),
        "completion_mask": data["mask"],
        "advantages": data["advantages"],
        "num_items_in_batch": torch.tensor(num_items),
    }
    if "old" in data:
        inputs["old_per_token_logps"] = data["old"]
    if settings.beta != 0.0:
        inputs["ref_per_token_logps"] = data["ref"]
    loss = GRPOTrainer._compute_loss(trainer, None, inputs)
    return loss, {key: values[0] for key, values in trainer._metrics["train"].items()}


def ours(settings: GRPOConfig, data: dict, num_items: float) -> tuple[torch.Tensor, dict[str, float]]:
    return grpo_loss(
        data["logps"],
        data.get("old"),
        data["ref"] if settings.beta != 0.0 else None,
        data["advantages"],
        data["mask"],
        settings,
        num_items_in_batch=torch.tensor(num_items),
        entropies=data["entropies"],
    )


def assert_same_as_trl(settings: GRPOConfig, data: dict, num_items: float | None = None) -> dict[str, float]:
    """Loss, gradients (log-probabilities, entropies) and metrics equal bit for bit; returns the metrics."""
    num_items = float(data["mask"].sum()) if num_items is None else num_items
    results = []
    for compute in (trls, ours):
        for leaf in (data["logps"], data["entropies"]):
            leaf.grad = None
        loss, metrics = compute(settings, data, num_items)
        loss.backward()
        results.append((loss.detach(), data["logps"].grad.clone(), _grad(data["entropies"]), metrics))
    (want_loss, want_grad, want_entropy_grad, want), (loss, grad, entropy_grad, got) = results
    assert torch.equal(loss, want_loss), (loss.item(), want_loss.item())
    assert torch.equal(grad, want_grad), (grad - want_grad).abs().max()
    assert torch.equal(entropy_grad, want_entropy_grad)
    assert got.keys() == want.keys()
    assert all(got[key] == want[key] or math.isnan(got[key]) and math.isnan(want[key]) for key in want), (
        got,
        want,
    )
    return got


def _grad(leaf: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(leaf) if leaf.grad is None else leaf.grad.clone()


@pytest.mark.parametrize("old", [False, True], ids=["on_policy", "old_logps"])
@pytest.mark.parametrize("beta", [0.0, 0.04])
@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_every_loss_type_is_trls(tmp_path, loss_type, level, beta, old):
    settings = config(tmp_path, loss_type=loss_type, importance_sampling_level=level, beta=beta)
    metrics = assert_same_as_trl(settings, batch(old=old))
    assert ("kl" in metrics) == (beta != 0.0) and "entropy" in metrics


@pytest.mark.parametrize(
    "settings",
    [
        {"loss_type": "grpo", "delta": 1.5},
        {"loss_type": "dapo", "delta": 1.5, "epsilon_high": 0.28},
        {"loss_type": "luspo", "importance_sampling_level": "sequence", "delta": 1.1},
        {"loss_type": "cispo", "epsilon_high": 1.2},
        {"loss_type": "sapo", "sapo_temperature_pos": 2.0, "sapo_temperature_neg": 0.5},
        {"loss_type": "vespo", "vespo_k_pos": 1.5, "vespo_lambda_neg": 1.0},
        {"loss_type": "grpo", "beta": 0.1, "use_bias_correction_kl": True},
        {
            "loss_type": "dr_grpo",
            "beta": 0.1,
            "use_bias_correction_kl": True,
            "importance_sampling_level": "sequence",
        },
        {"loss_type": "dapo", "top_entropy_quantile": 0.4},
        {"loss_type": "bnpo", "entropy_coef": 0.05},
        {"loss_type": "dapo", "entropy_coef": 0.05, "top_entropy_quantile": 0.5, "beta": 0.02},
        {"loss_type": "grpo", "entropy_coef": 0.05, "top_entropy_quantile": 0.0},
        {"loss_type": "dr_grpo", "max_completion_length": 7},
    ],
    ids=lambda settings: "-".join(f"{key}={value}" for key, value in settings.items()),
)
def test_every_option_is_trls(tmp_path, settings):
    data = batch(old=True, seed=1)
    metrics = assert_same_as_trl(config(tmp_path, **settings), data)
    if "delta" in settings:  # the batch reaches the two-sided bound
        tokens = float(data["mask"].sum())
        without = ours(config(tmp_path, **{**settings, "delta": None}), data, tokens)[0]
        assert ours(config(tmp_path, **settings), data, tokens)[0] != without
    if settings["loss_type"] == "cispo":
        assert metrics["cispo_clip_ratio"] > 0


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "cispo", "vespo"])
def test_per_token_advantages_are_trls(tmp_path, loss_type):
    assert_same_as_trl(
        config(tmp_path, loss_type=loss_type), batch(old=True, seed=2, per_token_advantages=True)
    )


@pytest.mark.parametrize("loss_type", ["dapo", "cispo", "vespo"])
def test_the_token_sum_losses_divide_by_num_items_in_batch(tmp_path, loss_type):
    """A micro-batch of a larger batch divides by the batch's tokens (here 3x this micro-batch's)."""
    data = batch(old=True, seed=3)
    assert_same_as_trl(config(tmp_path, loss_type=loss_type), data, num_items=3 * float(data["mask"].sum()))


def hand_batch() -> dict[str, torch.Tensor]:
    """Two completions (2 tokens, 1 token) with advantages +1 and -2. Token ratios: e^0.5 = 1.6487 (above
    1 + 0.2 with A > 0: clipped, s = -1.2, no gradient), 1 (s = -1), e^-0.1 = 0.904837 (inside the clip range:
    s = 2 · 0.904837 = 1.809675). The gradient of s = -A ρ through ℓ is -A ρ."""
    return {
        "logps": torch.tensor([[-1.0, -2.0], [-0.5, 0.0]], requires_grad=True),
        "old": torch.tensor([[-1.5, -2.0], [-0.4, 0.0]]),
        "advantages": torch.tensor([1.0, -2.0]),
        "mask": torch.tensor([[1, 1], [1, 0]]),
    }


def test_grpo_by_hand(tmp_path):
    """grpo: each sequence's mean, then the mean over sequences: ((-1.2 - 1) / 2 + 1.809675) / 2."""
    data = hand_batch()
    loss, metrics = grpo_loss(
        data["logps"], data["old"], None, data["advantages"], data["mask"], config(tmp_path, loss_type="grpo")
    )
    loss.backward()
    torch.testing.assert_close(loss, torch.tensor(0.3548374))
    torch.testing.assert_close(data["logps"].grad, torch.tensor([[0.0, -0.25], [1.809675 / 2, 0.0]]))
    assert metrics["clip_ratio/high_mean"] == pytest.approx(1 / 3) and metrics["clip_ratio/low_mean"] == 0.0
    assert metrics["clip_ratio/high_max"] == pytest.approx(0.5) and metrics["clip_ratio/low_min"] == 0.0


def test_dapo_by_hand(tmp_path):
    """dapo: the sum over the batch's tokens divided by their count, here num_items_in_batch = 3:
    (-1.2 - 1 + 1.809675) / 3."""
    data = hand_batch()
    loss, _ = grpo_loss(
        data["logps"],
        data["old"],
        None,
        data["advantages"],
        data["mask"],
        config(tmp_path, loss_type="dapo"),
        num_items_in_batch=3,
    )
    loss.backward()
    torch.testing.assert_close(loss, torch.tensor(-0.1301084))
    torch.testing.assert_close(data["logps"].grad, torch.tensor([[0.0, -1 / 3], [1.809675 / 3, 0.0]]))


def test_without_old_log_probabilities_the_ratio_is_one_and_the_gradient_the_policy_gradient(tmp_path):
    """ℓ_old = ℓ detached: dapo's loss is -Σ A m / N and its gradient -A m / N."""
    data = hand_batch()
    loss, _ = grpo_loss(
        data["logps"], None, None, data["advantages"], data["mask"], config(tmp_path, loss_type="dapo")
    )
    loss.backward()
    torch.testing.assert_close(loss, torch.tensor((-1.0 - 1.0 + 2.0) / 3))
    torch.testing.assert_close(data["logps"].grad, torch.tensor([[-1 / 3, -1 / 3], [2 / 3, 0.0]]))


def test_a_setting_without_its_tensor_is_refused(tmp_path):
    data = hand_batch()
    with pytest.raises(ValueError, match="beta needs its tensor"):
        grpo_loss(data["logps"], None, None, data["advantages"], data["mask"], config(tmp_path, beta=0.1))
    with pytest.raises(ValueError, match="entropy_coef needs its tensor"):
        grpo_loss(
            data["logps"], None, None, data["advantages"], data["mask"], config(tmp_path, entropy_coef=0.1)
        )


@pytest.mark.parametrize(
    ("field", "value"), [("loss_type", "ppo"), ("importance_sampling_level", "sentence")]
)
def test_the_config_refuses_what_the_loss_does_not_offer(tmp_path, field, value):
    with pytest.raises(ConfigError, match=f"{field}='{value}' is not supported; allowed values"):
        ATGRPOConfig(output_dir=str(tmp_path), use_cpu=True, **{field: value})
