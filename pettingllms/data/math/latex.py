"""Reading final answers as text: the last ``\\boxed{...}`` of a completion, and a canonical spelling.

Nothing here parses mathematics; it only finds and tidies the text that ``grading`` hands to math-verify.
"""

from __future__ import annotations

import re

_BOX_OPEN = re.compile(r"\\(?:boxed|fbox)\s*\{")
_WRAPPERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_DROP = re.compile(
    r"\\(?:left|right)(?:\.|(?![A-Za-z]))|\\displaystyle(?![A-Za-z])|\\[,;:! ]|\\q?quad(?![A-Za-z])|~"
)
_FRAC = re.compile(r"\\[dt]frac(?![A-Za-z])")
_SPACE_RUN = re.compile(r"\s+")
_INSIGNIFICANT_SPACE = re.compile(r"(?<![A-Za-z0-9]) | (?![A-Za-z0-9])")


def has_box(text: str) -> bool:
    """Whether ``text`` opens a ``\\boxed{`` or ``\\fbox{`` anywhere (closed or not)."""
    return _BOX_OPEN.search(text) is not None


def extract_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, or None.

    Nested braces are matched (``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``; escaped ``\\{`` and ``\\}``
    do not count). None when there is no box or when the last box is never closed (an earlier closed box is
    not used: the final answer is the last one the text started). Linear in ``len(text)``.

    >>> extract_boxed(r"so \\boxed{1}, or rather \\boxed{\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    """
    start = None
    for match in _BOX_OPEN.finditer(text):
        start = match.end()
    if start is None:
        return None
    end = closing_brace(text, start)
    return None if end is None else text[start:end]


def closing_brace(text: str, start: int) -> int | None:
    """Index of the ``}`` that closes a ``{`` opened just before ``start``, or None if none does.

    A backslash escapes the next character, so ``\\{`` and ``\\}`` are not counted."""
    depth = 1
    i = start
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def normalize_answer(text: str) -> str:
    """A canonical spelling of a final answer, for exact comparison and for parsing.

    Removes surrounding spaces, a trailing period and whole-text wrappers (``$...$``, ``$$...$$``,
    ``\\(...\\)``, ``\\[...\\]``, ``\\boxed{...}``, ``\\fbox{...}``, repeatedly); drops ``\\left``,
    ``\\right`` (with ``\\left.``/``\\right.``), ``\\displaystyle``, ``~`` and LaTeX spacing (``\\,`` ``\\;``
    ``\\:`` ``\\!`` ``\\ `` ``\\quad`` ``\\qquad``); reads ``\\dfrac``/``\\tfrac`` as ``\\frac``; keeps a space
    only between two letters or digits.

    >>> normalize_answer(r"$\\dfrac{1}{2}$.")
    '\\\\frac{1}{2}'
    >>> normalize_answer(r"\\boxed{1\\,000}")
    '1000'
    """
    text = _strip_wrappers(text)
    text = _FRAC.sub(r"\\frac", _DROP.sub("", text))
    text = _INSIGNIFICANT_SPACE.sub("", _SPACE_RUN.sub(" ", text))
    return _strip_wrappers(text)


def _strip_wrappers(text: str) -> str:
    previous = None
    while text != previous:
        previous = text
        text = text.strip().removesuffix(".").rstrip()
        for opener, closer in _WRAPPERS:
            if len(text) >= len(opener) + len(closer) and text.startswith(opener) and text.endswith(closer):
                text = text[len(opener) : -len(closer)]
                break
        else:
            match = _BOX_OPEN.match(text)
            if match is not None and closing_brace(text, match.end()) == len(text) - 1:
                text = text[match.end() : -1]
    return text
