"""The GRPO loss family of the update, written from its formulas: `grpo_loss(...) -> (loss, metrics)`.

One call is one micro-batch: the completions' per-token log-probabilities under the trained weights (with their
gradient), under the weights that sampled them and under the KL reference, each row's advantage and the completion
mask. The settings are read from a TRL `GRPOConfig` (an `ATGRPOConfig`) by their TRL names, and every loss type,
option and metric is TRL 1.16's `GRPOTrainer` loss for the same batch: `tests/test_grpo_loss.py` checks the loss,
its gradient and the metrics against TRL's own computation. Pure torch: no trainer, no model, no process group
(`gather` brings the other ranks' figures where a caller has several).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")
"""Every `loss_type` the update offers (TRL 1.16's set)."""
SEQUENCE_MEAN_LOSSES = ("grpo", "sapo", "dr_grpo", "luspo")
"""The loss types that weigh every sequence alike (each sequence's tokens summed or averaged, then a mean over the
sequences); the others (bnpo, dapo, cispo, vespo) weigh every token alike."""
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")
"""`importance_sampling_level`: one ratio per token, or one per sequence (the exponent of its mean log-ratio)."""
CLIPPED_LOSSES = ("grpo", "dr_grpo", "dapo", "bnpo", "luspo")
"""The loss types whose surrogate is PPO's clipped one."""

Gather = Callable[[torch.Tensor], torch.Tensor]
"""Concatenates a 1-D tensor over the data-parallel ranks, shorter ones padded with NaN."""


# long function: its docstring writes out the whole objective (the body is ~30 lines)
def grpo_loss(
    per_token_logps: torch.Tensor,
    old_per_token_logps: torch.Tensor | None,
    ref_per_token_logps: torch.Tensor | None,
    advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    config: Any,
    *,
    num_items_in_batch: torch.Tensor | float | None = None,
    entropies: torch.Tensor | None = None,
    gather: Gather | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    r"""The loss of one micro-batch of B completions padded to T tokens, and its metrics.

    Tensors are (B, T) except `advantages`, (B,) or (B, T). With m the completion mask, ℓ = log π_θ (the
    gradient flows through it only), ℓ_old = `old_per_token_logps` (absent: ℓ detached, a ratio of 1 whose
    gradient is that of ℓ) and A_i the advantages:

        ratio     ρ_it = exp(ℓ_it - ℓ_old_it)                                  importance_sampling_level="token"
                  ρ_i  = exp(Σ_t m_it (ℓ_it - ℓ_old_it) / max(1, Σ_t m_it))      "sequence"
        surrogate s_it = -min(ρ' A_i, clip(ρ, 1-ε, 1+ε_h) A_i),  ρ' = min(ρ, δ)     grpo dr_grpo dapo bnpo luspo
                  s_it = -sg[min(ρ, ε_h)] A_i ℓ_it                                   cispo
                  s_it = -(4/τ_i) sigmoid(τ_i (ρ - 1)) A_i,  τ_i = τ+ if A_i > 0 else τ-   sapo
                  s_it = -sg[φ_i] A_i ℓ_it,  φ_i = exp(λ + k log w_i - λ w_i)            vespo
        where w_i = exp(Σ_t m_it clamp(ℓ_it - ℓ_old_it, ±20)) within [1e-8, e^20] and (k, λ) = (k+, λ+) if
        A_i >= 0 else (k-, λ-); ε = `epsilon`, ε_h = `epsilon_high` (default ε), δ = `delta` (None: ρ' = ρ),
        τ± = `sapo_temperature_pos/neg`, k±, λ± = `vespo_k_pos/neg`, `vespo_lambda_pos/neg`, sg = no gradient.
        focus     s_it ← s_it · [H_it >= q]: q the (1 - `top_entropy_quantile`) quantile of the entropies H on
                  m (over every rank), when `top_entropy_quantile` < 1
        KL        s_it ← s_it + β (exp(r_it) - r_it - 1),  r = ℓ_ref - ℓ (k3; times ρ with
                  `use_bias_correction_kl`), β = `beta`, ℓ_ref = `ref_per_token_logps` (needed when β != 0)
        loss      L = (1/B) Σ_i Σ_t m_it s_it / max(1, Σ_t m_it)        grpo, sapo
                  L = (1/B) Σ_i Σ_t m_it s_it                           luspo
                  L = Σ_it m_it s_it / (B · `max_completion_length`)    dr_grpo
                  L = Σ_it m_it s_it / max(1, Σ_it m_it)                bnpo
                  L = Σ_it m_it s_it / max(1, N)                        dapo, cispo, vespo
                  L ← L - c Σ_it m'_it H_it / max(1, Σ_it m'_it)        c = `entropy_coef` != 0; m' = m (· focus)

    N = `num_items_in_batch`, the tokens the token-sum losses divide by (default: this batch's, Σ m). `entropies`
    H (the policy's per-token entropies) are needed by `top_entropy_quantile` and `entropy_coef` and give the
    `entropy` metric. The metrics are TRL's: means over the completion tokens (over the sequences for a (B, 1)
    quantity) of `kl`, `entropy` and the clipped shares (`clip_ratio/...`, `cispo_clip_ratio`), `vespo/phi_seq_mean`,
    and with an entropy bonus `policy_loss` (L before it) and `entropy_coef`; over every rank when `gather`
    concatenates the ranks' values (default: this process's).
    """
    gather = gather or (lambda values: values)
    mask = completion_mask
    advantages = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
    old = per_token_logps.detach() if old_per_token_logps is None else old_per_token_logps
    log_ratio = per_token_logps - old
    ratio = torch.exp(_log_weights(log_ratio, mask, config.importance_sampling_level))
    kl = None  # before the surrogate, as in TRL: the gradient then sums its terms in TRL's order, bit for bit
    if config.beta != 0.0:
        kl = _k3(per_token_logps, _required(ref_per_token_logps, "beta"))
        kl = kl * ratio if config.use_bias_correction_kl else kl
    per_token, shares = _surrogate(config, ratio, advantages, per_token_logps, log_ratio, mask)
    focus = None
    if config.top_entropy_quantile < 1.0:
        focus = _high_entropy_mask(_required(entropies, "top_entropy_quantile"), mask, config, gather)
        per_token = per_token * focus
    metrics = {}
    if kl is not None:
        per_token = per_token + config.beta * kl
        metrics["kl"] = _mean(kl, mask, gather)
    loss = _aggregate(per_token, mask, config, num_items_in_batch)
    if config.entropy_coef != 0.0:
        metrics["policy_loss"] = gather(loss.detach()[None]).nanmean().item()
        loss = loss - config.entropy_coef * _entropy_bonus(_required(entropies, "entropy_coef"), mask, focus)
        metrics["entropy_coef"] = config.entropy_coef
    if entropies is not None:
        metrics["entropy"] = _mean(entropies, mask, gather)
    metrics.update({name: _mean(values.float(), mask, gather) for name, values in shares.items()})
    if config.loss_type in CLIPPED_LOSSES:  # the least low-clipped and the most high-clipped sequence
        metrics["clip_ratio/low_min"] = _extreme(shares["clip_ratio/low_mean"], mask, gather, torch.min)
        metrics["clip_ratio/high_max"] = _extreme(shares["clip_ratio/high_mean"], mask, gather, torch.max)
    return loss, metrics


def _required(tensor: torch.Tensor | None, setting: str) -> torch.Tensor:
    if tensor is None:
        raise ValueError(f"{setting} needs its tensor: pass it to grpo_loss")
    return tensor


def _log_weights(log_ratio: torch.Tensor, mask: torch.Tensor, level: str) -> torch.Tensor:
    """log ρ: per token (B, T), or per sequence (B, 1), the mean log-ratio over its completion tokens."""
    if level == "token":
        return log_ratio
    if level == "sequence":
        return ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
    raise ValueError(
        f"importance_sampling_level={level!r}; allowed values: {list(IMPORTANCE_SAMPLING_LEVELS)}"
    )


def _surrogate(
    config, ratio, advantages, logps, log_ratio, mask
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """s (B, T) or (B, 1), and the quantities the metrics report for this loss type (0/1 flags, vespo's φ)."""
    kind = config.loss_type
    high = config.epsilon if config.epsilon_high is None else config.epsilon_high
    if kind in CLIPPED_LOSSES:
        low = config.epsilon
        clipped = torch.clamp(ratio, 1 - low, 1 + high)
        if config.delta is not None:
            ratio = torch.clamp(ratio, max=config.delta)
        below, above = (ratio < 1 - low) & (advantages < 0), (ratio > 1 + high) & (advantages > 0)
        shares = {
            "clip_ratio/low_mean": below,
            "clip_ratio/high_mean": above,
            "clip_ratio/region_mean": below | above,
        }
        return -torch.min(ratio * advantages, clipped * advantages), shares
    if kind == "cispo":
        capped = torch.clamp(ratio, max=high).detach()
        return -capped * advantages * logps, {"cispo_clip_ratio": (ratio > high) & (advantages > 0)}
    if kind == "sapo":
        temperature = torch.where(advantages > 0, config.sapo_temperature_pos, config.sapo_temperature_neg)
        return -(torch.sigmoid(temperature * (ratio - 1)) * 4 / temperature) * advantages, {}
    if kind == "vespo":
        phi = _gamma_weights(config, advantages, log_ratio, mask)
        return -phi * advantages * logps, {"vespo/phi_seq_mean": phi}
    raise ValueError(f"loss_type={kind!r}; allowed values: {list(LOSS_TYPES)}")


@torch.no_grad()
def _gamma_weights(config, advantages, log_ratio, mask) -> torch.Tensor:
    """VESPO's φ(w) = exp(λ + k log w - λ w) of each sequence's ratio w (B, 1), computed in log space."""
    floor = math.log(1e-8)
    log_w = torch.sum(torch.clamp(log_ratio, -20.0, 20.0) * mask, dim=-1, keepdim=True).clamp(floor, 20.0)
    positive = advantages >= 0
    k = torch.where(positive, config.vespo_k_pos, config.vespo_k_neg)
    lam = torch.where(positive, config.vespo_lambda_pos, config.vespo_lambda_neg).clamp(min=1e-4)
    return torch.exp(lam + k * log_w - lam * torch.exp(log_w)).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)


def _k3(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(π_θ || π_ref) per token: exp(r) - r - 1 with r = log π_ref - log π_θ."""
    return torch.exp(ref_logps - logps) - (ref_logps - logps) - 1


def _high_entropy_mask(entropies, mask, config, gather: Gather) -> torch.Tensor:
    """The completion tokens whose entropy is at least the (1 - top_entropy_quantile) quantile of all of them."""
    every = gather(entropies[mask.bool()].float())
    every = every[~torch.isnan(every)]
    if every.numel() == 0:
        return torch.zeros_like(entropies, dtype=torch.bool)
    threshold = torch.quantile(every, 1 - config.top_entropy_quantile)
    return ((entropies * mask.float()) >= threshold) & mask.bool()


def _aggregate(per_token, mask, config, num_items) -> torch.Tensor:
    """L from s: the normalisation of `config.loss_type` (see `grpo_loss`)."""
    kind, masked = config.loss_type, per_token * mask
    if kind in ("grpo", "sapo"):
        return (masked.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if kind == "luspo":
        return masked.sum(-1).mean()
    if kind == "dr_grpo":
        return masked.sum() / (per_token.size(0) * config.max_completion_length)
    if kind == "bnpo":
        return masked.sum() / mask.sum().clamp(min=1.0)
    items = mask.sum() if num_items is None else torch.as_tensor(num_items, device=masked.device)
    return masked.sum() / items.clamp(min=1.0)


def _entropy_bonus(entropies, mask, focus) -> torch.Tensor:
    """The mean entropy of the tokens the loss acts on."""
    acting = mask if focus is None else mask * focus
    return (entropies * acting).sum() / acting.sum().clamp(min=1.0)


def _mean(values: torch.Tensor, mask: torch.Tensor, gather: Gather) -> float:
    """The mean of `values` over the completion tokens, or over the sequences when it is (B, 1), on every rank."""
    if values.shape == mask.shape:
        local = torch.stack([(values * mask).sum(), mask.sum().float()])
    else:
        local = torch.stack([values.sum(), torch.tensor(float(values.size(0)), device=values.device)])
    total = gather(local).view(-1, 2).sum(0)
    return (total[0] / total[1].clamp(min=1.0)).item()


def _extreme(flags: torch.Tensor, mask: torch.Tensor, gather: Gather, pick) -> float:
    """`pick` (min or max) of the sequences' shares of flagged tokens, on every rank; sequences without tokens
    are left out (NaN when none is left)."""
    shares = gather(_sequence_means(flags.float(), mask))
    shares = shares[~torch.isnan(shares)]
    return pick(shares).item() if shares.numel() else math.nan


def _sequence_means(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each sequence's mean over its completion tokens (NaN for an empty one), or `values` itself when (B, 1)."""
    if values.shape == mask.shape:
        return (values * mask).sum(-1) / mask.sum(-1)
    return values.squeeze(1)
