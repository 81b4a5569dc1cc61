"""The one shape every math problem takes, whatever dataset it came from: :class:`MathProblem`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_PROBLEM_KEYS = ("problem", "question")


@dataclass(frozen=True)
class MathProblem:
    """A math problem with one gold final answer.

    ``id`` is ``"<source>/<native id>"`` (a hash of the problem text where the dataset has no id);
    ``answer`` is the gold final answer as text, LaTeX allowed (grade it with
    ``pettingllms.data.math.grading``); ``difficulty`` is the dataset's own label, ``""`` when it has none.
    ValueError if ``id`` does not start with ``source + "/"`` or ``problem``/``answer`` is empty.
    """

    id: str
    source: str
    problem: str
    answer: str
    difficulty: str = ""

    def __post_init__(self) -> None:
        if not self.source or not self.id.startswith(self.source + "/"):
            raise ValueError(f"id={self.id!r} must start with {self.source + '/'!r}")
        if not self.problem.strip():
            raise ValueError(f"{self.id}: empty problem text")
        if not self.answer.strip():
            raise ValueError(f"{self.id}: empty answer")


def content_id(text: str) -> str:
    """A stable native id for a problem without one: 12 hex digits of the BLAKE2b hash of its text."""
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def answer_text(value: Any) -> str:
    """A gold answer as text: a str stripped, an int or float through ``str``; ValueError for anything else
    (bool, None, lists: a dataset with list answers must join them itself)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"an answer must be a string or a number, got {type(value).__name__}")


def problem_from_dict(d: Mapping[str, Any], *, source: str = "custom") -> MathProblem:
    """Build a problem from a mapping with the text under ``problem`` (or ``question``) and ``answer``.

    Optional keys: ``id`` (the native id; without one, :func:`content_id` of the text; an id that already
    starts with ``"<source>/"`` is kept as is, so ``dataclasses.asdict`` round-trips), ``source``
    (overrides the argument) and ``difficulty`` (made a str). ValueError naming the missing keys otherwise,
    or if the answer is not a string or a number.
    """
    problem_key = next((key for key in _PROBLEM_KEYS if key in d), None)
    missing = ([] if problem_key else ["problem|question"]) + ([] if "answer" in d else ["answer"])
    if missing:
        raise ValueError(
            f"not a math problem: missing {missing}; expected {{problem|question, answer}} and optional "
            f"{{id, source, difficulty}}, got keys {sorted(d)}"
        )
    source = str(d.get("source") or source)
    problem = str(d[problem_key])
    native = d.get("id")
    native_id = content_id(problem) if native is None or native == "" else str(native)
    difficulty = d.get("difficulty")
    return MathProblem(
        id=native_id if native_id.startswith(source + "/") else f"{source}/{native_id}",
        source=source,
        problem=problem,
        answer=answer_text(d["answer"]),
        difficulty="" if difficulty is None else str(difficulty),
    )
