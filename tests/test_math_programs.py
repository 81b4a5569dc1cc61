"""The math tool programs (pettingllms.warmstart.math_programs): for generated problems of every kind and
difficulty, the written program run in math-v0's sandbox prints the generator's exact answer, and its imperfect
variants mostly do not."""

import numpy as np
import pytest
from markers import needs_bwrap

import pettingllms
from pettingllms.data.math.generator import DIFFICULTIES, KINDS, generate_problem
from pettingllms.warmstart.math_programs import VARIANTS, UnknownProblem, write_program
from pettingllms.warmstart.tool_programs import as_tool_call


def tool_answer_is_right(env, problem, program: str) -> bool:
    """The reasoner gives the gold answer; the episode ends in success iff the tool's program agrees."""
    env.reset(seed=0, options={"problem": {"problem": problem.problem, "answer": problem.answer}})
    env.step(f"\\boxed{{{problem.answer}}}")
    env.step(as_tool_call(program))
    return bool(env.terminations["tool"] and env.unwrapped.success)


@needs_bwrap
def test_every_kind_and_difficulty_gets_a_program_that_prints_its_exact_answer():
    env = pettingllms.make("math-v0", workflow="mas")
    rng = np.random.default_rng(7)
    problems = [
        generate_problem(rng, kind=k, difficulty=d) for k in KINDS for d in DIFFICULTIES for _ in range(2)
    ]
    right = {name: 0 for name in ("correct", *VARIANTS)}
    for problem in problems:
        program = write_program(problem.problem)
        right["correct"] += tool_answer_is_right(env, problem, program)
        for name, corrupt in VARIANTS.items():
            assert corrupt(program) != program
            right[name] += tool_answer_is_right(env, problem, corrupt(program))
    assert right["correct"] == len(problems) == 36
    assert all(
        right[name] <= 6 for name in VARIANTS
    )  # an imperfect program is right by chance at most 1 in 6
    env.close()


def test_programs_are_short_templates_that_carry_the_problems_numbers():
    assert write_program("Solve for $x$: $-6x + 19 = -2x + 22$.") == (
        'from sympy import *\nx = symbols("x")\nprint(solve(Eq(-6*x + 19, -2*x + 22), x)[0])\n'
    )
    assert write_program("What is the remainder when $2^{22}$ is divided by $5$?") == "print(pow(2, 22, 5))\n"
    multiples = write_program("How many integers from $1$ to $822$ are divisible by none of $3$ and $12$?")
    assert (
        multiples
        == "print(len([number for number in range(1, 822 + 1) if not (number % 3 == 0 or number % 12 == 0)]))\n"
    )
    assert VARIANTS["swapped"](multiples).count("if (") == 1  # "none" becomes "at least one"
    assert VARIANTS["miscopied"]("print(pow(2, 22, 5))\n") == "print(pow(3, 22, 5))\n"


def test_a_problem_no_template_writes_is_a_named_error():
    with pytest.raises(UnknownProblem, match="not a generated math-v0 problem"):
        write_program("Natalia sold clips to 48 of her friends in April. How many clips did she sell?")
