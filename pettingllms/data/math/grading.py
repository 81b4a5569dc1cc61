"""Grading math answers: is a model's final answer equal to the gold one?

``extract_boxed`` finds the final answer of a completion, ``is_equivalent`` compares two final answers with
``math_verify``, ``grade`` does both. None of them raises on any string (only DependencyNotInstalled, when
math-verify is missing and an answer has to be parsed). Answers are read only by math-verify's LaTeX
extraction, i.e. the antlr-based ``latex2sympy`` parser; its plain-expression extraction, which hands text
to sympy's ``parse_expr`` (an ``eval`` underneath), is not used, and nothing here evaluates text.

How answers compare
-------------------
Both answers are normalized first (``latex.normalize_answer``: wrappers such as ``$...$`` and a
whole-answer ``\\boxed{...}`` removed, ``\\left``/``\\right`` and LaTeX spacing dropped so ``1\\,000`` reads
``1000``, ``\\dfrac``/``\\tfrac`` read as ``\\frac``). Equal normalized texts are equal: the fast path, which
also decides answers too large to parse. Otherwise each is wrapped in ``\\boxed{...}``, so that bare forms
(``3/4``, ``1,000``) parse as math-verify reads a boxed answer, and ``math_verify.verify(gold, candidate)``
decides, numerically or symbolically:

- ``0.75``, ``3/4``, ``\\frac{3}{4}``, ``\\dfrac34`` are all equal; ``\\frac{3}{4}`` and ``0.7`` are not.
  A float equals a rational when they agree to 6 decimals (``0.3333333`` equals ``\\frac13``, ``0.333``
  does not).
- ``1,000`` equals ``1000``: a comma before exactly three digits groups thousands. ``1,2`` is the set
  {1, 2} (so it equals ``2,1``), ``(1,2)`` an interval or a pair, ``\\{1,2\\}`` a set.
- ``x=2`` equals ``2`` (an assignment's right-hand side counts), both ways round.
- Percentages: ``75\\%`` equals both ``0.75`` and ``75``. This is math-verify's reading (the sign may be
  taken as a unit or as 1/100) and we keep it: gold answers write percentages both ways, and an answer with
  the sign names the quantity asked for either way.
- Plain words are compared as text after normalization, case-sensitively; a text that parses to nothing
  equals nothing but itself.

Time bounds and threads
-----------------------
Answers outside ``bounds.parsable`` (longer than ``bounds.MAX_ANSWER_CHARS``, brackets nested deeper than
``bounds.MAX_NESTING``, unbalanced braces, ...) are never parsed, and parsed answers outside
``bounds.tractable`` (``10^{10^{10}}``, unevaluated integrals, ...) or holding more than ``MAX_EXACT_DIGITS``
(1,000) digits of exact numbers (``exact_digits_bounded``: ``10^{1000}+1``, ``\\sqrt{10^{99990}+1}``,
``\\sin(10^{5000})``) never compared: all of them equal only an identical normalized text, so a correct
answer of more than 1,000 digits (``2^{4000}``) is graded correct only when it is written as the gold answer
is. The digit budget is far below ``bounds.MAX_DIGITS`` (100,000), which bounds the cost of computing a
power's digits but not what sympy does with the number next: it tests integers for primality and factors
radicands (``\\sqrt{n}`` tries to pull square factors out of ``n``), in time that grows with the cube of the
digits. ``\\sqrt{10^{99990}+1}`` passed ``tractable`` (its radicand has 99,991 digits) and then, against any
gold answer, took ~2 s in the main thread (the alarm) and never returned in a worker thread; at 1,000 digits
the worst case measured is under a second.

Beyond that, math-verify bounds each parse and each comparison with ``signal.alarm``, which works only in the
main thread (in any other thread math-verify raises ValueError instead). So ``timeout_seconds`` (whole
seconds, default ``DEFAULT_TIMEOUT_S``; a step that runs out counts as "not equal") is passed on in the main
thread, and ``None`` (no timeout) in every other thread. Consequences:

- In a worker thread nothing interrupts a comparison that passes the bounds but makes sympy's ``simplify``
  slow. Fuzzing found two families, each a particular pair of answers (neither answer is slow against
  ``7``): a logarithm against a large integer (``\\log(i)`` against ``99^{12}``) and nested powers with
  variables (``10^{y 99^{2*2_2}}+e`` against ``x+1``); neither returned within the 15 s and 200 s we
  waited. In the main thread the alarm stops both after ``timeout_seconds``.
- Even in the main thread the alarm only fires between Python bytecodes, so a single huge C-level integer
  operation would run to its end; the bounds exist to keep those out.
- For a hard bound, grade in a separate process that the caller kills at a deadline (a process pool whose
  workers grade in their main thread gets the alarm as well).
- In the main thread the alarm replaces the caller's SIGALRM handler and cancels any pending ``alarm`` for
  the duration of each step.

math-verify is called with ``raise_on_error=False``: it turns every parser or sympy error, and its own
``TimeoutException``, into "no parse" / "not equal", so nothing needs catching here. Parses are memoized
(``functools.lru_cache``), so re-grading the same gold answer is cheap.
"""

from __future__ import annotations

import functools
import threading
from types import ModuleType

from pettingllms.core.errors import DependencyNotInstalled
from pettingllms.data.math.bounds import (
    MAX_EXACT_DIGITS,
    exact_digits,
    exact_digits_bounded,
    parsable,
    tractable,
)
from pettingllms.data.math.latex import extract_boxed, has_box, normalize_answer

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_EXACT_DIGITS",
    "exact_digits",
    "exact_digits_bounded",
    "extract_boxed",
    "grade",
    "is_equivalent",
    "normalize_answer",
    "require_math_verify",
]

DEFAULT_TIMEOUT_S = 2
"""Seconds allowed for each parse and each comparison (main thread only)."""


def is_equivalent(candidate: str, gold: str, *, timeout_seconds: int | None = DEFAULT_TIMEOUT_S) -> bool:
    """True iff the final answer ``candidate`` equals the final answer ``gold``; see the module docstring.

    Both are bare answers (LaTeX or plain text), not completions: use ``grade`` for those. The relation is
    reflexive on non-empty answers but, like math-verify's, not always symmetric (``gold`` is the
    reference). ``timeout_seconds`` is a positive int or None, and applies only in the main thread
    (ValueError otherwise). Never raises for any two strings; an empty answer equals nothing.
    """
    if timeout_seconds is not None and (
        not isinstance(timeout_seconds, int) or isinstance(timeout_seconds, bool) or timeout_seconds < 1
    ):
        raise ValueError(f"timeout_seconds must be a positive int or None, got {timeout_seconds!r}")
    candidate_text, gold_text = normalize_answer(candidate), normalize_answer(gold)
    if not candidate_text or not gold_text:
        return False
    if candidate_text == gold_text:
        return True
    if not (parsable(candidate_text) and parsable(gold_text)):
        return False
    timeout = timeout_seconds if threading.current_thread() is threading.main_thread() else None
    gold_parsed, candidate_parsed = _parse(gold_text, timeout), _parse(candidate_text, timeout)
    if not gold_parsed or not candidate_parsed:
        return False
    if not all(tractable(item) and exact_digits_bounded(item) for item in gold_parsed + candidate_parsed):
        return False
    return _math_verify().verify(
        list(gold_parsed), list(candidate_parsed), timeout_seconds=timeout, raise_on_error=False
    )


def grade(completion_or_answer: str, gold: str, *, timeout_seconds: int | None = DEFAULT_TIMEOUT_S) -> bool:
    """True iff the final answer of a completion equals ``gold``.

    The final answer is the content of the last ``\\boxed{...}`` when the text opens one (False if that
    box is never closed), else the whole text, read as a bare answer. See ``is_equivalent``.
    """
    if not has_box(completion_or_answer):
        return is_equivalent(completion_or_answer, gold, timeout_seconds=timeout_seconds)
    answer = extract_boxed(completion_or_answer)
    return answer is not None and is_equivalent(answer, gold, timeout_seconds=timeout_seconds)


@functools.lru_cache(maxsize=8192)
def _parse(answer: str, timeout: int | None) -> tuple[object, ...]:
    """math-verify's reading of ``answer`` as the content of a box: sympy objects and the matched text,
    () when nothing parses."""
    math_verify = _math_verify()
    parsed = math_verify.parse(
        f"\\boxed{{{answer}}}",
        extraction_config=[math_verify.LatexExtractionConfig()],
        parsing_timeout=timeout,
        raise_on_error=False,
    )
    return tuple(parsed)


def require_math_verify() -> None:
    """Raise DependencyNotInstalled (naming the extra) unless math-verify can be imported."""
    _math_verify()


def _math_verify() -> ModuleType:
    """The ``math_verify`` module, imported on first use; DependencyNotInstalled if it is missing."""
    try:
        import math_verify
    except ImportError as error:
        raise DependencyNotInstalled(
            "grading math answers needs the `math-verify` package (with its antlr4 4.13 runtime): "
            "pip install 'pettingllms[math]' (or pip install 'math-verify[antlr4_13_2]')"
        ) from error
    return math_verify
