"""A byte-level BPE tokenizer trained locally on a corpus, with a ChatML chat template.

`train_tokenizer(corpus, vocab_size)` returns a `transformers.PreTrainedTokenizerFast` that:

- encodes any text losslessly (byte-level: every byte has a token; `decode(encode(text)) == text`);
- pre-splits text so that each digit, each one-letter word (a move such as `U` or ` R`, the goal `G`), each of
  the grid symbols `.`, `#`, `@` and each newline is its own pre-token, while everything else — runs of longer
  words, spaces and other punctuation, up to the end of a line — may merge into one token. Grid cells and moves
  therefore become one token each, which a tiny model learns far more easily than merged runs such as `....`,
  and the environments' fixed instructions compress to a few phrase-long tokens (plan-path prompts shrink from
  ~300 tokens under GPT-2's split to ~140);
- has the special tokens `<|endoftext|>` (id 0, the pad token), `<|im_start|>` (1) and `<|im_end|>` (2, the end of
  a turn and the eos token), no BOS token and no added tokens on `encode`;
- pads on the left (for batched generation) and carries a ChatML chat template like Qwen's without a default
  system prompt. Its assistant turns are wrapped in `{% generation %}` markers that cover the content and the
  closing `<|im_end|>`, so TRL's `assistant_only_loss` trains exactly the tokens a policy generates.

Training is deterministic: the same corpus (same texts, same order) and `vocab_size` give the same tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

PAD_TOKEN = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (PAD_TOKEN, IM_START, IM_END)
MODEL_MAX_LENGTH = 2048

# Alternatives, first match wins: newlines; grid symbols; digits; one-letter words; any other run of longer words,
# spaces (not newlines) and punctuation (not grid symbols).
SPLIT_PATTERN = r"""[\r\n]+| ?[.#@]| ?\p{N}| ?\p{L}(?!\p{L})|(?:\p{L}{2,}|[^\S\r\n]|[^\s\p{L}\p{N}.#@])+"""

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def train_tokenizer(corpus: Iterable[str], vocab_size: int = 2048) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer on `corpus` (see the module docstring for what it guarantees).

    Args:
        corpus: the training texts, iterated once.
        vocab_size: the largest vocabulary, special tokens and the 256 byte tokens included. A small corpus can
            yield fewer tokens (merges stop when no pair occurs at least twice); use `len(tokenizer)` for the
            model's vocabulary size.
    """
    if vocab_size < 256 + len(SPECIAL_TOKENS):
        raise ValueError(
            f"vocab_size={vocab_size} must be at least {256 + len(SPECIAL_TOKENS)} (bytes + specials)"
        )
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(corpus, trainer=trainer)
    return wrap_tokenizer(backend)


def wrap_tokenizer(backend: Tokenizer) -> PreTrainedTokenizerFast:
    """Wrap a trained `tokenizers.Tokenizer` holding `SPECIAL_TOKENS` as this module's `PreTrainedTokenizerFast`."""
    missing = [token for token in SPECIAL_TOKENS if backend.token_to_id(token) is None]
    if missing:
        raise ValueError(f"the tokenizer lacks the special tokens {missing}")
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=IM_END,
        pad_token=PAD_TOKEN,
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
        model_max_length=MODEL_MAX_LENGTH,
        clean_up_tokenization_spaces=False,
        extra_special_tokens=[IM_START],
    )
