"""Tests for pettingllms.data.math: answer grading, the problem generator and the dataset loaders."""

import dataclasses
import math
import re
import sys
import threading
import time
from collections.abc import Callable
from fractions import Fraction
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from latex2sympy2_extended import latex2sympy

from pettingllms.core.errors import ConfigError, DependencyNotInstalled
from pettingllms.core.splits import split_of
from pettingllms.data.math import (
    KINDS,
    MathProblem,
    extract_boxed,
    generate_problem,
    generate_split,
    grade,
    is_equivalent,
    load_math_dataset,
    problem_from_dict,
)
from pettingllms.data.math.bounds import MAX_ANSWER_CHARS
from pettingllms.data.math.latex import normalize_answer
from pettingllms.data.math.schema import content_id

FIXTURES = Path(__file__).parent / "fixtures" / "math"


# --- extract_boxed ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"The answer is \boxed{42}.", "42"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"\boxed{\frac{\sqrt{3}}{2}} done", r"\frac{\sqrt{3}}{2}"),
        (r"first \boxed{1}, then \boxed{2}", "2"),
        (r"\boxed{1} and finally \fbox{x+1}", "x+1"),
        (r"\boxed {7}", "7"),
        (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),
        (r"\boxed{\left\{ x \right\}}", r"\left\{ x \right\}"),
        (r"\boxed{\boxed{3}}", "3"),
        (r"\boxed{}", ""),
        (r"\boxed{1} then \boxed{\frac{1}{2}", None),
        (r"\boxed{\frac{1}{2}", None),
        (r"\boxed{", None),
        ("no box at all", None),
        ("", None),
        (r"\boxedx{1}", None),
    ],
)
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


def test_extract_boxed_is_linear_on_long_text():
    text = r"\boxed{" * 20_000 + "1" + "}" * 20_000 + " tail " * 10_000
    start = time.perf_counter()
    assert extract_boxed(text) == "1"
    assert time.perf_counter() - start < 2


def test_normalize_answer():
    assert normalize_answer(r"  $\dfrac{3}{4}$. ") == r"\frac{3}{4}"
    assert normalize_answer(r"\boxed{1\,000}") == "1000"
    assert normalize_answer(r"\left( 3, \frac{\pi}{2} \right)") == r"(3,\frac{\pi}{2})"
    assert normalize_answer(r"\pi r^2") == r"\pi r^2"  # a space between letters is kept


# --- is_equivalent and grade ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("candidate", "gold"),
    [
        ("0.75", r"\frac{3}{4}"),
        ("3/4", r"\frac{3}{4}"),
        (r"\dfrac34", r"\frac{3}{4}"),
        (r"\tfrac{3}{4}", "0.75"),
        ("3/4", "0.75"),
        (r"$\frac{3}{4}$", "3/4"),
        (r"\boxed{0.75}", "3/4"),
        ("1,000", "1000"),
        ("1000", "1,000"),
        (r"1\,000", "1000"),
        ("1,234,567", "1234567"),
        ("x=2", "2"),
        ("2", "x=2"),
        (r"\frac{-3}{4}", r"-\frac{3}{4}"),
        ("-0.75", r"-\frac34"),
        ("10.0", "10"),
        ("5.", "5"),
        (r"2\sqrt{2}", r"\sqrt{8}"),
        (r"\sqrt2", r"\sqrt{2}"),
        ("(x+1)^2", "x^2+2x+1"),
        ("(3, \\frac{\\pi}{2})", r"\left( 3, \frac{\pi}{2} \right)"),
        ("2, 3", "3, 2"),
        (r"\text{(A)}", "A"),
        (r"5\text{ cm}", "5"),
        (r"45^\circ", "45"),
        ("0.3333333", r"\frac{1}{3}"),
    ],
)
def test_equivalent_forms(candidate, gold):
    assert is_equivalent(candidate, gold)


@pytest.mark.parametrize(
    ("candidate", "gold"),
    [
        ("0.7", r"\frac{3}{4}"),
        (r"\frac{4}{3}", r"\frac{3}{4}"),
        ("0.333", r"\frac{1}{3}"),
        ("-5", "5"),
        ("1001", "1,000"),
        ("(2, 1)", "(1, 2)"),
        ("x+1", "x-1"),
        ("", "5"),
        ("5", ""),
        ("", ""),
        ("   ", "   "),
        ("hello", "5"),
    ],
)
def test_different_answers(candidate, gold):
    assert not is_equivalent(candidate, gold)


def test_percent_reads_as_the_number_or_its_hundredth():
    """The documented decision: 75\\% equals both 0.75 and 75, in either role."""
    assert is_equivalent(r"75\%", "0.75")
    assert is_equivalent(r"75\%", "75")
    assert is_equivalent("75", r"75\%")
    assert is_equivalent("0.75", r"75\%")
    assert not is_equivalent(r"75\%", "7.5")


def test_grade_reads_the_last_box_or_the_whole_text():
    assert grade(r"so we get $x = 3/4$, i.e. \boxed{\frac{3}{4}}.", "0.75")
    assert grade(r"I first thought \boxed{2} but it is \boxed{3}", "3")
    assert not grade(r"I first thought \boxed{3} but it is \boxed{2}", "3")
    assert not grade(r"\boxed{3} and then \boxed{3", "3")  # the last box is never closed
    assert grade("3/4", r"\frac34")  # no box: the text is the answer
    assert not grade("The answer is 3/4", r"\frac34")  # ... and prose is not an answer


@pytest.mark.parametrize(
    "garbage",
    [
        "{" * 5000,
        "}" * 5000,
        r"\boxed{" * 300 + "1" + "}" * 300,
        "{" * 400 + "1" + "}" * 400,
        r"\frac{" * 200 + "1" + "}{2}" * 200,
        "(" * 50 + "1" + ")" * 50,
        "9" * 100_000,
        "x^" * 1000,
        r"\\\\\\",
        "$$$$",
        r"\left(\right)",
        r"\frac{1}{0}",
        "\x00\udcff\u202e",
        r"\begin{pmatrix}1 & 2\end{pmatrix}",
    ],
)
def test_hostile_answers_never_raise(garbage):
    start = time.perf_counter()
    assert not is_equivalent(garbage, "2")
    assert not is_equivalent("2", garbage)
    assert is_equivalent(garbage, garbage) == bool(normalize_answer(garbage))
    assert not grade(garbage, "2")
    assert time.perf_counter() - start < 10


_LATEX_ISH = st.text(alphabet="0123456789+-*/^_{}()[]|=<>.,!%$ \\abcdefrqstxyz", max_size=80)


@settings(max_examples=300, deadline=None)
@given(
    candidate=st.one_of(st.text(max_size=300), _LATEX_ISH), gold=st.one_of(st.text(max_size=40), _LATEX_ISH)
)
def test_arbitrary_text_never_raises(candidate, gold):
    assert isinstance(is_equivalent(candidate, gold), bool)
    assert isinstance(grade(candidate, gold), bool)


@pytest.mark.parametrize(
    "huge",
    [
        "10^{10^{10}}",
        "2^{2^{2^{2^{10}}}}",
        r"\left(\frac{1}{2}\right)^{10^{10}}",
        "(10^{100})!",
        r"\binom{10^{10^{9}}}{2}",
        r"\gcd(10^{10^9}, 3)",
        r"\binom{99999999999999}{50000}",
        r"\sum_{k=1}^{10^{7}} \sin(k)",
        r"\int_0^1 x^{10^{9}} dx",
        "10^{|123456789|}",
        r"\sin(y)^{99999}",
        r"\begin{pmatrix}10^{10^{10}} & 1\end{pmatrix}",
    ],
)
def test_huge_values_are_refused_fast_in_a_worker_thread(huge):
    """In a non-main thread there is no alarm; the bounds must keep these from reaching sympy."""
    results: list[bool] = []
    worker = threading.Thread(target=lambda: results.append(is_equivalent(huge, "1")), daemon=True)
    start = time.perf_counter()
    worker.start()
    worker.join(timeout=20)
    assert results == [False]
    assert time.perf_counter() - start < 5
    assert is_equivalent(huge, huge)  # identical text is still equal (the fast path)


def test_grading_works_in_threads():
    """math-verify's alarm-based timeout raises ValueError outside the main thread; we pass None there."""
    pairs = [
        ("0.75", r"\frac34", True),
        ("x=2", "2", True),
        ("0.7", r"\frac34", False),
        ("1,000", "1000", True),
    ]
    results: dict[int, bool] = {}

    def work(index: int, candidate: str, gold: str) -> None:
        results[index] = is_equivalent(candidate, gold)

    threads = [threading.Thread(target=work, args=(i, c, g)) for i, (c, g, _) in enumerate(pairs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == {i: expected for i, (_, _, expected) in enumerate(pairs)}


def test_text_never_reaches_sympy_parse_expr(monkeypatch):
    """Only the LaTeX parser reads answers; sympy's parse_expr (eval-based) must never see model text."""

    def refuse(expression: str) -> None:
        raise AssertionError(f"parse_expr called on {expression!r}")

    monkeypatch.setattr("math_verify.parser.parse_expr_cached", refuse)
    assert is_equivalent("17/68", "0.25") and is_equivalent("(2+3)*4 - 1", "19")
    assert not is_equivalent("__import__('os').getcwd()", "1") and not is_equivalent("2**3**4", "8")


@pytest.mark.parametrize("timeout", [0, -1, 1.5, True])
def test_bad_timeout_is_refused(timeout):
    with pytest.raises(ValueError, match="timeout_seconds"):
        is_equivalent("1", "2", timeout_seconds=timeout)


def test_answers_longer_than_the_bound_compare_as_text():
    long_answer = "1+" * MAX_ANSWER_CHARS + "1"
    assert is_equivalent(long_answer, long_answer + " ")
    assert not is_equivalent(long_answer, str(MAX_ANSWER_CHARS + 1))


def test_missing_math_verify_is_a_dependency_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "math_verify", None)
    with pytest.raises(DependencyNotInstalled, match="math-verify"):
        is_equivalent("0.123456789", r"\frac{17}{23}")
    assert is_equivalent("7", "7")  # the fast path needs no parser


# --- the generator ----------------------------------------------------------------------------------

_FRACTION = re.compile(r"(-?)\\frac\{(\d+)\}\{(\d+)\}")


def value_of(answer: str) -> Fraction:
    """The Fraction a canonical generated answer spells (an integer or [-]\\frac{p}{q})."""
    match = _FRACTION.fullmatch(answer)
    if match is None:
        return Fraction(int(answer))
    sign, numerator, denominator = match.groups()
    return Fraction(int(numerator), int(denominator)) * (-1 if sign else 1)


def sample_problems(per_cell: int = 4) -> list[MathProblem]:
    rng = np.random.default_rng(2510)
    return [
        generate_problem(rng, kind=kind, difficulty=difficulty)
        for kind in KINDS
        for difficulty in (1, 2, 3)
        for _ in range(per_cell)
    ]


def other_forms(value: Fraction) -> list[str]:
    forms = [
        f"{value.numerator}/{value.denominator}",
        f"$\\dfrac{{{value.numerator}}}{{{value.denominator}}}$",
    ]
    if value.denominator == 1:
        forms.append(f"{value.numerator:,}")
    if value.denominator in (2, 4, 5, 8, 10, 20, 25):  # a terminating decimal
        forms.append(str(float(value)))
    return forms


def test_generated_answers_grade_equal_to_themselves_and_not_to_their_successor():
    for problem in sample_problems(per_cell=4):
        value = value_of(problem.answer)
        assert grade(rf"... so the answer is \boxed{{{problem.answer}}}.", problem.answer), problem
        assert is_equivalent(f"${problem.answer}$", problem.answer), problem
        for form in other_forms(value):
            assert is_equivalent(form, problem.answer), (form, problem)
        assert not is_equivalent(str(value + 1), problem.answer), problem


def test_generated_answers_are_canonical_and_ids_come_from_the_text():
    for problem in sample_problems():
        kind = problem.id.split("/")[1]
        assert problem.id == f"generated/{kind}/{content_id(problem.problem)}"
        assert problem.source == "generated" and problem.difficulty in ("1", "2", "3")
        assert re.fullmatch(r"-?\d+|-?\\frac\{\d+\}\{\d+\}", problem.answer), problem.answer
        match = _FRACTION.fullmatch(problem.answer)
        if match is not None:
            numerator, denominator = int(match[2]), int(match[3])
            assert denominator > 1 and math.gcd(numerator, denominator) == 1, problem.answer


def _inline_math(text: str) -> list[str]:
    return re.findall(r"\$([^$]+)\$", text)


def _integers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", text)]


def _fraction(value: sympy.Basic) -> Fraction:
    rational = sympy.Rational(value.doit())
    return Fraction(int(rational.p), int(rational.q))


def _check_expression(problem: MathProblem) -> Fraction:
    return _fraction(latex2sympy(_inline_math(problem.problem)[0]))


def _check_linear(problem: MathProblem) -> Fraction:
    equation = latex2sympy(_inline_math(problem.problem)[1]).doit()
    (root,) = sympy.solve(equation, sympy.Symbol("x"))
    return _fraction(root)


def _check_quadratic(problem: MathProblem) -> Fraction:
    polynomial = latex2sympy(_inline_math(problem.problem)[0].removesuffix(" = 0")).doit()
    roots = sorted(_fraction(r) for r in sympy.solve(polynomial, sympy.Symbol("x")))
    question = problem.problem.rsplit("What is ", 1)[1]
    if question.startswith("the sum"):
        return sum(roots, Fraction(0))
    if question.startswith("the product"):
        return roots[0] * roots[1]
    return roots[-1] if question.startswith("its larger") else roots[0]


def _check_divisibility(problem: MathProblem) -> Fraction:
    numbers = _integers(problem.problem)
    text = problem.problem
    if "greatest common divisor" in text:
        return Fraction(int(sympy.gcd(numbers[0], numbers[1])))
    if "least common multiple" in text:
        return Fraction(int(sympy.lcm(numbers[0], numbers[1])))
    if "positive divisors" in text:
        return Fraction(len(sympy.divisors(numbers[0])))
    if "largest prime factor" in text:
        return Fraction(max(sympy.factorint(numbers[0])))
    if "^" in text:
        base, exponent, modulus = numbers
        return Fraction(base**exponent % modulus)
    return Fraction(numbers[0] % numbers[1])


def _check_counting(problem: MathProblem) -> Fraction:
    text = problem.problem
    numbers = _integers(text)
    if "books" in text:
        k, n = numbers
        return Fraction(math.factorial(n) // math.factorial(n - k))
    if "committee" in text:
        k, n = numbers
        return Fraction(int(sympy.binomial(n, k)))
    if "rearranging" in text:
        word = text.rsplit(" ", 1)[1].rstrip("?")
        if len(word) <= 8:
            return Fraction(len(set(permutations(word))))
        return Fraction(_multinomial(word))
    _, n, *divisors = numbers
    hits = sum(1 for m in range(1, n + 1) if any(m % d == 0 for d in divisors))
    return Fraction(hits if "at least one" in text else n - hits)


def _multinomial(word: str) -> int:
    total = sympy.factorial(len(word))
    for letter in set(word):
        total /= sympy.factorial(word.count(letter))
    return int(total)


_CHECKS: dict[str, Callable[[MathProblem], Fraction]] = {
    "arithmetic": _check_expression,
    "fractions": _check_expression,
    "linear": _check_linear,
    "quadratic": _check_quadratic,
    "divisibility": _check_divisibility,
    "counting": _check_counting,
}


def test_generated_answers_match_an_independent_computation():
    for problem in sample_problems(per_cell=5):
        kind = problem.id.split("/")[1]
        assert _CHECKS[kind](problem) == value_of(problem.answer), problem


def test_generator_is_deterministic_per_seed_and_varies_across_seeds():
    def draw(seed: int) -> list[MathProblem]:
        rng = np.random.default_rng(seed)
        return [generate_problem(rng, difficulty=d) for d in (1, 2, 3) * 10]

    assert draw(7) == draw(7)
    assert [p.id for p in draw(7)] != [p.id for p in draw(8)]
    assert generate_split("train", 25, seed=3) == generate_split("train", 25, seed=3)
    assert generate_split("train", 25, seed=3) != generate_split("train", 25, seed=4)
    assert generate_split("train", 40, seed=3)[:25] == generate_split("train", 25, seed=3)


def test_generated_splits_are_disjoint_and_hold_distinct_problems():
    train = load_math_dataset("generated", split="train", limit=300, seed=0)
    evaluation = load_math_dataset("generated", split="eval", limit=100, seed=0)
    other_train = load_math_dataset("generated", limit=200, seed=1)  # split defaults to train
    assert len({p.id for p in train}) == 300 and len({p.id for p in evaluation}) == 100
    assert all(split_of(p.id) == "train" for p in train + other_train)
    assert all(split_of(p.id) == "eval" for p in evaluation)
    assert not {p.id for p in train + other_train} & {p.id for p in evaluation}
    assert {p.id.split("/")[1] for p in train} == set(KINDS)


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"kind": "geometry"}, "kind"), ({"difficulty": 4}, "difficulty")]
)
def test_generator_refuses_unknown_kind_or_difficulty(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        generate_problem(np.random.default_rng(0), **kwargs)


# --- schema and loaders -----------------------------------------------------------------------------


def test_problem_from_dict():
    problem = problem_from_dict({"question": "What is 1+1?", "answer": 2, "id": 5, "difficulty": 1})
    assert problem == MathProblem(
        id="custom/5", source="custom", problem="What is 1+1?", answer="2", difficulty="1"
    )
    assert problem_from_dict(dataclasses.asdict(problem)) == problem
    hashed = problem_from_dict({"problem": "What is 2+2?", "answer": "4"}, source="mine")
    assert hashed.id == f"mine/{content_id('What is 2+2?')}"
    with pytest.raises(ValueError, match=r"problem\|question.*answer"):
        problem_from_dict({"text": "What is 1+1?"})
    with pytest.raises(ValueError, match="answer"):
        problem_from_dict({"problem": "What is 1+1?", "answer": [2]})


def load_fixture(name: str, file: str, **kwargs) -> list[MathProblem]:
    return load_math_dataset(name, path=FIXTURES / file, **kwargs)


def test_aime2024_fixture():
    problems = load_fixture("aime2024", "aime2024.jsonl")
    assert [p.id for p in problems] == ["aime2024/2024-I-1", "aime2024/2024-II-4", "aime2024/2024-II-15"]
    assert [p.answer for p in problems] == ["400", "370", "144"]  # int64 in the dataset
    assert problems[0].problem.startswith("Find the number of positive integers")


def test_aime2025_fixtures_in_both_schemas():
    with_ids = load_fixture("aime2025", "aime2025_yentinglin.jsonl")
    assert [(p.id, p.answer) for p in with_ids] == [("aime2025/0", "70"), ("aime2025/1", "1")]
    without_ids = load_fixture("aime2025", "aime2025_opencompass.jsonl")
    assert [p.answer for p in without_ids] == ["117", "25"]
    assert all(p.id == f"aime2025/{content_id(p.problem)}" for p in without_ids)


def test_olympiadbench_fixture():
    problems = load_fixture("olympiadbench", "olympiadbench.jsonl")
    assert [p.id for p in problems] == ["olympiadbench/1606", "olympiadbench/2631", "olympiadbench/2710"]
    assert [p.answer for p in problems] == ["528", "2, 3", r"\frac{1}{4}"]
    assert problems[2].problem.startswith("An angle") and problems[2].problem.endswith(
        r"Compute $\sin^2 \theta$."
    )
    assert problems[0].difficulty == "Competition"
    assert grade(r"\boxed{3, 2}", problems[1].answer) and grade(r"\boxed{0.25}", problems[2].answer)


def test_math500_fixture():
    problems = load_fixture("math500", "math500.jsonl")
    assert problems[0].id == "math500/test/precalculus/807.json"
    assert [p.answer for p in problems] == [r"\left( 3, \frac{\pi}{2} \right)", "4.7", "6"]
    assert [p.difficulty for p in problems] == ["2", "1", "1"]
    assert grade(r"\boxed{(3, \frac{\pi}{2})}", problems[0].answer)


def test_gsm8k_fixture_in_either_split():
    problems = load_fixture("gsm8k", "gsm8k.jsonl", split="train")
    assert [p.answer for p in problems] == ["1200", "4"]
    assert all(p.id == f"gsm8k/{content_id(p.problem)}" for p in problems)
    assert load_fixture("gsm8k", "gsm8k.jsonl", split="test", limit=1) == problems[:1]


def test_gsm8k_row_without_a_final_answer_is_an_error(tmp_path):
    file = tmp_path / "bad.jsonl"
    file.write_text('{"question": "How many?", "answer": "no marker here"}\n')
    with pytest.raises(ValueError, match="####"):
        load_math_dataset("gsm8k", path=file)


def test_parquet_files_load_like_json(tmp_path):
    datasets = pytest.importorskip("datasets")
    parquet = tmp_path / "olympiadbench.parquet"
    datasets.Dataset.from_json(str(FIXTURES / "olympiadbench.jsonl")).to_parquet(str(parquet))
    assert load_math_dataset("olympiadbench", path=parquet) == load_fixture(
        "olympiadbench", "olympiadbench.jsonl"
    )


def test_limit_keeps_the_first_problems():
    assert load_fixture("math500", "math500.jsonl", limit=2) == load_fixture("math500", "math500.jsonl")[:2]
    assert load_fixture("math500", "math500.jsonl", limit=0) == []


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("aime2023", {}, "not a math dataset"),
        ("aime2024", {"split": "train"}, "no split 'train'"),
        ("gsm8k", {"split": "validation"}, "no split 'validation'"),
        ("math500", {"limit": -1}, "limit"),
        ("math500", {"seed": 3}, "seed"),
        ("generated", {}, "limit"),
        ("generated", {"limit": 3, "path": "x.jsonl"}, "path"),
        ("generated", {"limit": 3, "split": "test"}, "split"),
        ("math500", {"path": "problems.csv"}, "format"),
    ],
)
def test_loader_refuses_bad_arguments(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        load_math_dataset(name, **kwargs)


def test_missing_datasets_package_is_a_dependency_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DependencyNotInstalled, match=r"pettingllms\[data\]"):
        load_fixture("math500", "math500.jsonl")
