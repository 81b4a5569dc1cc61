"""One policy sharded over the ranks with PyTorch's FSDP2 (`torch.distributed.fsdp.fully_shard`).

Under a launcher (`pettingllms.parallel.world`), each policy's decoder layers and then the whole model are
`fully_shard`ed: parameters, gradients and optimizer states are split over the ranks, so a policy whose training
state is larger than one GPU trains on several. Gradients are summed over the ranks, not averaged: each rank
weighs its micro-batches by the whole batch's totals (`PolicyUpdater.accumulate_gradients`), so the sum is the
one-process gradient.

Generation needs every weight on every rank, and each rank's rollout calls the model a different number of times:
`full_weights(model)` gathers every shard once (the same collectives on every rank) and keeps the model gathered,
with no collective in its forward, until the block ends. Checkpoints hold the full state (`full_model_state`,
`full_optimizer_state`), written by rank 0, so a checkpoint is one set of files whatever the number of ranks; a
rank's generation copy or vLLM engine receives the weights one gathered parameter at a time
(`pettingllms.backends.weights.model_stream`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


def shard_model(model) -> None:
    """`fully_shard` every decoder layer of `model` (a transformers causal LM), then the model, in place."""
    from torch.distributed.fsdp import fully_shard

    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None:
        raise ValueError(
            f"{type(model).__name__} has no model.layers: FSDP2 sharding here wraps decoder layers"
        )
    for layer in layers:
        fully_shard(layer)
    fully_shard(model)
    for module in _sharded_modules(model):
        module.set_gradient_divide_factor(1.0)
        module.set_force_sum_reduction_for_comms(True)  # a plain sum: gloo has no pre-multiplied sum


def is_sharded(model) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def _sharded_modules(model) -> list:
    from torch.distributed.fsdp import FSDPModule

    return [module for module in model.modules() if isinstance(module, FSDPModule)]


@contextlib.contextmanager
def full_weights(model) -> Iterator[None]:
    """While the block runs, every weight of a sharded `model` is gathered on this rank and its forward makes
    no collective call (see the module docstring); an unsharded model is left alone."""
    if not is_sharded(model):
        yield
        return
    modules = _sharded_modules(model)
    for module in modules:
        module.set_reshard_after_forward(False, recurse=False)
        module.unshard()
    try:
        yield
    finally:
        for module in modules:
            module.reshard()
            module.set_reshard_after_forward(True, recurse=False)


def _full_options():
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=True, cpu_offload=True)


def full_model_state(model) -> dict[str, Any]:
    """The full weights of a sharded `model`, on the CPU of rank 0 (empty on the others); every rank calls it."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    return get_model_state_dict(model, options=_full_options())


def full_optimizer_state(model, optimizer) -> dict[str, Any]:
    """The full state of `optimizer` (keyed by parameter names), on the CPU of rank 0; every rank calls it."""
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    return get_optimizer_state_dict(model, optimizer, options=_full_options())


def load_full_optimizer_state(model, optimizer, state: dict[str, Any]) -> None:
    """Give every rank its shard of a full optimizer state (as `full_optimizer_state` returns it)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    set_optimizer_state_dict(
        model, optimizer, optim_state_dict=state, options=StateDictOptions(full_state_dict=True)
    )
