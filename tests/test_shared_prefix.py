"""`shared_prefix.prefill`: the layout it computes, and a cache equal to each row's own forward (values and
gradients), checked against plain unpadded forwards of a random tiny model."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from pettingllms.backends.shared_prefix import (  # noqa: E402
    LEVEL_COST,
    SharedLayout,
    cache_keyword,
    prefill,
    uses_activation_checkpointing,
)
from pettingllms.models.tiny import build_model, tiny_config  # noqa: E402
from pettingllms.trainers.update.activation_checkpointing import enable_activation_checkpointing  # noqa: E402

PREFIX = [7, 8, 9, 10]
ROWS = [  # duplicates (a group's candidates), a shared 4-token prefix, remainders of unequal lengths
    PREFIX + [11, 12, 13],
    PREFIX + [11, 12, 13],
    PREFIX + [20],
    PREFIX + [21, 22, 23, 24, 25],
    PREFIX + [20],
]


@pytest.fixture(scope="module")
def model(one_torch_thread):
    config = tiny_config(64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, head_dim=8)
    return build_model(config, seed=0).eval()


def test_the_layout_computes_the_common_prefix_and_each_distinct_remainder_once():
    layout = SharedLayout.of(ROWS)
    assert SharedLayout.cheapest(ROWS) == layout
    assert [level.segments for level in layout.levels] == [
        (tuple(PREFIX),),
        ((11, 12, 13), (20,), (21, 22, 23, 24, 25)),
    ]
    assert layout.levels[1].parents == (0, 0, 0)
    assert layout.row_node == (0, 0, 1, 2, 1)
    assert layout.row_end == ((1, 0), (1, 0), (1, 1), (1, 2), (1, 1))
    assert layout.computed_tokens == 4 + 3 + 1 + 5  # against 36 tokens row by row


CLUSTERS = [  # two instances' candidates: a 2-token prefix for all, then 3 tokens per instance, then 1 each
    [1, 2, 3, 4, 5, 6],
    [1, 2, 3, 4, 5, 7],
    [1, 2, 9, 9, 9, 9],
    [1, 2, 9, 9, 9, 8],
]


def test_tokens_shared_within_a_cluster_get_a_level_when_they_save_enough():
    layout = SharedLayout.of(CLUSTERS, min_saving=3, min_node=1)
    assert [level.segments for level in layout.levels] == [
        ((1, 2),),
        ((3, 4, 5), (9, 9, 9)),
        ((6,), (7,), (9,), (8,)),
    ]
    assert layout.levels[2].parents == (0, 0, 1, 1)
    assert layout.computed_tokens == 2 + 6 + 4
    too_little = SharedLayout.of(CLUSTERS, min_saving=4, min_node=1)  # each cluster saves (2 - 1) * 3 tokens
    assert [level.segments for level in too_little.levels] == [
        ((1, 2),),
        ((3, 4, 5, 6), (3, 4, 5, 7), (9, 9, 9, 9), (9, 9, 9, 8)),
    ]
    capped = SharedLayout.of(CLUSTERS, min_saving=3, min_node=1, max_levels=2)
    assert [level.segments for level in capped.levels] == [level.segments for level in too_little.levels]
    short = SharedLayout.of(CLUSTERS, min_saving=3, min_node=4)  # 3 shared tokens are not a node
    assert [level.segments for level in short.levels] == [level.segments for level in too_little.levels]


def test_the_cheapest_tree_pays_for_its_padding_and_forwards():
    """Two instances whose 4 candidates share 100 tokens: a level for the instances costs 2 x 100 tokens and a
    forward, and spares 8 x 100 tokens of the distinct rows; sharing 2 tokens spares too little."""

    def batch(shared):
        return [[1, 2] + [10 + instance] * shared + [50 + k] for instance in range(2) for k in range(4)]

    deep = SharedLayout.cheapest(batch(100))
    assert [len(level.segments) for level in deep.levels] == [1, 2, 8]
    assert deep.cost == (2 + LEVEL_COST) + (2 * 100 + LEVEL_COST) + (8 * 1 + LEVEL_COST)
    assert deep.cost < SharedLayout.of(batch(100)).cost == (2 + LEVEL_COST) + (8 * 101 + LEVEL_COST)
    shallow = SharedLayout.cheapest(batch(2))
    assert shallow == SharedLayout.of(batch(2)) and len(shallow.levels) == 2


def test_a_row_that_ends_inside_the_tree_is_passed_through_to_the_last_level():
    layout = SharedLayout.of([[1, 2, 3], [1, 2, 3, 4], [1, 2, 5]], min_saving=1, min_node=1)
    assert [level.segments for level in layout.levels] == [((1, 2),), ((3,), (5,)), ((), (4,), ())]
    assert layout.levels[2].parents == (0, 0, 1)
    assert layout.row_end == ((1, 0), (2, 1), (1, 1))
    assert SharedLayout.of([[], [1]]).row_end == (None, (1, 1))
    with pytest.raises(ValueError, match="no rows"):
        SharedLayout.of([])
    with pytest.raises(ValueError, match="max_levels=1"):
        SharedLayout.of([[1]], max_levels=1)


def own_logits(model, row: list[int], extra: list[int] = ()) -> torch.Tensor:
    """The logits of `row + extra` at every position of `extra` and at the last token of `row`: one unpadded
    forward of that row alone."""
    output = model(input_ids=torch.tensor([row + list(extra)]))
    return output.logits[0, len(row) - 1 :]


@pytest.mark.parametrize(
    "rows", [ROWS, [[5, 6, 7]] * 3, [[1, 2, 3], [4, 5], [6]], CLUSTERS, [[1, 2, 3], [1, 2, 3, 4], [1, 2, 5]]]
)
@pytest.mark.parametrize("min_saving", [1, None])
def test_the_cache_continues_every_row_as_its_own_forward(model, rows, min_saving):
    """Last-token logits, then two more tokens fed through the cache, equal each row's unpadded forward."""
    extra = [[30 + i, 40 + i] for i in range(len(rows))]
    with torch.no_grad():
        start = prefill(
            model, rows, pad_token_id=0, layout=SharedLayout.of(rows, min_saving=min_saving, min_node=1)
        )
        continued = model(
            input_ids=torch.tensor(extra),
            attention_mask=torch.cat([start.attention_mask, torch.ones(len(rows), 2, dtype=torch.long)], 1),
            position_ids=start.next_positions + torch.arange(2)[None],
            use_cache=True,
            **{cache_keyword(model): start.cache},
        ).logits
        for index, row in enumerate(rows):
            want = own_logits(model, list(row), extra[index])
            assert torch.allclose(start.last_logits[index], want[0], atol=1e-5)
            assert torch.allclose(continued[index], want[1:], atol=1e-5)
    assert start.next_positions[:, 0].tolist() == [len(row) for row in rows]


def test_gradients_through_the_shared_cache_are_those_of_separate_forwards(model):
    """A loss on tokens fed after the cache backpropagates into the prefix computed once: the gradient is the sum
    over the rows that read it, as with one forward per row."""
    rows = CLUSTERS + ROWS
    extra = [[30 + i] for i in range(len(rows))]
    weights = torch.linspace(-1.0, 1.0, len(rows))

    def loss_of(logits_per_row):
        return sum(w * torch.log_softmax(lg, -1)[..., 3].sum() for w, lg in zip(weights, logits_per_row))

    model.zero_grad()
    start = prefill(model, rows, pad_token_id=0, layout=SharedLayout.of(rows, min_saving=1, min_node=1))
    fed = model(
        input_ids=torch.tensor(extra),
        attention_mask=torch.cat([start.attention_mask, torch.ones(len(rows), 1, dtype=torch.long)], 1),
        position_ids=start.next_positions,
        **{cache_keyword(model): start.cache},
    ).logits
    loss_of(list(fed)).backward()
    shared = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    loss_of([own_logits(model, row, ex)[1:] for row, ex in zip(rows, extra)]).backward()
    for name, p in model.named_parameters():
        assert torch.allclose(shared[name], p.grad, atol=1e-6), name
    model.zero_grad()


def test_activation_checkpointing_is_detected(model):
    assert not uses_activation_checkpointing(model)
    enable_activation_checkpointing(model, {})  # transformers 5.17 and later alike
    try:
        assert uses_activation_checkpointing(model)
    finally:
        model.gradient_checkpointing_disable()


def test_a_batch_of_empty_rows_prefills_nothing(model):
    """The update prefills every prompt but its last token: one-token prompts leave nothing to compute."""
    start = prefill(model, [[], []], pad_token_id=0)
    assert start.last_logits is None and start.cache.get_seq_length() == 0
    assert start.attention_mask.shape == (2, 0) and start.next_positions.tolist() == [[0], [0]]
