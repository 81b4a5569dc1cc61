"""Math problems for LLM agents: one normalized type for AIME 2024/2025, OlympiadBench, MATH-500, GSM8K
and a seeded generator, and a grader for final answers.

``load_math_dataset(name, path=..., split=..., limit=...)`` returns a list of :class:`MathProblem`;
``grade(completion, problem.answer)`` says whether the completion's last ``\\boxed{...}`` is the answer.
"""

from pettingllms.data.math.generator import KINDS, generate_problem, generate_split
from pettingllms.data.math.grading import extract_boxed, grade, is_equivalent
from pettingllms.data.math.loaders import DATASETS, load_math_dataset
from pettingllms.data.math.schema import MathProblem, problem_from_dict

__all__ = [
    "DATASETS",
    "KINDS",
    "MathProblem",
    "extract_boxed",
    "generate_problem",
    "generate_split",
    "grade",
    "is_equivalent",
    "load_math_dataset",
    "problem_from_dict",
]
