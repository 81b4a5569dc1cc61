"""Coding problems for LLM agents: one normalized type for HumanEval, MBPP, APPS, CodeContests,
LiveCodeBench and the project's bundled training set.

``load_code_dataset(name, path=..., split=..., limit=...)`` returns a list of :class:`CodeProblem`;
``check_program`` builds the program that tests a function-kind answer, ``outputs_match`` decides a
stdio test. Nothing here executes code; run programs with ``pettingllms.sandbox``.
"""

from pettingllms.data.code.loaders import DATASETS, load_code_dataset
from pettingllms.data.code.schema import (
    CodeProblem,
    SkippedRow,
    TestCase,
    check_program,
    outputs_match,
    problem_from_dict,
)

__all__ = [
    "DATASETS",
    "CodeProblem",
    "SkippedRow",
    "TestCase",
    "check_program",
    "load_code_dataset",
    "outputs_match",
    "problem_from_dict",
]
