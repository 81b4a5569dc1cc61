"""Every use of TRL's private `GRPOTrainer` internals, in one place (TRL is pinned to the minor version tested).

`GRPOTrainerAdapter` is TRL's `GRPOTrainer` with the private surface the update worker needs turned into named
methods. `PRIVATE_SURFACE` lists each private name and the parameters called with; `check_trl()` raises
`TRLChangedError` naming what moved, and `tests/test_trl_adapter.py` runs it, so a TRL upgrade that changes
any of them fails loudly in the tests instead of training silently wrong.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

import torch
from trl import GRPOTrainer

from pettingllms.backends.shared_prefix import cache_keyword, prefill, uses_activation_checkpointing
from pettingllms.core.errors import PettingLLMsError
from pettingllms.trainers.sharding import is_sharded

PRIVATE_SURFACE: dict[str, tuple[str, ...]] = {
    "_prepare_inputs": ("self", "generation_batch"),
    "_get_per_token_logps_and_entropies": (
        "self",
        "model",
        "input_ids",
        "attention_mask",
        "logits_to_keep",
        "batch_size",
        "compute_entropy",
        "compute_aux_loss",
    ),
}
"""Private methods of `GRPOTrainer` used or overridden here -> their leading parameters in TRL 1.16."""
PRIVATE_ATTRIBUTES = ("_metrics", "_entropy_bonus_enabled")
"""Private attributes set by `GRPOTrainer.__init__` and read here."""
LOSS_READS = ("current_gradient_accumulation_steps",)
"""Attributes TRL's `_compute_loss` reads that the update worker sets (`use_exact_accumulation`)."""


class TRLChangedError(PettingLLMsError):
    """The installed TRL no longer has the private internals this adapter uses (see the message)."""


def check_trl() -> None:
    """Raise `TRLChangedError` unless every name of `PRIVATE_SURFACE` exists with the expected parameters,
    `GRPOTrainer.__init__` still sets every attribute of `PRIVATE_ATTRIBUTES`, and TRL's loss still reads every
    attribute of `LOSS_READS`."""
    init_source = inspect.getsource(GRPOTrainer.__init__)
    for name in PRIVATE_ATTRIBUTES:
        if f"self.{name} =" not in init_source:
            raise TRLChangedError(
                f"trl.GRPOTrainer.__init__ no longer sets self.{name}; pettingllms.trainers.trl_adapter needs a port"
            )
    loss_source = inspect.getsource(GRPOTrainer._compute_loss)
    for name in LOSS_READS:
        if f"self.{name}" not in loss_source:
            raise TRLChangedError(
                f"trl.GRPOTrainer._compute_loss no longer reads self.{name}; the micro-batch weighting in "
                "pettingllms.trainers.updater needs a port"
            )
    for name, expected in PRIVATE_SURFACE.items():
        method = getattr(GRPOTrainer, name, None)
        if method is None:
            raise TRLChangedError(
                f"trl.GRPOTrainer.{name} is gone; pettingllms.trainers.trl_adapter needs a port"
            )
        found = tuple(inspect.signature(method).parameters)[: len(expected)]
        if found != expected:
            raise TRLChangedError(
                f"trl.GRPOTrainer.{name} now takes {found}, not {expected}; pettingllms.trainers.trl_adapter "
                "needs a port"
            )


@contextlib.contextmanager
def reference_model_from(model, path: str | None) -> Iterator[None]:
    """While constructing the trainer, make TRL build its KL reference model from `path` (TRL reads the private
    `model.config._name_or_path`); None leaves it at the folder `model` was loaded from."""
    origin = model.config._name_or_path
    if path is not None:
        model.config._name_or_path = path
    try:
        yield
    finally:
        model.config._name_or_path = origin


class GRPOTrainerAdapter(GRPOTrainer):
    """TRL's `GRPOTrainer`, with its private internals behind named methods (see the module docstring)."""

    def _prepare_inputs(self, generation_batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Our batches are built by the rollout (token ids, masks, advantages): only move them to the policy's
        device, `args.device` (TRL's own version samples completions here)."""
        return {key: value.to(self.args.device) for key, value in generation_batch.items()}

    @property
    def entropy_bonus_enabled(self) -> bool:
        return bool(self._entropy_bonus_enabled)

    def use_exact_accumulation(self) -> None:
        """Tell TRL one micro-batch is one step: the caller weighs micro-batches itself."""
        self.current_gradient_accumulation_steps = 1

    @contextlib.contextmanager
    def metrics_discarded(self) -> Iterator[None]:
        """Whatever TRL logs while the block runs is dropped (a weightless micro-batch's figures)."""
        logged: dict[str, Any] = self._metrics["train"]
        lengths = {key: len(values) for key, values in logged.items()}
        try:
            yield
        finally:
            for key in list(logged):
                del logged[key][lengths.get(key, 0) :]

    def drain_metrics(self) -> dict[str, float]:
        """The mean of every training metric TRL logged since the last call; the log is emptied."""
        logged: dict[str, Any] = self._metrics["train"]
        means = {key: float(sum(values) / len(values)) for key, values in logged.items() if values}
        logged.clear()
        return means

    def _get_per_token_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        compute_aux_loss=False,
        **model_inputs,
    ):
        """TRL's per-token log-probabilities (and entropies) of the last `logits_to_keep` tokens, with every prompt
        token computed once however many rows share it (`shared_prefix_logps`); TRL's own computation where
        sharing does not apply: multimodal inputs, a mixture-of-experts auxiliary loss, activation checkpointing,
        a model sharded over ranks, an empty prompt."""
        shareable = (
            not compute_aux_loss
            and all(value is None for value in model_inputs.values())
            and not uses_activation_checkpointing(model)
            and not is_sharded(
                model
            )  # its forwards are collectives: as many on every rank, one per micro-batch
            and bool(attention_mask[:, : input_ids.size(1) - logits_to_keep].any(dim=1).all())
        )
        if not shareable:
            return super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                compute_aux_loss,
                **model_inputs,
            )
        step = batch_size or input_ids.size(0)
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), step):
            with self.accelerator.autocast():
                chunk = shared_prefix_logps(
                    model,
                    input_ids[start : start + step],
                    attention_mask[start : start + step],
                    logits_to_keep,
                    pad_token_id=self.processing_class.pad_token_id,
                )
            logps.append(chunk.log_probs)
            entropies.append(chunk.entropy)
        return torch.cat(logps), torch.cat(entropies) if compute_entropy else None, None

    def per_token_logps(
        self, model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int
    ) -> torch.Tensor:
        """Per-token log-probabilities of the last `logits_to_keep` tokens under `model` (TRL's computation,
        at the trainer's temperature)."""
        logps, _ = self._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep)[
            :2
        ]
        return logps


def shared_prefix_logps(model, input_ids, attention_mask, completion_width: int, *, pad_token_id: int):
    """The output of TRL's fused log-prob head (`model(..., labels=..., fused_lm_head=True)`: `log_probs` and
    `entropy`, each (rows, completion_width), 0 on padding) for rows of prompt + completion whose prompts are
    prefilled with `shared_prefix.prefill`.

    `input_ids` / `attention_mask` are TRL's: prompts left-padded, then completions right-padded over the last
    `completion_width` columns. Every prompt but its last token goes through `prefill` (each token of the prompts'
    prefix tree once); the last prompt token and the completion then run through TRL's fused head, whose
    first position scores the first completion token. The result is TRL's own computation on each row, up to
    floating-point rounding."""
    prompt_width = input_ids.size(1) - completion_width
    prompts = [
        ids[mask.bool()].tolist()
        for ids, mask in zip(input_ids[:, :prompt_width], attention_mask[:, :prompt_width], strict=True)
    ]
    start = prefill(model, [prompt[:-1] for prompt in prompts], pad_token_id=pad_token_id)
    device = input_ids.device
    last = torch.tensor([prompt[-1] for prompt in prompts], dtype=torch.long, device=device)[:, None]
    completion_mask = attention_mask[:, prompt_width:]
    ids = torch.cat([last, input_ids[:, prompt_width:]], dim=1)
    fed = torch.cat([torch.ones_like(last), completion_mask], dim=1)
    labels = ids.masked_fill(fed == 0, -100)
    labels[:, 0] = -100  # the last prompt token is context, not a scored token
    return model(
        input_ids=ids,
        attention_mask=torch.cat([start.attention_mask, fed], dim=1),
        position_ids=start.next_positions + torch.arange(ids.size(1), device=device)[None],
        labels=labels,
        fused_lm_head=True,
        **{cache_keyword(model): start.cache},
    )
