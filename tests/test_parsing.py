"""Parsing untrusted completions: the linear tag scanner agrees with the regex it replaced, and stays linear."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pettingllms.parsing import delimited, extract_answer, extract_python_block

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
