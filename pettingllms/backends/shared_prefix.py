"""Run a causal LM over a batch of prompts computing every shared token once.

The rows of one batch share many of their tokens: the K candidates of an AT-GRPO group have one prompt, the prompts
of one turn share their instructions, and the greedy probes of one instance's candidates share that instance's
state. `prefill(model, rows)` arranges the distinct rows in a prefix tree (`SharedLayout`), each node holding tokens
that every row below it shares, and computes it level by level: one forward per level over all of its nodes, each
node left-padded behind its parent and attending to it through the KV cache. Then the cache is expanded to one row
per input row. It holds, for every row, what the row's own unpadded forward would have put there (up to
floating-point rounding): the attention mask hides the padding between levels, and each real token keeps its own
position. A caller continues from `Prefilled` exactly as from a left-padded prefill: append a column of ones to
`attention_mask` per new token and feed positions from `next_positions`.

It works under autograd: the gradient of a loss over many rows flows back through the expanded cache into the one
computation of each shared token, which is the gradient of the rows' separate forwards (a shared activation's
gradient is the sum over the rows that read it). Layers that recompute their forward in the backward pass
(activation checkpointing) drop the cache, so callers must not use this under checkpointing
(`uses_activation_checkpointing`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Sequence

import torch

MAX_LEVELS = 4
"""At most this many forwards per prefill: the depth of the prefix tree."""
MIN_SAVINGS = (None, 1024, 256, 64)
"""The trees `SharedLayout.cheapest` compares: tokens shared by r rows below the root become a node of their own
only when that saves (r - 1) * their length >= the threshold (None: never, the root then the distinct rows). The
root, the prefix of every row, is always a node."""
MIN_NODE = 16
"""Tokens shared below the root make a node only when there are at least this many: prompts that share a few
tokens (the first cells of two grids) and then differ would otherwise add a level of mostly padding in front of
the nodes worth sharing (one instance's candidates)."""
LEVEL_COST = 128
"""What one more forward costs, in tokens of a padded batch, when comparing trees (a small model's fixed cost per
forward on CPU is that of ~100 tokens)."""


@dataclasses.dataclass(frozen=True)
class Level:
    """One forward of `prefill`: node j holds the tokens `segments[j]` and continues node `parents[j]` of the
    previous level; an empty segment passes a row that has no more tokens through to the next level."""

    segments: tuple[tuple[int, ...], ...]
    parents: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class SharedLayout:
    """The prefix tree of a batch: its `levels`; row i is node `row_node[i]` of the last level, and its last token
    is the last of node `row_end[i] = (level, node)` (None for an empty row)."""

    levels: tuple[Level, ...]
    row_node: tuple[int, ...]
    row_end: tuple[tuple[int, int] | None, ...]

    @classmethod
    def cheapest(cls, rows: Sequence[Sequence[int]]) -> SharedLayout:
        """Of the trees of `MIN_SAVINGS`, the one with the lowest `cost` (the first of equals): a node shared by
        few rows can cost more in padding and forwards than it saves."""
        lowest_saving = min(t for t in MIN_SAVINGS if t is not None)
        lowest = cls.of(rows, min_saving=lowest_saving)
        if (
            len(lowest.levels) <= 2
        ):  # no node below the root even at the lowest threshold: every tree is this one
            return lowest
        layouts = [lowest if t == lowest_saving else cls.of(rows, min_saving=t) for t in MIN_SAVINGS]
        return min(layouts, key=lambda layout: layout.cost)

    @classmethod
    def of(
        cls,
        rows: Sequence[Sequence[int]],
        *,
        max_levels: int = MAX_LEVELS,
        min_saving: int | None = None,
        min_node: int = MIN_NODE,
    ) -> SharedLayout:
        """The tree of `rows` in which at least `min_node` tokens shared below the root are a node when they save
        `min_saving` token computations (None: never); raises ValueError for an empty batch."""
        if not rows:
            raise ValueError("no rows to prefill")
        if max_levels < 2:
            raise ValueError(f"max_levels={max_levels} must be >= 2 (the root, then what differs)")
        distinct: dict[tuple[int, ...], int] = {}
        row_prompt = [distinct.setdefault(tuple(row), len(distinct)) for row in rows]
        prompts = list(distinct)
        paths = _paths(prompts, max_levels, (min_saving, min_node))
        levels, ends, last = _levels(prompts, paths)
        return cls(
            tuple(levels),
            tuple(last[prompt] for prompt in row_prompt),
            tuple(ends[prompt] for prompt in row_prompt),
        )

    @property
    def computed_tokens(self) -> int:
        """Tokens of the tree, padding aside: every node once."""
        return sum(len(segment) for level in self.levels for segment in level.segments)

    @property
    def cost(self) -> int:
        """Tokens the model runs on, padding included, plus `LEVEL_COST` per forward."""
        widths = [max(len(segment) for segment in level.segments) for level in self.levels]
        return sum(
            len(level.segments) * width + LEVEL_COST for level, width in zip(self.levels, widths) if width
        )


@dataclasses.dataclass(eq=False)
class _Node:
    """Tokens `start:end` that every one of `members` (prompt indices) has."""

    start: int
    end: int
    members: list[int]


def _paths(
    prompts: list[tuple[int, ...]], max_levels: int, rule: tuple[int | None, int]
) -> list[list[_Node]]:
    """Each prompt's nodes from the root down: together they cover the prompt, at most `max_levels` of them;
    `rule` = (min_saving, min_node) of `SharedLayout.of`."""
    everyone = list(range(len(prompts)))
    root = _Node(0, _shared_length(prompts, everyone, 0), everyone)
    paths: list[list[_Node]] = [[] for _ in prompts]
    stack = [(root, [root])]
    while stack:
        node, path = stack.pop()
        below = [m for m in node.members if len(prompts[m]) > node.end]
        for member in node.members:
            if len(prompts[member]) == node.end:
                paths[member] = path
        if not below:
            continue
        if len(path) == max_levels - 1:  # the last level: every remainder is a leaf
            children = [_Node(node.end, len(prompts[m]), [m]) for m in below]
        else:
            children = _children(prompts, below, node.end, rule)
        stack.extend((child, path + [child]) for child in reversed(children))
    return paths


def _children(prompts, members: list[int], start: int, rule: tuple[int | None, int]) -> list[_Node]:
    """The nodes that continue `members` from token `start`: a group that shares enough tokens is one node, a
    prompt alone is a leaf; a group that shares too little is split where its members differ, and each part is
    looked at again (its members may share more)."""
    min_saving, min_node = rule
    children, todo = [], [members] if members else []
    while todo:
        group = todo.pop(0)
        shared = _shared_length(prompts, group, start)
        if len(group) == 1:
            children.append(_Node(start, len(prompts[group[0]]), group))
        elif min_saving is not None and shared >= min_node and (len(group) - 1) * shared >= min_saving:
            children.append(_Node(start, start + shared, group))
        else:
            split = start + shared
            children += [_Node(start, split, [m]) for m in group if len(prompts[m]) == split]
            parts: dict[int, list[int]] = {}
            for member in group:
                if len(prompts[member]) > split:
                    parts.setdefault(prompts[member][split], []).append(member)
            todo += parts.values()
    return children


def _levels(prompts, paths: list[list[_Node]]):
    """(levels, each prompt's (level, node) of its last token or None, each prompt's node in the last level)."""
    levels: list[Level] = []
    ends: list[tuple[int, int] | None] = [None] * len(prompts)
    previous: list[int] = [0] * len(prompts)
    for depth in range(max(len(path) for path in paths)):
        slots: dict[tuple[int, bool], int] = {}
        segments, parents, current = [], [], []
        for prompt, path in enumerate(paths):
            passed = depth >= len(path)
            node = path[-1] if passed else path[depth]
            key = (id(node), passed)
            if key not in slots:
                slots[key] = len(segments)
                segments.append(() if passed else prompts[prompt][node.start : node.end])
                parents.append(previous[prompt])
            current.append(slots[key])
            if depth == len(path) - 1 and prompts[prompt]:
                ends[prompt] = (depth, slots[key])
        levels.append(Level(tuple(segments), tuple(parents)))
        previous = current
    return levels, ends, previous


@dataclasses.dataclass
class Prefilled:
    """The state after `prefill`: `cache` (one row per input row), `attention_mask` (rows, width) with 1 on real
    tokens, `next_positions` (rows, 1) the position of each row's next token, and `last_logits` (rows, vocab) the
    logits at each row's last token (zeros for an empty row; None when every row is empty)."""

    cache: object
    attention_mask: torch.Tensor
    next_positions: torch.Tensor
    last_logits: torch.Tensor | None


def prefill(
    model, rows: Sequence[Sequence[int]], *, pad_token_id: int, device=None, layout=None
) -> Prefilled:
    """Build the KV cache of `rows` through `model` (a `transformers` causal LM, PEFT-wrapped or not), computing
    every token of `layout` (default: `SharedLayout.cheapest(rows)`) once (see the module docstring). Gradients
    flow when autograd is on."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    layout = SharedLayout.cheapest(rows) if layout is None else layout
    keyword = cache_keyword(model)
    cache = new_cache(model)
    mask = torch.zeros((1, 0), dtype=torch.long, device=device)
    positions = torch.zeros((1, 1), dtype=torch.long, device=device)  # the next position of each node
    logits: list[torch.Tensor | None] = []
    for level in layout.levels:
        parents = torch.tensor(level.parents, device=device)
        cache.batch_select_indices(parents)
        mask, positions = mask[parents], positions[parents]
        lengths = torch.tensor([len(segment) for segment in level.segments], device=device)
        width = int(lengths.max())
        if width == 0:
            logits.append(None)
            continue
        ids = torch.full((len(level.segments), width), pad_token_id, dtype=torch.long)
        for index, segment in enumerate(level.segments):
            if segment:
                ids[index, width - len(segment) :] = torch.tensor(segment, dtype=torch.long)
        segment_mask = (torch.arange(width, device=device)[None] >= (width - lengths)[:, None]).long()
        mask = torch.cat([mask, segment_mask], 1)
        output = model(
            input_ids=ids.to(device),
            attention_mask=mask,
            position_ids=(positions + segment_mask.cumsum(-1) - 1).clamp(min=0),
            use_cache=True,
            logits_to_keep=1,
            **{keyword: cache},
        )
        logits.append(output.logits[:, -1, :])
        positions = positions + lengths[:, None]
    rows_index = torch.tensor(layout.row_node, device=device)
    cache.batch_select_indices(rows_index)
    return Prefilled(
        cache=cache,
        attention_mask=mask[rows_index],
        next_positions=positions[rows_index],
        last_logits=_row_logits(logits, layout.row_end),
    )


def _row_logits(logits: list[torch.Tensor | None], ends) -> torch.Tensor | None:
    """Each row's logits at its last token, from the level that computed it (zeros for an empty row); None when
    every row is empty."""
    computed = [level for level in logits if level is not None]
    if not computed:
        return None
    zero = torch.zeros_like(computed[0][0])
    return torch.stack([zero if end is None else logits[end[0]][end[1]] for end in ends])


def cache_keyword(model) -> str:
    """transformers renamed `past_key_values` to `cache` in 5.2x; use whichever the model's forward takes.

    A PEFT wrapper forwards keyword arguments, so its base model's signature decides.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return _cache_keyword_of(type(base))


@functools.cache
def _cache_keyword_of(model_class: type) -> str:
    """`cache_keyword` of a model class, read once per class (a patched instance forward, such as TRL's fused
    head, keeps its class's signature)."""
    parameters = inspect.signature(model_class.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def new_cache(model):
    """An empty dynamic KV cache for `model`."""
    from transformers import DynamicCache

    return DynamicCache(config=model.config)


def uses_activation_checkpointing(model) -> bool:
    """Whether any layer of `model` recomputes its forward in the backward pass (and so drops a KV cache)."""
    return any(getattr(module, "gradient_checkpointing", False) for module in model.modules())


def _shared_length(prompts, members: Sequence[int], start: int) -> int:
    """How many tokens from `start` on all `members` (which share their first `start` tokens) have in common: those
    of the lexicographically smallest and largest of them (compared in C, not token by token in Python)."""
    if len(members) == 1:
        return len(prompts[members[0]]) - start
    low = min(prompts[m] for m in members)
    high = max(prompts[m] for m in members)
    limit = min(len(low), len(high))
    return next((i for i in range(start, limit) if low[i] != high[i]), limit) - start
