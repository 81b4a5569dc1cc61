"""One converter per dataset: a row in the dataset's own schema -> ``MathProblem``.

| dataset | fields read | id |
|---|---|---|
| ``aime2024`` (Maxwell-Jia/AIME_2024) | ``ID``, ``Problem``, ``Answer`` (int) | ``aime2024/<ID>`` |
| ``aime2025`` (yentinglin/aime_2025, opencompass/AIME2025) | ``problem`` or ``question``, ``answer``, optional ``id`` | ``aime2025/<id>``, else a hash of the text |
| ``olympiadbench`` (Hothan/OlympiadBench) | ``id``, ``question``, optional ``context``, ``final_answer`` (list) | ``olympiadbench/<id>`` |
| ``math500`` (HuggingFaceH4/MATH-500) | ``unique_id``, ``problem``, ``answer``, ``level`` | ``math500/<unique_id>`` |
| ``gsm8k`` (openai/gsm8k, config main) | ``question``, ``answer`` (the number after ``####``) | a hash of the question |

Solutions and other metadata are not kept. A row without a field the table names raises KeyError; a gsm8k
answer without ``####``, or an empty problem or answer, raises ValueError.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pettingllms.data.math.schema import MathProblem, answer_text, content_id, problem_from_dict

Row = Mapping[str, Any]


def aime2024(row: Row) -> MathProblem:
    return MathProblem(
        id=f"aime2024/{row['ID']}",
        source="aime2024",
        problem=row["Problem"],
        answer=answer_text(row["Answer"]),
    )


def aime2025(row: Row) -> MathProblem:
    return problem_from_dict(row, source="aime2025")


def olympiadbench(row: Row) -> MathProblem:
    """The answer is the ``final_answer`` items without their ``$...$`` delimiters, joined with ", " (the
    form OlympiadBench asks multiple-answer problems to be answered in); ``context``, when present, comes
    before the question."""
    answers = [answer_text(item).strip().strip("$").strip() for item in row["final_answer"]]
    context = row.get("context") or ""
    return MathProblem(
        id=f"olympiadbench/{row['id']}",
        source="olympiadbench",
        problem=f"{context}\n\n{row['question']}" if context else row["question"],
        answer=", ".join(answers),
        difficulty=row.get("difficulty") or "",
    )


def math500(row: Row) -> MathProblem:
    return MathProblem(
        id=f"math500/{row['unique_id']}",
        source="math500",
        problem=row["problem"],
        answer=answer_text(row["answer"]),
        difficulty=str(row["level"]),
    )


def gsm8k(row: Row) -> MathProblem:
    """The answer is the text after the last ``####`` of the worked solution, without thousands commas."""
    solution = row["answer"]
    if "####" not in solution:
        raise ValueError(f"gsm8k answer without '####': {solution[-80:]!r}")
    return MathProblem(
        id=f"gsm8k/{content_id(row['question'])}",
        source="gsm8k",
        problem=row["question"],
        answer=solution.rsplit("####", 1)[1].strip().replace(",", ""),
    )


CONVERTERS: dict[str, Callable[[Row], MathProblem]] = {
    "aime2024": aime2024,
    "aime2025": aime2025,
    "olympiadbench": olympiadbench,
    "math500": math500,
    "gsm8k": gsm8k,
}
