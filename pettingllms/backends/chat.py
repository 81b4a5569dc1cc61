"""How a prompt becomes model input: one user message rendered by the tokenizer's chat template."""

from __future__ import annotations

import functools
import inspect


def chat_prompt_ids(tokenizer, prompt: str) -> list[int]:
    """The token ids of `prompt` as one user message with the generation prompt (what every backend feeds the
    model). Special-token strings inside the prompt are encoded as plain text where transformers supports it."""
    options = {"sanitize_control_tokens": True} if _sanitizes(type(tokenizer)) else {}
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": str(prompt)}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=False,
        **options,
    )
    return [int(token) for token in ids]


@functools.cache
def _sanitizes(tokenizer_class: type) -> bool:
    return "sanitize_control_tokens" in inspect.signature(tokenizer_class.apply_chat_template).parameters
