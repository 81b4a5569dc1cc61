"""Activation checkpointing across the transformers versions the `train` extra accepts (5.17 and newer).

transformers 5.17 (the version vLLM 0.31 pins, so the one `pip install '.[train,vllm]'` resolves to) has
`gradient_checkpointing` / `gradient_checkpointing_kwargs` and `model.gradient_checkpointing_enable`; later 5.x
releases renamed them `activation_checkpointing*` and keep the old names as deprecated aliases. Both take the same
options (`every_n_layers`, `offload`, and keyword arguments for `torch.utils.checkpoint.checkpoint`). The update
worker turns checkpointing on itself, since transformers does so in `Trainer.train`, which never runs here.
"""

from __future__ import annotations

from typing import Any


def checkpointing_options(args) -> dict[str, Any]:
    """The checkpointing options of `args` (a `TrainingArguments`): `activation_checkpointing_kwargs` where the
    installed transformers has it, else `gradient_checkpointing_kwargs`; {} when neither is set."""
    options = getattr(args, "activation_checkpointing_kwargs", None)
    if options is None:
        options = getattr(args, "gradient_checkpointing_kwargs", None)
    return dict(options or {})


def enable_activation_checkpointing(model, options: dict[str, Any]) -> None:
    """Turn activation checkpointing on for `model` with `options` (`every_n_layers`, `offload`, and the rest
    passed to `torch.utils.checkpoint.checkpoint`), through the API the installed transformers has."""
    options = dict(options)
    every_n_layers, offload = options.pop("every_n_layers", 1), options.pop("offload", False)
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(
            activation_checkpointing_kwargs=options or None, every_n_layers=every_n_layers, offload=offload
        )
    else:
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs=options or None, every_n_layers=every_n_layers, offload=offload
        )
