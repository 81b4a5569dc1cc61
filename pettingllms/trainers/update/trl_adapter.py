"""Every use of TRL's private `GRPOTrainer` internals, in one place (TRL is pinned to the minor version tested).

The update worker (`updater.PolicyUpdater`) uses TRL's `GRPOTrainer` for the model, its optimizer and scheduler,
accelerate and PEFT, through their public API; the loss is ours (`grpo_loss`). What is left private is the trainer
step's plumbing: TRL's `_prepare_inputs`, which samples completions, is replaced by a move to the device (the
rollout has built the batch), the metrics are logged in TRL's `_metrics`, beside the `step_time` TRL's
`training_step` records there, and TRL builds the KL reference from the model's private `config._name_or_path`
(`reference_model_from`). `GRPOTrainerAdapter` turns these into named methods. `PRIVATE_SURFACE` lists each
private method and the parameters it is called with, `PRIVATE_ATTRIBUTES` each private attribute; `check_trl()`
raises `TRLChangedError` naming what moved, and `tests/test_trl_adapter.py` runs it, so a TRL upgrade that changes
any of them fails loudly in the tests instead of training silently wrong.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

import torch
from trl import GRPOTrainer

from pettingllms.core.errors import PettingLLMsError

PRIVATE_SURFACE: dict[str, tuple[str, ...]] = {"_prepare_inputs": ("self", "generation_batch")}
"""Private methods of `GRPOTrainer` overridden here -> their leading parameters in TRL 1.16."""
PRIVATE_ATTRIBUTES = ("_metrics",)
"""Private attributes set by `GRPOTrainer.__init__` and used here."""


class TRLChangedError(PettingLLMsError):
    """The installed TRL no longer has the private internals this adapter uses (see the message)."""


def check_trl() -> None:
    """Raise `TRLChangedError` unless every name of `PRIVATE_SURFACE` exists with the expected parameters and
    `GRPOTrainer.__init__` still sets every attribute of `PRIVATE_ATTRIBUTES`."""
    init_source = inspect.getsource(GRPOTrainer.__init__)
    for name in PRIVATE_ATTRIBUTES:
        if f"self.{name} =" not in init_source:
            raise TRLChangedError(
                f"trl.GRPOTrainer.__init__ no longer sets self.{name}; pettingllms.trainers.update.trl_adapter needs a port"
            )
    for name, expected in PRIVATE_SURFACE.items():
        method = getattr(GRPOTrainer, name, None)
        if method is None:
            raise TRLChangedError(
                f"trl.GRPOTrainer.{name} is gone; pettingllms.trainers.update.trl_adapter needs a port"
            )
        found = tuple(inspect.signature(method).parameters)[: len(expected)]
        if found != expected:
            raise TRLChangedError(
                f"trl.GRPOTrainer.{name} now takes {found}, not {expected}; pettingllms.trainers.update.trl_adapter "
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

    def _prepare_inputs(self, generation_batch: dict[str, Any]) -> dict[str, Any]:
        """Our batches are built by the rollout (token ids, masks, advantages, and plain numbers such as a
        micro-batch's weight): only move their tensors to the policy's device, `args.device` (TRL's own version
        samples completions here)."""
        return {
            key: value.to(self.args.device) if isinstance(value, torch.Tensor) else value
            for key, value in generation_batch.items()
        }

    def use_exact_accumulation(self) -> None:
        """Tell the trainer one micro-batch is one step (TRL's `training_step` records each one's `step_time`): the
        caller weighs micro-batches itself."""
        self.current_gradient_accumulation_steps = 1

    def record_metrics(self, metrics: dict[str, float]) -> None:
        """Add one micro-batch's figures to the training log (`drain_metrics` averages them)."""
        logged: dict[str, Any] = self._metrics["train"]
        for key, value in metrics.items():
            logged[key].append(value)

    @contextlib.contextmanager
    def metrics_discarded(self) -> Iterator[None]:
        """Whatever is logged while the block runs is dropped (a weightless micro-batch's figures)."""
        logged: dict[str, Any] = self._metrics["train"]
        lengths = {key: len(values) for key, values in logged.items()}
        try:
            yield
        finally:
            for key in list(logged):
                del logged[key][lengths.get(key, 0) :]

    def drain_metrics(self) -> dict[str, float]:
        """The mean of every training metric logged since the last call; the log is emptied."""
        logged: dict[str, Any] = self._metrics["train"]
        means = {key: float(sum(values) / len(values)) for key, values in logged.items() if values}
        logged.clear()
        return means
