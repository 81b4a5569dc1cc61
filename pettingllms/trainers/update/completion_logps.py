"""Per-token log-probabilities and entropies of completions, through TRL's fused log-prob head.

TRL's `GRPOTrainer` gives the trained model (and its KL reference) a fused head (`trl.trainer.add_fused_lm_head`, at
the policy's temperature): `model(..., labels=labels, fused_lm_head=True)` returns `log_probs` and `entropy` of the
labelled tokens without materialising the logits. `completion_logps` calls it as TRL's own loss does, except that
rows sharing a prompt prefix compute its tokens once (`shared_prefix_logps`) where that applies.
"""

from __future__ import annotations

import torch

from pettingllms.backends.shared_prefix import cache_keyword, prefill, uses_activation_checkpointing
from pettingllms.trainers.update.sharding import is_sharded


def completion_logps(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_width: int,
    *,
    pad_token_id: int,
    aux_loss: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """(log-probabilities, entropies, MoE load-balancing loss) of the last `completion_width` tokens of each row:
    the first two (rows, completion_width), 0 on padding (entropies None for a head built without them), the
    third None unless `aux_loss`.

    `input_ids` / `attention_mask` are prompts left-padded, then completions right-padded over the last
    `completion_width` columns. Each prompt token is computed once however many rows share it
    (`shared_prefix_logps`), except where sharing does not apply: the auxiliary loss, activation checkpointing,
    a model sharded over ranks (its forwards are collectives: one per micro-batch on every rank), an empty prompt.
    There one forward runs every row whole, as in TRL's `GRPOTrainer`."""
    prompt_width = input_ids.size(1) - completion_width
    shareable = (
        not aux_loss
        and not uses_activation_checkpointing(model)
        and not is_sharded(model)
        and bool(attention_mask[:, :prompt_width].any(dim=1).all())
    )
    if shareable:
        out = shared_prefix_logps(
            model, input_ids, attention_mask, completion_width, pad_token_id=pad_token_id
        )
        return out.log_probs, out.entropy, None
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    labels[:, :-completion_width] = -100  # only the completion tokens are scored
    extra = {"output_router_logits": True} if aux_loss else {}
    out = model(
        input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True, **extra
    )
    entropy = None if out.entropy is None else out.entropy[:, -completion_width:]
    return out.log_probs[:, -completion_width:], entropy, out.aux_loss if aux_loss else None


def shared_prefix_logps(model, input_ids, attention_mask, completion_width: int, *, pad_token_id: int):
    """The output of TRL's fused log-prob head (`log_probs` and `entropy`, each (rows, completion_width), 0 on
    padding) for rows of prompt + completion whose prompts are prefilled with `shared_prefix.prefill`.

    `input_ids` / `attention_mask` as in `completion_logps`. Every prompt but its last token goes through `prefill`
    (each token of the prompts' prefix tree once); the last prompt token and the completion then run through the
    fused head, whose first position scores the first completion token. The result is one forward per whole row,
    up to floating-point rounding."""
    prompt_width = input_ids.size(1) - completion_width
    prompts = [
        ids[mask.bool()].tolist()
        for ids, mask in zip(input_ids[:, :prompt_width], attention_mask[:, :prompt_width], strict=True)
    ]
    start = prefill(model, [prompt[:-1] for prompt in prompts], pad_token_id=pad_token_id)
    device = input_ids.device
    last = torch.tensor([prompt[-1] for prompt in prompts], dtype=torch.long, device=device)[:, None]
    completion_mask = attention_mask[:, prompt_width:]
    ids = torch.cat([last, input_ids[:, prompt_width:]], dim=1)
    fed = torch.cat([torch.ones_like(last), completion_mask], dim=1)
    labels = ids.masked_fill(fed == 0, -100)
    labels[:, 0] = -100  # the last prompt token is context, not a scored token
    return model(
        input_ids=ids,
        attention_mask=torch.cat([start.attention_mask, fed], dim=1),
        position_ids=start.next_positions + torch.arange(ids.size(1), device=device)[None],
        labels=labels,
        fused_lm_head=True,
        **{cache_keyword(model): start.cache},
    )
