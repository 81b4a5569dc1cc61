"""HFPolicy: shapes, seeding, decoding rules, stop strings, eos, left padding, log-probs (a random tiny model)."""

from __future__ import annotations

import collections
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from pettingllms.backends.base import PolicyBackend, SamplingConfig  # noqa: E402
from pettingllms.backends.hf import HFPolicy  # noqa: E402
from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.models.tiny import build_model, config_for_tokenizer  # noqa: E402
from pettingllms.models.tokenizer import train_tokenizer  # noqa: E402

PROMPTS = [
    "Walk from @ to G.\n..G\n.#.\n@..",
    "short",
    "A longer prompt: the map is\n#....\n..@..\n....G\nand you answer with <answer>U R</answer> moves.",
]
GREEDY = SamplingConfig(temperature=0.0, max_new_tokens=12)
SAMPLED = SamplingConfig(temperature=1.0, max_new_tokens=12)


@pytest.fixture(scope="module")
def parts(one_torch_thread):
    corpus = PROMPTS * 3 + ["<answer>U U R D L</answer>", "You are at row 1, column 2; the goal is here."] * 5
    tokenizer = train_tokenizer(corpus, vocab_size=400)
    # a smaller, peakier model than the default tiny one keeps the tests fast and ties unlikely
    config = config_for_tokenizer(
        tokenizer,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        head_dim=16,
        initializer_range=0.2,
    )
    return build_model(config, seed=0), tokenizer


def policy(parts, seed=0, **kwargs) -> HFPolicy:
    model, tokenizer = parts
    return HFPolicy(model, tokenizer, seed=seed, **kwargs)


def ids(groups):
    return [[g.completion_ids for g in group] for group in groups]


def test_shapes_prompt_ids_and_logprobs(parts):
    model, tokenizer = parts
    backend = policy(parts)
    assert isinstance(backend, PolicyBackend)
    groups = backend.generate(PROMPTS, 4, SAMPLED)
    assert [len(group) for group in groups] == [4, 4, 4]
    for prompt, group in zip(PROMPTS, groups):
        expected = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
        )
        for generation in group:
            assert list(generation.prompt_ids) == list(expected)
            assert 1 <= len(generation.completion_ids) == len(generation.logprobs) <= SAMPLED.max_new_tokens
            assert all(isinstance(lp, float) and lp <= 0 for lp in generation.logprobs)
            assert generation.text == tokenizer.decode(
                list(generation.completion_ids), skip_special_tokens=True
            )
    assert backend.generate([], 3, SAMPLED) == []


def test_seeding_is_private_and_reproducible(parts):
    torch_state, python_state, numpy_state = torch.get_rng_state(), random.getstate(), np.random.get_state()
    first = ids(policy(parts, seed=1).generate(PROMPTS, 3, SAMPLED))
    again = ids(policy(parts, seed=1).generate(PROMPTS, 3, SAMPLED))
    other = ids(policy(parts, seed=2).generate(PROMPTS, 3, SAMPLED))
    assert first == again
    assert first != other
    assert len({c for group in first for c in group}) > 3  # the n samples of a group differ
    assert torch.equal(torch_state, torch.get_rng_state())
    assert python_state == random.getstate()
    assert np.array_equal(numpy_state[1], np.random.get_state()[1])


def test_request_seeds_make_a_prompts_samples_independent_of_the_rest_of_the_call(parts):
    """With `seeds`, prompt i's n samples come from its own seed: the same alone, in another order, split over
    calls, and from a policy built with another seed (the rollout engine's schedules rely on this)."""
    together = ids(policy(parts, seed=1).generate(PROMPTS, 3, SAMPLED, seeds=[10, 20, 30]))
    backend = policy(parts, seed=2)
    alone = [
        ids(backend.generate([prompt], 3, SAMPLED, seeds=[seed]))[0]
        for prompt, seed in zip(PROMPTS, [10, 20, 30])
    ]
    reversed_order = ids(backend.generate(PROMPTS[::-1], 3, SAMPLED, seeds=[30, 20, 10]))[::-1]
    assert together == alone == reversed_order
    assert len({c for group in together for c in group}) > 3  # the n samples of a prompt still differ
    assert ids(backend.generate(PROMPTS, 3, SAMPLED, seeds=[11, 20, 30]))[0] != together[0]
    with pytest.raises(ValueError, match="2 seeds for 3 prompts"):
        backend.generate(PROMPTS, 1, SAMPLED, seeds=[1, 2])


def test_the_reserved_kv_cache_decodes_what_the_growing_cache_decodes(parts):
    """The in-place cache (`kv_reserve`) against transformers' concatenating one, on rows that end at different
    steps (a stop string and eos take rows out of the batch): the same tokens and log-probs."""
    _, tokenizer = parts
    free = policy(parts).generate(PROMPTS, 1, GREEDY)
    # the commonest character of the free completions: rows stop at it after different numbers of tokens
    stop = collections.Counter("".join(g.text for (g,) in free)).most_common(1)[0][0]
    for sampling in (SamplingConfig(temperature=0.0, max_new_tokens=24, stop=(stop,)),
                     SamplingConfig(temperature=1.0, max_new_tokens=24, stop=(stop,))):  # fmt: skip
        fast = policy(parts, seed=3).generate(PROMPTS, 3, sampling, seeds=[1, 2, 3])
        slow = policy(parts, seed=3, reserve_cache=False).generate(PROMPTS, 3, sampling, seeds=[1, 2, 3])
        assert ids(fast) == ids(slow)
        assert (
            len({len(g.completion_ids) for group in fast for g in group}) > 1
        )  # rows ended at different steps
        for a, b in zip([g for group in fast for g in group], [g for group in slow for g in group]):
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)


def test_a_reserved_cache_layer_writes_in_place_and_doubles_when_full():
    from transformers import DynamicCache

    from pettingllms.backends.kv_reserve import ReservedLayer, reserve

    cache = DynamicCache()
    keys = torch.arange(2 * 1 * 3 * 2, dtype=torch.float32).reshape(2, 1, 3, 2)
    cache.update(keys, -keys, 0)
    assert reserve(cache, 1) == 1 and isinstance(cache.layers[0], ReservedLayer)
    layer = cache.layers[0]
    buffer = layer.key_buffer
    step = torch.full((2, 1, 1, 2), 7.0)
    cache.update(step, -step, 0)
    assert layer.key_buffer is buffer and cache.get_seq_length() == 4  # written in place
    cache.update(torch.cat([step, step], -2), -torch.cat([step, step], -2), 0)  # past the room: it doubles
    assert layer.key_buffer.shape[-2] == 8 and cache.get_seq_length() == 6
    torch.testing.assert_close(layer.keys, torch.cat([keys, step, step, step], -2))
    torch.testing.assert_close(layer.values, -layer.keys)
    cache.batch_select_indices(torch.tensor([1]))
    torch.testing.assert_close(layer.keys, torch.cat([keys, step, step, step], -2)[1:])


def test_greedy_is_deterministic_and_top_filters_reduce_to_it(parts):
    greedy = ids(policy(parts, seed=3).generate(PROMPTS, 2, GREEDY))
    assert greedy == ids(policy(parts, seed=4).generate(PROMPTS, 2, GREEDY))
    assert all(group[0] == group[1] for group in greedy)
    top_k_1 = SamplingConfig(temperature=1.0, top_k=1, max_new_tokens=12)
    top_p_tiny = SamplingConfig(temperature=0.7, top_p=1e-6, max_new_tokens=12)
    assert ids(policy(parts, seed=5).generate(PROMPTS, 2, top_k_1)) == greedy
    assert ids(policy(parts, seed=6).generate(PROMPTS, 2, top_p_tiny)) == greedy


def test_a_call_cut_into_batches_buckets_its_prompts_by_length(parts, monkeypatch):
    """With `max_batch_rows`, each batch holds prompts of neighbouring lengths (shortest first), and each prompt's
    seeded samples are those of the uncut call, returned in the call's order."""
    import pettingllms.backends.hf as hf

    backend = policy(parts)
    prompts = [PROMPTS[2], PROMPTS[1], PROMPTS[0], PROMPTS[1] + " again", PROMPTS[2] + " and more"]
    seeds = [5, 6, 7, 8, 9]
    whole = ids(backend.generate(prompts, 2, SAMPLED, seeds=seeds))
    batches = []
    recording = hf.prefill

    def record(model, rows, **kwargs):
        batches.append(sorted({len(row) for row in rows}))
        return recording(model, rows, **kwargs)

    monkeypatch.setattr(hf, "prefill", record)
    cut = ids(policy(parts, max_batch_rows=4).generate(prompts, 2, SAMPLED, seeds=seeds))
    assert cut == whole
    lengths = sorted(len(backend.prompt_ids(prompt)) for prompt in prompts)
    assert batches == [lengths[0:2], lengths[2:4], lengths[4:5]]


def test_left_padding_does_not_change_greedy_completions(parts):
    backend = policy(parts)
    batched = backend.generate(PROMPTS, 2, GREEDY)
    for prompt, group in zip(PROMPTS, batched):
        alone = backend.generate([prompt], 1, GREEDY)[0][0]
        assert alone.completion_ids == group[0].completion_ids
        assert alone.logprobs == pytest.approx(group[0].logprobs, abs=1e-4)
    chunked = policy(parts, max_batch_rows=2).generate(PROMPTS, 2, GREEDY)
    assert ids(chunked) == ids(batched)


def test_logprobs_match_a_full_forward_pass(parts):
    model, _ = parts
    hot = SamplingConfig(temperature=1.5, top_k=20, max_new_tokens=10)
    for group in policy(parts, seed=7).generate(PROMPTS, 2, hot):
        for generation in group:
            sequence = torch.tensor([list(generation.prompt_ids) + list(generation.completion_ids)])
            with torch.no_grad():
                logits = model(input_ids=sequence).logits[0].float()
            start = len(generation.prompt_ids)
            expected = torch.log_softmax(logits[start - 1 : -1], dim=-1)
            expected = expected.gather(-1, sequence[0, start:, None])[:, 0]
            assert list(generation.logprobs) == pytest.approx(expected.tolist(), abs=1e-4)


def test_stop_strings_cut_after_the_stop(parts):
    _, tokenizer = parts
    backend = policy(parts)
    free = backend.generate(PROMPTS[:1], 1, SamplingConfig(temperature=0.0, max_new_tokens=24))[0][0]
    assert len(free.text) >= 6
    stop = free.text[3:5]
    cut = free.text[: free.text.find(stop) + len(stop)]
    stopped = backend.generate(
        PROMPTS[:1], 2, SamplingConfig(temperature=0.0, max_new_tokens=24, stop=(stop, "never"))
    )
    for generation in stopped[0]:
        assert generation.text == cut
        decoded = tokenizer.decode(list(generation.completion_ids), skip_special_tokens=True)
        assert decoded.startswith(cut)
        shorter = tokenizer.decode(list(generation.completion_ids[:-1]), skip_special_tokens=True)
        assert stop not in shorter  # the last token is the one that completed the stop string
        assert generation.completion_ids == free.completion_ids[: len(generation.completion_ids)]


def test_eos_ends_a_row_and_is_kept_in_completion_ids(parts):
    model, tokenizer = parts
    free = policy(parts).generate(PROMPTS[:1], 1, GREEDY)[0][0]
    eos = free.completion_ids[3]
    saved = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, eos]
    try:
        ended = policy(parts).generate(PROMPTS[:1], 1, GREEDY)[0][0]
    finally:
        model.generation_config.eos_token_id = saved
    first = free.completion_ids.index(eos)
    assert ended.completion_ids == free.completion_ids[: first + 1]
    assert len(ended.logprobs) == first + 1


def test_training_mode_restored_and_errors(parts):
    model, _ = parts
    model.train()
    policy(parts).generate(PROMPTS[:1], 1, GREEDY)
    assert model.training
    with pytest.raises(ValueError, match="n=0"):
        policy(parts).generate(PROMPTS, 0, GREEDY)


def test_a_row_ends_where_the_context_does(parts):
    """As vLLM caps a request at max_model_len: a row whose prompt and budget overrun the model's context stops
    when the context is full (truncated, the tokens before it unchanged); the other rows of the call do not; a
    prompt that fills the context alone is refused with the fix."""
    model, _ = parts
    backend = policy(parts)
    free = backend.generate(PROMPTS, 1, GREEDY)
    lengths = [len(group[0].prompt_ids) for group in free]
    assert all(len(group[0].completion_ids) == GREEDY.max_new_tokens for group in free)  # none ends early
    context = max(lengths) + 5  # the longest prompt has room for 5 tokens, the shortest for its whole budget
    assert min(lengths) + GREEDY.max_new_tokens <= context
    saved = model.config.max_position_embeddings
    model.config.max_position_embeddings = context
    try:
        capped = backend.generate(PROMPTS, 1, GREEDY)
        model.config.max_position_embeddings = max(lengths)
        with pytest.raises(ValueError, match="leaves no room for a completion"):
            backend.generate(PROMPTS, 1, GREEDY)
    finally:
        model.config.max_position_embeddings = saved
    rooms = [min(GREEDY.max_new_tokens, context - length) for length in lengths]
    assert sorted(set(rooms)) == [5, GREEDY.max_new_tokens]
    for group, fits, room in zip(capped, free, rooms):
        assert group[0].completion_ids == fits[0].completion_ids[:room]
        assert group[0].logprobs == pytest.approx(fits[0].logprobs[:room], abs=1e-5)
        assert group[0].truncated


def test_from_pretrained_reloads_the_same_policy(parts, tmp_path):
    model, tokenizer = parts
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    reloaded = HFPolicy.from_pretrained(tmp_path, seed=0)
    assert ids(reloaded.generate(PROMPTS, 1, GREEDY)) == ids(policy(parts).generate(PROMPTS, 1, GREEDY))
    with pytest.raises(ConfigError, match="neither an existing folder nor a Hugging Face id"):
        HFPolicy.from_pretrained(tmp_path / "missing")


def test_a_peft_wrapped_model_generates_like_its_base(parts):
    peft = pytest.importorskip("peft")
    model, tokenizer = parts
    expected = ids(policy(parts).generate(PROMPTS, 1, GREEDY))
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=2, target_modules=["q_proj", "v_proj"]))
    try:
        assert ids(HFPolicy(wrapped, tokenizer, seed=0).generate(PROMPTS, 1, GREEDY)) == expected
    finally:
        wrapped.unload()  # give the shared fixture its plain model back


def test_weights_travel_as_bytes_into_another_policy(parts):
    """What a Ray update worker sends its rollout server: the full state as safetensors, a tied head once (the
    receiver ties it again)."""
    from safetensors.torch import load

    from pettingllms.backends.weights import full_state, serialize

    model, tokenizer = parts
    state = full_state(model)
    assert model.config.tie_word_embeddings and "lm_head.weight" not in state
    assert len(state) == len(list(model.parameters()))  # every parameter once
    other_model = build_model(model.config, seed=1)
    receiver = HFPolicy(other_model, tokenizer)
    greedy = SamplingConfig(temperature=0.0, max_new_tokens=6)
    assert ids(receiver.generate(PROMPTS, 1, greedy)) != ids(policy(parts).generate(PROMPTS, 1, greedy))
    receiver.load_state(load(serialize(state)))
    assert ids(receiver.generate(PROMPTS, 1, greedy)) == ids(policy(parts).generate(PROMPTS, 1, greedy))
    with pytest.raises(ValueError, match="missing"):
        receiver.load_state({name: tensor for name, tensor in state.items() if "layers.0." not in name})


def test_weights_travel_in_bounded_chunks_in_the_receivers_dtype(parts):
    from pettingllms.backends.weights import full_state, weight_chunks

    model, _ = parts
    state = full_state(model)
    bound = 64 * 1024
    chunks = list(weight_chunks(state, dtype=torch.bfloat16, max_bytes=bound))
    assert len(chunks) > 3
    assert [name for chunk in chunks for name in chunk] == list(state)  # each tensor once, in order
    for chunk in chunks:
        sizes = [t.numel() * t.element_size() for t in chunk.values()]
        assert sum(sizes) <= bound or len(chunk) == 1  # a tensor larger than the bound travels alone
        assert all(t.dtype == torch.bfloat16 for t in chunk.values())
    for name, tensor in state.items():
        sent = next(chunk[name] for chunk in chunks if name in chunk)
        torch.testing.assert_close(sent.float(), tensor.to(torch.bfloat16).float(), rtol=0, atol=0)


class ScriptedSampler(HFPolicy):
    """An HFPolicy whose sampler emits a fixed token script (the model still runs every step; one row)."""

    def __init__(self, parts, script):
        super().__init__(*parts)
        self.script, self.steps = list(script), 0

    def _sample_next(self, logits, sampling, generators):
        self.steps += 1
        return torch.full((logits.shape[0],), self.script[self.steps - 1], dtype=torch.long)


@pytest.mark.parametrize(
    "expected",
    [
        "```python\nprint('<answer>R</answer>')\n```\n<answer>U</answer>",
        "<think>the format is <answer>...</answer></think><answer>R</answer>",
    ],
)
def test_stop_strings_do_not_fire_inside_code_or_thinking_blocks(parts, expected):
    """Issue 25, findings 1-2: `</answer>` ended a program that prints an answer, and a thought that quotes one."""
    _, tokenizer = parts
    script = tokenizer.encode(expected + " tail", add_special_tokens=False)
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=len(script), stop=("</answer>",))
    (generation,) = ScriptedSampler(parts, script).generate(PROMPTS[1:2], 1, sampling)[0]
    assert generation.text == expected
    kept = len(generation.completion_ids)
    assert list(generation.completion_ids) == script[:kept]
    assert not tokenizer.decode(script[: kept - 1]).startswith(expected)  # the last token completed the stop


def test_stop_detection_decodes_a_bounded_tail_per_step_with_the_results_of_re_decoding(parts):
    """Finding 5 of issue 25: the whole completion was decoded at every step (n^2/2 tokens for n steps)."""
    _, tokenizer = parts
    script = tokenizer.encode("moves: U R é 中文 😀 <answer> ```x``` " * 20, add_special_tokens=False)
    assert len(script) >= 300
    free = ScriptedSampler(parts, script).generate(
        PROMPTS[1:2], 1, SamplingConfig(max_new_tokens=len(script))
    )
    backend, decoded = ScriptedSampler(parts, script), []
    decode = backend._decode
    backend._decode = lambda ids: decoded.append(len(ids)) or decode(ids)
    sampling = SamplingConfig(max_new_tokens=len(script), stop=("</never>", "zzz"))
    (generation,) = backend.generate(PROMPTS[1:2], 1, sampling)[0]
    assert generation == free[0][0]  # the same text and ids as without a stop string
    assert sum(decoded) <= 10 * len(script), f"{sum(decoded)} tokens decoded for {len(script)} steps"
