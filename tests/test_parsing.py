"""Parsing untrusted completions: the linear tag scanner agrees with the regex it replaced, and stays linear."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pettingllms.core.parsing import delimited, extract_answer, extract_python_block

_FRAGMENTS = ["<answer>", "</answer>", "<ANSWER>", "</Answer>", "U", " ", "\n", "<", ">", "/", "answer"]
_CODE_FRAGMENTS = ["```python\n", "```py\n", "```PYTHON3 \r\n", "```", "`", "print(1)", "\n", " ", "python"]


class CountingPattern:
    """A compiled pattern that counts its `search` calls (each one is one scan of the text)."""

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern = re.compile(pattern, flags)
        self.searches = 0

    def search(self, text: str, pos: int = 0):
        self.searches += 1
        return self.pattern.search(text, pos)

    def match(self, text: str, pos: int = 0):
        return self.pattern.match(text, pos)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map("".join))
def test_extract_answer_agrees_with_the_regex(text):
    expected = re.findall(r"<answer>(.*?)</answer>", text, re.IGNORECASE | re.DOTALL)
    assert extract_answer(text) == (expected[-1].strip() if expected else None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_CODE_FRAGMENTS), max_size=30).map("".join))
def test_extract_python_block_agrees_with_the_regex(text):
    expected = re.findall(r"```[ \t]*(?:python3?|py)[ \t]*\r?\n(.*?)```", text, re.IGNORECASE | re.DOTALL)
    assert extract_python_block(text) == (expected[-1] if expected else None)


def test_unclosed_openers_are_scanned_once_not_once_per_opener():
    # The regex form rescanned the rest of the text at each of the 8,000 openers (64 KB took ~13 s).
    text = "<answer>" * 8000
    opener, closer = CountingPattern("<answer>", re.IGNORECASE), CountingPattern("</answer>", re.IGNORECASE)
    assert list(delimited(text, opener, closer)) == []
    assert (opener.searches, closer.searches) == (1, 1)
    assert extract_answer(text) is None


def test_each_span_costs_one_search_for_its_opener_and_one_for_its_closer():
    text = "".join(f"<answer>{i}</answer>" for i in range(100)) + "<answer>" * 100
    opener, closer = CountingPattern("<answer>"), CountingPattern("</answer>")
    assert list(delimited(text, opener, closer)) == [str(i) for i in range(100)]
    assert opener.searches == 101 and closer.searches == 101


_CASE_FRAGMENTS = ["<input>", "</input>", "<output>", "</output>", "<INPUT>", "1 2", "\n", " ", "x", "<"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", " ", "\n", "junk "]),
            st.text(alphabet="ab 1\n", max_size=5),
            st.sampled_from(["", " ", "\n\n"]),
            st.text(alphabet="ab 1\n", max_size=5),
        ),
        max_size=12,
    )
)
def test_stdio_cases_agree_with_the_regex_on_well_formed_answers(parts):
    from pettingllms.envs.code.cases import MAX_CASES, stdio_cases

    text = "".join(f"{pre}<input>{i}</input>{gap}<output>{o}</output>" for pre, i, gap, o in parts)
    regex = re.findall(
        r"<input>\n?(.*?)</input>\s*<output>\n?(.*?)</output>", text, re.IGNORECASE | re.DOTALL
    )
    assert [(c.input, c.output) for c in stdio_cases(text)] == regex[:MAX_CASES]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_CASE_FRAGMENTS), max_size=30).map("".join))
def test_stdio_cases_are_delimited_spans_of_any_text(text):
    from pettingllms.envs.code.cases import stdio_cases

    for case in stdio_cases(text):
        assert "</input>" not in case.input.lower() and "</output>" not in case.output.lower()
        assert f"{case.input}</input>".lower() in text.lower()


def test_stdio_cases_scan_unclosed_openers_once(monkeypatch):
    from pettingllms.envs.code import cases

    patterns = {
        name: CountingPattern(getattr(cases, name).pattern, re.IGNORECASE)
        for name in ("_INPUT_OPEN", "_INPUT_CLOSE", "_OUTPUT_OPEN", "_OUTPUT_CLOSE")
    }
    for name, pattern in patterns.items():
        monkeypatch.setattr(cases, name, pattern)
    # the old single regex rescanned the rest of the text at every opener (56 KB of openers: ~1.7 s)
    assert cases.stdio_cases("<input>" * 8000) == []
    assert patterns["_INPUT_OPEN"].searches == 1 and patterns["_INPUT_CLOSE"].searches == 1
    assert cases.stdio_cases("<input>a</input>" * 4000 + "<output>b") == []
    assert patterns["_INPUT_OPEN"].searches == 1 + 4000


def test_the_ascii_answer_search_finds_the_span_the_left_to_right_scan_finds():
    """`extract_answer`'s string search for ASCII text against `last_delimited`'s scan, on 20,000 seeded texts made
    of whole and broken tags in both cases (pairing, unclosed openers, stray closers)."""
    import random

    from pettingllms.core import parsing

    rng = random.Random(0)
    pieces = [
        "<answer>",
        "</answer>",
        "<ANSWER>",
        "</Answer>",
        "U",
        " R ",
        "x",
        "\n",
        "<answer",
        "answer>",
        "</",
    ]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        scanned = parsing.last_delimited(text, parsing._ANSWER_OPEN, parsing._ANSWER_CLOSE)
        assert parsing._last_answer_ascii(text) == scanned, text


def _moves_token_by_token(text: str) -> tuple[list[str], bool] | str:
    """`parse_moves` as its docstring states it, token by token (an independent reading): the moves and whether
    more than `MAX_MOVES` were given, or "error" for a text it must refuse."""
    from pettingllms.core.parsing import MAX_MOVES

    words = {"up": "U", "down": "D", "left": "L", "right": "R"}
    moves = []
    for token in re.split(r"[\s,;]+", text.strip().strip("[](){}.'\"")):
        word = token.lower().strip("'\"[](){}.")
        if not token:
            continue
        if word in words:
            moves.append(words[word])
        elif word and all(letter in "udlr" for letter in word):
            moves += word.upper()
        else:
            return "error"
        if len(moves) > MAX_MOVES:
            return moves[:MAX_MOVES], True
    return (moves, False) if moves else "error"


@settings(max_examples=3000, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["U", "d", "L", "r", "UURD", "up", "Left", " ", ",", ";", "\t", "\n", "x", "[", ".", "'"]
        ),
        max_size=12,
    ),
    st.integers(0, 210),
)
def test_parse_moves_reads_every_text_as_the_token_rule_does(pieces, repeat):
    """The letters-only fast path of `parse_moves` and its token loop give what the stated rule gives, on texts of
    letters and separators (the fast path), words and junk (the loop), and runs past `MAX_MOVES`."""
    from pettingllms.core.parsing import ParseError, parse_moves

    for text in ("".join(pieces), "".join(pieces) + " R" * repeat):
        try:
            parsed = parse_moves(text)
        except ParseError:
            parsed = "error"
        assert parsed == _moves_token_by_token(text), text
