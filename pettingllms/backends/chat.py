"""How a prompt becomes model input: one user message rendered by the tokenizer's chat template."""

from __future__ import annotations

import functools
import inspect


def chat_prompt_ids(tokenizer, prompt: str, *, enable_thinking: bool | None = None) -> list[int]:
    """The token ids of `prompt` as one user message with the generation prompt (what every backend feeds the
    model). Special-token strings inside the prompt are encoded as plain text where transformers supports it.

    `enable_thinking` (True/False) is passed to the template, which must read it (Qwen3's does); None renders
    the template's default. A template without the switch and a True/False setting is a `ValueError` naming the
    fix, rather than a setting silently ignored."""
    options = {"sanitize_control_tokens": True} if _sanitizes(type(tokenizer)) else {}
    if enable_thinking is not None:
        if not supports_thinking_switch(tokenizer):
            raise ValueError(
                f"enable_thinking={enable_thinking} but the chat template of {tokenizer.name_or_path!r} has no "
                "enable_thinking switch; leave enable_thinking unset (None) for this model"
            )
        options["enable_thinking"] = bool(enable_thinking)
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


def supports_thinking_switch(tokenizer) -> bool:
    """Whether the tokenizer's chat template reads `enable_thinking` (Qwen3's does)."""
    template = tokenizer.chat_template
    texts = template.values() if isinstance(template, dict) else [template or ""]
    return any("enable_thinking" in text for text in texts)
