"""Parsing model completions: answer tags, move lists and fenced code blocks.

These functions read untrusted text and never evaluate it. Malformed input raises `ParseError`, whose message
is written for the model (it is shown back in the next observation).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator

from pettingllms.core.errors import PettingLLMsError

MAX_MOVES = 200
"""At most this many moves are read from one answer; the rest is ignored (and reported)."""

_ANSWER_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
_CODE_OPEN = re.compile(r"```[ \t]*(?:python3?|py)[ \t]*\r?\n", re.IGNORECASE)
_CODE_CLOSE = re.compile(r"```")
_MOVE_WORDS = {"up": "U", "down": "D", "left": "L", "right": "R", "u": "U", "d": "D", "l": "L", "r": "R"}
_SEPARATORS = re.compile(r"[\s,;]+")
_LETTERS_ONLY = re.compile(r"[\s,;]*[UDLRudlr][UDLRudlr\s,;]*")
_LETTER = re.compile(r"[UDLR]")


class ParseError(PettingLLMsError, ValueError):
    """The text does not have the expected form; the message says what was expected."""


def delimited(text: str, opener: re.Pattern, closer: re.Pattern) -> Iterator[str]:
    """Yield the text between each `opener` and the first `closer` after it, left to right, without overlap.

    The same spans as `re.findall(opener + "(.*?)" + closer)` with DOTALL, in time linear in `len(text)`: the
    regex form restarts its scan for a closer at every opener, so a completion of many unclosed openers took
    quadratic time (a 64 KB one, ~13 s). An opener with no closer after it ends the scan.

    >>> list(delimited("<a>1</a> <a>2</a> <a>3", re.compile("<a>"), re.compile("</a>")))
    ['1', '2']
    """
    pos = 0
    while (start := opener.search(text, pos)) is not None:
        end = closer.search(text, start.end())
        if end is None:
            return
        yield text[start.end() : end.start()]
        pos = end.end()


def last_delimited(text: str, opener: re.Pattern, closer: re.Pattern) -> str | None:
    """The last span `delimited` yields, or None when there is none."""
    last = deque(delimited(text, opener, closer), maxlen=1)
    return last[0] if last else None


def extract_answer(text: str) -> str | None:
    """Return the content of the last complete `<answer>...</answer>` (tags case-insensitive), or None.

    >>> extract_answer("think... <answer>U R</answer>")
    'U R'
    >>> extract_answer("<answer>A </ANSWER> B</answer> <answer>C")
    'A'
    """
    if text.isascii():  # `lower` keeps every position: the span `last_delimited` finds, by string search
        content = _last_answer_ascii(text)
    else:
        content = last_delimited(text, _ANSWER_OPEN, _ANSWER_CLOSE)
    return None if content is None else content.strip()


def _last_answer_ascii(text: str) -> str | None:
    """`last_delimited(text, <answer>, </answer>)` for ASCII `text`, from the end: the last closer that an opener
    after the closer before it (the left-to-right scan's pairing) opens; None when no closer is opened."""
    lower, opener, closer = text.lower(), "<answer>", "</answer>"
    end = lower.rfind(closer)
    while end != -1:
        previous = lower.rfind(closer, 0, end)
        start = lower.find(opener, 0 if previous == -1 else previous + len(closer), end)
        if start != -1:
            return text[start + len(opener) : end]
        end = previous
    return None


def extract_python_block(text: str) -> str | None:
    """Return the body of the last closed ```python (or ```py) block, or None.

    >>> extract_python_block("```python\\nprint(1)\\n```")
    'print(1)\\n'
    """
    if "```" not in text:  # no opener can match: the common answer without code, at the cost of one search
        return None
    return last_delimited(text, _CODE_OPEN, _CODE_CLOSE)


def parse_moves(text: str) -> tuple[list[str], bool]:
    """Parse a move list into letters "U", "D", "L", "R"; return (moves, truncated).

    Accepts up/down/left/right or U/D/L/R (any case), separated by spaces, commas or semicolons; a run of
    letters such as "UURD" is read letter by letter. At most `MAX_MOVES` moves are kept; `truncated` says
    whether more were given. Raises `ParseError` naming the first unknown token, or if there is no move.

    >>> parse_moves("Up, right, d L")
    (['U', 'R', 'D', 'L'], False)
    >>> parse_moves("UURD")
    (['U', 'U', 'R', 'D'], False)
    """
    if _LETTERS_ONLY.fullmatch(text):  # the common answer, "U R R D": its letters, as the loop reads them
        moves = _LETTER.findall(text.upper())
        return moves[:MAX_MOVES], len(moves) > MAX_MOVES
    moves: list[str] = []
    for token in _SEPARATORS.split(text.strip().strip("[](){}.'\"")):
        if not token:
            continue
        word = token.lower().strip("'\"[](){}.")
        if word in _MOVE_WORDS:
            moves.append(_MOVE_WORDS[word])
        elif word and set(word) <= set("udlr"):
            moves.extend(letter.upper() for letter in word)
        else:
            shown = token if len(token) <= 20 else token[:20] + "..."
            raise ParseError(f"unknown move {shown!r}: use up/down/left/right or U/D/L/R")
        if len(moves) > MAX_MOVES:
            return moves[:MAX_MOVES], True
    if not moves:
        raise ParseError("the answer holds no move: write moves like <answer>U R R D</answer>")
    return moves, False
