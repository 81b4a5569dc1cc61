"""Generated code problems: the grammar's code means what its semantics say, the hidden tests reject every near
miss, the splits never share a program, and code-v0 plays them (the oracle solves, a near miss does not)."""

from __future__ import annotations

import numpy as np
import pytest

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.core.splits import split_of
from pettingllms.data.code import grammar
from pettingllms.data.code.generated import DIFFICULTIES, HIDDEN_TESTS, MAX_HIDDEN_TESTS, generate_problem


def _function(code: str, name: str = "solve"):
    """The function `name` defined by `code` (the grammar's own trusted text, never model output)."""
    scope: dict = {}
    exec(code, scope)  # noqa: S102 - the generator's reference programs, written by this package
    return scope[name]


def _step_function(step_code: str, takes: str, gives: str):
    variable, result = grammar.VARIABLES[takes], grammar.VARIABLES[gives]
    body = "".join(f"    {line}\n" for line in step_code.splitlines())
    return _function(f"def step({variable}):\n{body}    return {result}\n", "step")


def _inputs(rng: np.random.Generator, kind: str) -> list:
    if kind == "list":
        return [[], [0], [-3, -3], *([int(v) for v in rng.integers(-6, 14, size=int(rng.integers(1, 9)))]
                                     for _ in range(60))]  # fmt: skip
    if kind == "int":
        return list(range(-20, 40))
    return ["", " ", "A e I o U", "two  spaces", "b4 42 x9y", "tat tet", *(" ".join(rng.choice(
        ["apple", "Sky", "tree", "b4", "OUT", "a", "Eve", "test"], size=3)) for _ in range(40))]  # fmt: skip


@pytest.mark.parametrize("signature", list(grammar.STEPS))
def test_every_steps_code_and_every_bugs_code_compute_what_their_semantics_say(signature):
    rng = np.random.default_rng(0)
    for template in grammar.STEPS[signature]:
        for _ in range(6):  # several parameter draws per template
            step = template(rng)
            assert (step.takes, step.gives) == signature
            for code, apply in [(step.code, step.apply), *((bug.code, bug.apply) for bug in step.bugs)]:
                run = _step_function(code, *signature)
                for value in _inputs(rng, signature[0]):
                    assert run(value) == apply(value), (template.__name__, code, value)
            assert all(bug.kind in ("off-by-one", "wrong operator", "missed case") for bug in step.bugs)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_the_hidden_tests_pass_the_reference_and_reject_every_near_miss(difficulty):
    rng = np.random.default_rng(difficulty)
    rejected = []
    for _ in range(150):
        generated = generate_problem(rng, difficulty)
        problem = generated.problem
        check = _function(problem.check, "check")
        check(_function(problem.reference))  # the reference passes its own hidden tests
        assert HIDDEN_TESTS <= len(generated.hidden) <= MAX_HIDDEN_TESTS
        for miss in generated.near_misses:
            with pytest.raises(AssertionError):
                check(_function(miss.code))
        rejected.append(len(generated.near_misses))
        for value, expected in generated.visible:  # the docstring's examples are the reference's outputs
            assert f">>> solve({value!r})\n    {expected!r}\n" in problem.statement
    # every problem has at least one near miss the hidden tests must (and do) tell apart from it
    assert min(rejected) >= 1 and np.mean(rejected) >= difficulty


def test_the_same_seed_gives_the_same_problem_and_a_program_lies_in_one_split():
    first = [generate_problem(np.random.default_rng(7), 2).problem for _ in range(2)]
    assert first[0] == first[1]
    env = pettingllms.make("code-v0", dataset="generated", difficulty=2).unwrapped
    by_split: dict[str, set[str]] = {"train": set(), "val": set(), "eval": set()}
    for seed in range(150):
        for split, ids in by_split.items():
            env.reset(seed=seed, options={"split": split})
            assert split_of(env.problem.id) == split
            ids.add(env.problem.id)
    assert not (by_split["train"] & by_split["eval"]) and not (by_split["val"] & by_split["eval"])
    assert len(by_split["eval"]) >= 60  # 79 of 150 draws: difficulty 2 holds ~200 evaluation programs


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_the_oracle_team_solves_and_a_near_miss_is_caught_by_the_oracles_cases(difficulty):
    env = pettingllms.make("code-v0", dataset="generated", difficulty=difficulty)
    env.reset(seed=3, options={"split": "eval"})
    problem = env.unwrapped.problem
    miss = env.unwrapped.generated.near_misses[0]
    assert env.unwrapped.generated.problem == problem
    env.step(f"```python\n{miss.code}\n```")  # the coder submits a near miss: it fails the hidden tests
    assert not env.unwrapped.success
    env.step(env.unwrapped.solution("tester"))  # the oracle's cases catch it
    assert env.unwrapped.case_results and not all(result.passed for result in env.unwrapped.case_results)
    env.step(env.unwrapped.solution("coder"))
    assert env.unwrapped.success and env.rewards["coder"] > 0


def test_bad_settings_of_generated_problems_are_refused_with_the_allowed_values():
    with pytest.raises(ConfigError, match=r"difficulty=4 is not supported; allowed values: \[1, 2, 3\]"):
        pettingllms.make("code-v0", dataset="generated", difficulty=4)
    with pytest.raises(
        ConfigError, match=r"dataset='generate' is not supported; allowed values: \[.*'generated'\]"
    ):
        pettingllms.make("code-v0", dataset="generate")
    env = pettingllms.make("code-v0", dataset="generated")
    with pytest.raises(ConfigError, match="generated problems come from seeds"):
        env.reset(seed=0, options={"index": 2})
    with pytest.raises(ConfigError, match="allowed values"):
        env.reset(seed=0, options={"split": "test"})
    with pytest.raises(ConfigError, match="drawn from seeds"):
        env.unwrapped.problems("eval")


def test_the_demonstrations_show_bugs_first_then_fixes_and_right_cases():
    """The warm start's demonstrations (pettingllms.warmstart.demos): the coder's first program is a near miss at
    about the rate asked, a second-turn program is the reference, and the tester's cases are right ones."""
    import itertools
    from collections import Counter

    from pettingllms.warmstart.demos import collect_demonstrations

    kwargs = {"dataset": "generated", "difficulty": 2}
    demos = collect_demonstrations("code-v0", itertools.count(), np.random.default_rng(0), env_kwargs=kwargs,
                                   program_bugs=0.5, per_role=120)  # fmt: skip
    assert Counter(demo.agent for demo in demos) == {"coder": 120, "tester": 120}
    env = pettingllms.make("code-v0", **kwargs).unwrapped
    references = {}  # the problems of the seeds the demonstrations played (0, 1, ...), by statement
    for seed in range(240):
        env.reset(seed=seed)
        references[env.problem.statement.strip()] = env.problem.reference

    def reference(demo) -> str:
        return references[demo.prompt.split("## Problem\n", 1)[1].split("\n## ", 1)[0].strip()]

    def code(demo) -> str:
        return demo.target.removeprefix("```python\n").removesuffix("\n```")

    first = [d for d in demos if d.agent == "coder" and "## Current code" not in d.prompt]
    later = [d for d in demos if d.agent == "coder" and "## Current code" in d.prompt]
    buggy = [d for d in first if code(d) != reference(d)]
    assert 0.3 < len(buggy) / len(first) < 0.7  # measured 0.48 and 0.52 over 400 demonstrations a role
    assert later and all(code(d) == reference(d) for d in later)
    for demo in (d for d in demos if d.agent == "tester"):
        solve = _function(reference(demo))
        for line in code(demo).splitlines():
            exec(line, {"solve": solve})  # noqa: S102 - cases copied from the generator's own hidden tests
