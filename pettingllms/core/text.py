"""Text observations and text spaces shared by every environment.

PettingZoo's `api_test` compares an observation's `dtype` with its space's `dtype`, which a plain `str` lacks;
`TextObservation` is a `str` subclass that carries `dtype` and is otherwise an ordinary string (it compares,
hashes and slices like one, and `str(obs)` gives a plain `str`).

Observation spaces are `PrintableText`: every printable character of Unicode's Basic Multilingual Plane plus
newline and tab. Observations are passed through `sanitize` so that they always lie in their space: carriage
returns are dropped, and every other character outside the charset (control characters, characters beyond
U+FFFF) becomes U+FFFD. Action spaces are `AnyText`: every `str` is a legal action (`step` accepts any string and
turns unusable text into a penalty), so the space contains every string, of any length and any characters; its
`sample()` draws short printable ASCII strings, cheaply.
"""

from __future__ import annotations

import copy
import functools
import re
import string

import numpy as np
from gymnasium import spaces

OBSERVATION_MAX_CHARS = 32_768
"""Upper bound on the length of any observation of any environment in this package."""

ACTION_SAMPLE_MAX_CHARS = 64
"""Longest string `AnyText.sample()` draws (the space itself contains strings of any length)."""

REPLACEMENT_CHAR = "\ufffd"


class TextObservation(str):
    """A `str` with a numpy `dtype`, so that PettingZoo's checkers accept text observations."""

    __slots__ = ()
    dtype = np.dtype(str)


@functools.cache
def printable_charset() -> str:
    """Every printable character of the Basic Multilingual Plane, plus newline and tab (computed once)."""
    return "\n\t" + "".join(c for c in map(chr, range(0x10000)) if c.isprintable())


@functools.cache
def _outside_charset() -> re.Pattern[str]:
    charset = frozenset(printable_charset())
    bad = [code for code in range(0x10000) if chr(code) not in charset]
    ranges: list[str] = []
    start = prev = bad[0]
    for code in bad[1:] + [-2]:
        if code != prev + 1:
            ranges.append(f"\\U{start:08x}" if start == prev else f"\\U{start:08x}-\\U{prev:08x}")
            start = code
        prev = code
    return re.compile("[" + "".join(ranges) + "\U00010000-\U0010ffff]")


_ASCII_OUTSIDE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def sanitize(text: str) -> str:
    """Return `text` with every character inside `printable_charset()` (CR dropped, others -> U+FFFD)."""
    if text.isascii() and _ASCII_OUTSIDE.search(text) is None:
        return text
    return _outside_charset().sub(REPLACEMENT_CHAR, text.replace("\r\n", "\n").replace("\r", ""))


def truncate(text: str, limit: int, marker: str = "\n...[truncated]") -> str:
    """Return `text` cut to at most `limit` characters, ending with `marker` when something was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))] + marker


class _SharesTablesWhenCopied:
    """A text space whose deep copy shares its charset lookup tables (never mutated) and copies only its random
    generator: environments are copied for every sampled candidate, and copying the tables dominated a copy."""

    def __deepcopy__(self, memo: dict):
        clone = copy.copy(self)
        clone._np_random = copy.deepcopy(self._np_random, memo)
        return clone


@functools.cache
def _charset_tables() -> tuple[frozenset[str], tuple[str, ...], dict[str, np.int32], str]:
    """The lookup tables of `gymnasium.spaces.Text` for `printable_charset()`, built as `Text` builds them."""
    prototype = spaces.Text(1, charset=printable_charset())
    return prototype._char_set, prototype._char_list, prototype._char_index, prototype._char_str


class PrintableText(_SharesTablesWhenCopied, spaces.Text):
    """`gymnasium.spaces.Text` over `printable_charset()` whose deep copy shares the (immutable) charset tables.

    A plain `Text` over ~55k characters builds ~10 MB of lookup tables and copies them on `deepcopy`;
    environments are built and copied for every sampled candidate, so every `PrintableText` shares one set of
    tables (they are never mutated) and a copy copies only the random generator.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | None = None):
        tables = _charset_tables()  # built once per process: ~10 MB that every space shares
        self._char_set, self._char_list, self._char_index, self._char_str = tables
        self.min_length, self.max_length = int(min_length), int(max_length)
        spaces.Space.__init__(self, dtype=str, seed=seed)

    def __repr__(self) -> str:
        return (
            f"PrintableText({self.min_length}, {self.max_length}, charset=<the {len(self._char_str)} printable "
            "characters of Unicode's Basic Multilingual Plane, newline and tab>)"
        )

    def sample(self, mask=None, probability=None) -> str:
        """A uniform random string of the charset; with a `mask` or `probability`, gymnasium's own sampling."""
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        length = int(self.np_random.integers(self.min_length, self.max_length + 1))
        picks = self.np_random.integers(0, len(self._char_str), size=length)
        return "".join(map(self._char_str.__getitem__, picks.tolist()))

    def __reduce__(self):
        # pickled (an env shipped to a worker process): lengths and generator only; the tables are rebuilt (once
        # per process) on the other side instead of travelling as ~2 MB per space
        return (_rebuild_printable_text, (self.max_length, self.min_length, self._np_random))


def _rebuild_printable_text(max_length: int, min_length: int, np_random) -> PrintableText:
    space = PrintableText(max_length, min_length=min_length)
    space._np_random = np_random
    return space


class AnyText(_SharesTablesWhenCopied, spaces.Text):
    """The action space of every agent: it contains every `str` (any length, any characters), because `step`
    accepts any string; `sample()` draws printable ASCII strings of at most `sample_max_length` characters.

    A framework that validates actions (`AssertOutOfBoundsWrapper`, `space.contains`) therefore accepts every
    completion a model can produce, `\r\n`, emoji and 100,000-character answers included.
    """

    SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " \n"

    def __init__(self, sample_max_length: int = ACTION_SAMPLE_MAX_CHARS, *, seed: int | None = None):
        super().__init__(max_length=sample_max_length, min_length=0, charset=self.SAMPLE_CHARSET, seed=seed)

    def contains(self, x) -> bool:
        return isinstance(x, str)

    def __repr__(self) -> str:
        return f"AnyText(any str; sample() draws up to {self.max_length} printable ASCII characters)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyText) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash((AnyText, self.max_length))
