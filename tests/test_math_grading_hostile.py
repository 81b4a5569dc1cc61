"""Grading answers built to be slow (issue 24, finding 6): sympy tests large integers for primality and
factors radicands, so ``\\sqrt{10^{99990}+1}`` against ``7`` took 2 s in the main thread (math-verify's alarm)
and never returned in a worker thread. Such answers are graded wrong, fast, in any thread; ordinary forms
still grade equal.

The hostile cases run in a subprocess with a deadline: a grading that hangs holds the GIL, and inside the test
process it would stall the whole run instead of failing one test."""

import json
import subprocess
import sys
import textwrap
import threading

import pytest

pytest.importorskip("math_verify")

from pettingllms.data.math import grade, is_equivalent  # noqa: E402

HOSTILE = [
    r"\sqrt{10^{99990}+1}",
    r"\sqrt[3]{10^{99990}+1}",
    r"(10^{99990}+1)^{\frac{2}{3}}",
    r"\frac{10^{99990}+1}{3}",
    r"\frac{10^{99990}+1}{10^{49995}+7}",
    r"(10^{99990}+1)^{x}",
    r"\sin(10^{99990})",
]

GRADE_IN_EVERY_THREAD = textwrap.dedent(
    """
    import json, sys, threading, time
    from pettingllms.data.math import is_equivalent

    for candidate in json.loads(sys.argv[1]):
        row = {"candidate": candidate}
        start = time.perf_counter()
        row["main"] = is_equivalent(candidate, "7")
        row["main_s"] = round(time.perf_counter() - start, 3)
        row["main_no_alarm"] = is_equivalent(candidate, "7", timeout_seconds=None)
        row["gold_no_alarm"] = is_equivalent("7", candidate, timeout_seconds=None)
        results = []
        worker = threading.Thread(
            target=lambda: results.extend([is_equivalent(candidate, "7"), is_equivalent("7", candidate)]),
            daemon=True,
        )
        start = time.perf_counter()
        worker.start()
        worker.join(timeout=30)
        row["worker_finished"], row["worker"] = not worker.is_alive(), results
        row["worker_s"] = round(time.perf_counter() - start, 3)
        print(json.dumps(row), flush=True)
    """
)


def test_hostile_candidates_grade_wrong_quickly_in_the_main_thread_and_in_a_worker_thread():
    try:
        done = subprocess.run(
            [sys.executable, "-c", GRADE_IN_EVERY_THREAD, json.dumps(HOSTILE)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired as expired:
        partial = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout or ""
        pytest.fail(f"grading hung past 120 s; rows finished before: {partial}")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row["candidate"] for row in rows] == HOSTILE
    for row in rows:
        assert row["worker_finished"], row  # with no alarm to stop it, the thread returned by itself
        assert row["worker"] == [False, False], row
        assert row["main"] is row["main_no_alarm"] is row["gold_no_alarm"] is False, row
    print({row["candidate"]: (row["main_s"], row["worker_s"]) for row in rows})  # seconds: main, worker


def test_numbers_beyond_the_digit_budget_are_counted_without_evaluating_them():
    from pettingllms.data.math.grading import MAX_EXACT_DIGITS, _parse, exact_digits, exact_digits_bounded

    assert MAX_EXACT_DIGITS == 1_000
    (root, _) = _parse(r"\sqrt{10^{99990}+1}", None)
    assert 99_990 <= exact_digits(root) < 100_000 and not exact_digits_bounded(root)  # + its exponents
    (power, _) = _parse("2^{2024}", None)
    assert 609 < exact_digits(power) < 615 and exact_digits_bounded(power)
    assert not is_equivalent("2^{4000}", "4^{2000}")  # over the budget: not compared ...
    assert is_equivalent("2^{4000}", "2^{4000}")  # ... but identical text is still equal


ORDINARY = [
    (r"\frac{3}{4}", "0.75"),
    ("0.75", r"\frac{3}{4}"),
    ("3/4", r"\frac{3}{4}"),
    ("7.0", "7"),
    (r"\text{7}", "7"),
    ("10^{3}", "1000"),
    ("1000", "10^{3}"),
    (r"\sqrt{12}", r"2\sqrt{3}"),
    (r"\frac{\sqrt{3}}{2}", r"\frac{1}{2}\sqrt{3}"),
    (r"\sqrt[3]{27}", "3"),
    ("2^{2024}", "4^{1012}"),
    ("100!", "100 \\cdot 99!"),
]


@pytest.mark.parametrize(("candidate", "gold"), ORDINARY)
def test_ordinary_equivalent_forms_still_grade_correct(candidate, gold):
    assert is_equivalent(candidate, gold)
    assert grade(f"so the answer is \\boxed{{{candidate}}}", gold)


def test_ordinary_equivalent_forms_still_grade_correct_in_a_worker_thread():
    results: list[bool] = []
    worker = threading.Thread(target=lambda: results.extend(is_equivalent(c, g) for c, g in ORDINARY))
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive() and results == [True] * len(ORDINARY)
