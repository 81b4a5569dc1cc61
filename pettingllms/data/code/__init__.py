"""Coding problems for LLM agents: one normalized type for HumanEval, MBPP, APPS, CodeContests,
LiveCodeBench and the project's bundled training set.

``load_code_dataset(name, path=..., split=..., limit=...)`` returns a list of :class:`CodeProblem`;
``check_judgement`` builds the sandbox run that judges a function-kind answer (the verdict is decided outside
the candidate's process; ``read_verdicts`` reads it), ``outputs_match`` decides a stdio test. Nothing here
executes code; run programs with ``pettingllms.sandbox``.
"""

from pettingllms.data.code.judge import check_judgement, read_verdicts
from pettingllms.data.code.loaders import DATASETS, load_code_dataset
from pettingllms.data.code.schema import (
    CodeProblem,
    SkippedRow,
    TestCase,
    outputs_match,
    problem_from_dict,
)

__all__ = [
    "DATASETS",
    "CodeProblem",
    "SkippedRow",
    "TestCase",
    "check_judgement",
    "load_code_dataset",
    "outputs_match",
    "problem_from_dict",
    "read_verdicts",
]
