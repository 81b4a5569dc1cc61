"""Hostile solutions and hostile tester cases: none may turn a failure into a pass (SPEC section 7, issue 13).

Every attack below is a *wrong* solution (or a wrong/unverifiable tester case) dressed with a trick: leaving
early with a zero exit status, an exit hook, an object that equals anything, patched builtins, edits of the
checking harness's globals through `sys.modules`, `gc` or frames, a printed fake verdict, killing the parent,
reading the parent's memory or the hidden check from its own memory. Each must be judged a failure on
HumanEval-schema, MBPP-style and stdio problems where it means something, while the reference solutions of
the same problems still pass.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markers import needs_bwrap  # noqa: E402

import pettingllms
from pettingllms.data.code.mbpp import problem_from_mbpp_row
from pettingllms.sandbox import _bwrap

pytestmark = needs_bwrap

MARKER_HEAD, MARKER_TAIL = "hidden-check-", "7f3a9c"
"""Written into the hidden check as one word; the memory-scanning attacks look for it without ever holding it."""

HUMANEVAL_FRAC = {
    "task_id": "Hostile/frac",
    "prompt": 'def frac(x: float) -> float:\n    """The fractional part of a number x >= 0."""\n',
    "canonical_solution": "    return x - int(x)\n",
    "test": (
        "\n\nMETADATA = {}\n\n\ndef check(candidate):\n"
        f"    marker = '{MARKER_HEAD}{MARKER_TAIL}'\n"
        "    assert candidate(2.0) == 0.0\n"
        "    assert abs(candidate(1.5) - 0.5) < 1e-6\n"
        "    assert abs(candidate(3.25) - 0.25) < 1e-6\n"
    ),
    "entry_point": "frac",
}
MBPP_COMMON = {  # every assert goes through a builtin, as in MBPP's similar_elements
    "task_id": 90001,
    "text": "Write a function to find the shared elements of two lists.",
    "code": "def common(a, b):\n    return sorted(set(a) & set(b))\n",
    "test_list": [
        "assert set(common([3, 4, 5, 6], [5, 7, 4, 10])) == set([4, 5])",
        "assert set(common([1, 2], [3])) == set()",
        f"assert set(common([1, 2, 3], [3, 2])) == set([2, 3]) or '{MARKER_HEAD}{MARKER_TAIL}' is None",
    ],
    "test_setup_code": "",
    "challenge_test_list": [],
}
MBPP_DOUBLE = {  # plain comparisons, as in most of MBPP
    "task_id": 90002,
    "text": "Write a function to double a number.",
    "code": "def double(x):\n    return 2 * x\n",
    "test_list": [
        "assert double(0) == 0",
        "assert double(2) == 4",
        f"assert double(-3) == -6 or '{MARKER_HEAD}{MARKER_TAIL}' is None",
    ],
    "test_setup_code": "",
    "challenge_test_list": [],
}
WRONG = {"frac": "def frac(x):\n    return 0.0\n", "common": "def common(a, b):\n    return []\n"}
WRONG["double"] = "def double(x):\n    return 0\n"

UNIVERSAL = """
class Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    def __hash__(self): return 0
    def __sub__(self, other): return self
    __rsub__ = __add__ = __radd__ = __sub__
    def __abs__(self): return self
    def __bool__(self): return True
"""
SCAN = f"""
import os, re
def _scan(pid):
    head, tail = {MARKER_HEAD!r}.encode(), {MARKER_TAIL!r}.encode()
    try:
        maps = open(f"/proc/{{pid}}/maps").read().splitlines()
        mem = open(f"/proc/{{pid}}/mem", "rb", buffering=0)
    except OSError:
        return False
    for line in maps:
        start, end = (int(v, 16) for v in line.split()[0].split("-"))
        if "r" not in line.split()[1] or end - start > 1 << 28:
            continue
        try:
            mem.seek(start)
            data = mem.read(end - start)
        except (OSError, OverflowError, ValueError):
            continue
        at = data.find(head)
        while at >= 0:
            if data[at + len(head) : at + len(head) + len(tail)] == tail:
                return True
            at = data.find(head, at + 1)
    return False
"""
FUNCTION_ATTACKS = {
    # leaving early with status 0, before or during the check
    "sys_exit_at_import": "{wrong}\nimport sys\nsys.exit(0)\n",
    "os_exit_at_import": "{wrong}\nimport os\nos._exit(0)\n",
    "raise_system_exit": "{wrong}\nraise SystemExit\n",
    "sys_exit_in_call": "def {name}(*args):\n    import sys\n    sys.exit(0)\n",
    "os_exit_in_call": "def {name}(*args):\n    import os\n    os._exit(0)\n",
    "raise_system_exit_in_call": "def {name}(*args):\n    raise SystemExit(0)\n",
    "atexit_exit": "{wrong}\nimport atexit, os\natexit.register(os._exit, 0)\n",
    "excepthook_exit": "{wrong}\nimport os, sys\nsys.excepthook = lambda *info: os._exit(0)\n",
    "exit_from_a_thread": (
        "{wrong}\nimport os, threading, time\n"
        "def _later():\n    time.sleep(0.2)\n    os._exit(0)\n"
        "threading.Thread(target=_later).start()\n"
    ),
    # objects that claim to be anything
    "always_equal_object": UNIVERSAL + "def {name}(*args):\n    return Anything()\n",
    "int_subclass_with_custom_eq": (
        "class Sly(int):\n    def __eq__(self, other): return True\n    __hash__ = int.__hash__\n"
        "    def __sub__(self, other): return Sly(0)\n    def __abs__(self): return Sly(0)\n"
        "    def __lt__(self, other): return True\n"
        "def {name}(*args):\n    return Sly(0)\n"
    ),
    "float_subclass_with_custom_eq": (
        "class Sly(float):\n    def __eq__(self, other): return True\n    __hash__ = float.__hash__\n"
        "    def __sub__(self, other): return Sly(0)\n    def __abs__(self): return Sly(0)\n"
        "    def __lt__(self, other): return True\n"
        "def {name}(*args):\n    return Sly(0)\n"
    ),
    # patched builtins (the check's abs/set/AssertionError) and the checker's globals
    "patched_builtins": (
        "{wrong}\nimport builtins\n"
        "builtins.abs = lambda x: 0\nbuiltins.set = lambda *a: 0\n"
        "class NotAnError(Exception):\n    pass\n"
        "builtins.AssertionError = NotAnError\n"
    ),
    "main_module_globals": (
        "{wrong}\nimport sys\nmain = sys.modules['__main__']\n"
        "main.abs = lambda x: 0\nmain.set = lambda *a: 0\nmain.check = lambda candidate: None\n"
    ),
    "globals_edited_through_gc_during_the_check": (
        "import gc\n"
        "def {name}(*args):\n"
        "    for o in gc.get_objects():\n"
        "        if isinstance(o, dict) and 'check' in o:\n"
        "            o['abs'] = lambda x: 0\n"
        "            o['set'] = lambda *a: 0\n"
        "    return 0\n"
    ),
    "globals_edited_through_frames_during_the_check": (
        "import inspect\n"
        "def {name}(*args):\n"
        "    for info in inspect.stack():\n"
        "        info.frame.f_globals['abs'] = lambda x: 0\n"
        "        info.frame.f_globals['set'] = lambda *a: 0\n"
        "    return 0\n"
    ),
    "expected_value_read_from_the_callers_frame": (
        "import dis, sys\n"
        "def {name}(*args):\n"
        "    frame = sys._getframe(1)\n"
        "    after = [i for i in dis.get_instructions(frame.f_code) if i.offset > frame.f_lasti]\n"
        "    consts = [i.argval for i in after[:4] if i.opname == 'LOAD_CONST']\n"
        "    return consts[0] if consts else 0\n"
    ),
    "fake_verdict_printed": (
        "{wrong}\nimport sys\n"
        "for line in ('PASS', 'passed', 'ok', '{\"passed\": true}', 'OK 1 1', 'verdict pass'):\n"
        "    print(line)\n    print(line, file=sys.stderr)\n"
        "sys.stdout.flush()\n"
    ),
    "fake_verdict_written_to_every_fd": (
        "{wrong}\nimport os\n"
        "for fd in range(3, 64):\n"
        "    try:\n        os.write(fd, b'PASS\\n')\n    except OSError:\n        pass\n"
    ),
    # talking to the judge directly: garbage and forged answers on every fd it might read
    "garbage_written_to_the_reply_pipe": (
        "{wrong}\nimport os\nfor fd in range(3, 16):\n    try:\n"
        "        os.write(fd, b'\\xff' * 4 + b'garbage')\n    except OSError:\n        pass\n"
    ),
    "forged_reply_frames": (
        "{wrong}\nimport os\n"
        "def _frame(text):\n    return len(text).to_bytes(4, 'big') + text\n"
        "for fd in range(3, 16):\n    try:\n"
        "        os.write(fd, _frame(b'{\"ready\": []}') + _frame(b'{\"value\": true}') * 50)\n"
        "    except OSError:\n        pass\n"
    ),
    "parent_killed": "{wrong}\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint('PASS')\n",
    "everything_killed": "{wrong}\nimport os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n",
    # right answers only if the hidden check could be read from the parent's or its own memory
    "parent_memory_read": SCAN + "FOUND = _scan(os.getppid())\n{right}\n",
    "own_memory_scanned_for_the_check": SCAN + "FOUND = _scan('self')\n{right}\n",
    "stdin_of_the_run_read": (
        "import os, sys\n"
        "def _read():\n"
        "    for path in ('/proc/self/fd/0', f'/proc/{os.getppid()}/fd/0'):\n"
        "        try:\n"
        "            with open(path, 'rb') as f:\n"
        f"                if {MARKER_TAIL!r}.encode() in f.read():\n"
        "                    return True\n"
        "        except OSError:\n"
        "            pass\n"
        "    return False\n"
        "FOUND = _read()\n{right}\n"
    ),
}
RIGHT_IF_FOUND = {
    "frac": "def frac(x):\n    return x - int(x) if FOUND else 0.0\n",
    "common": "def common(a, b):\n    return sorted(set(a) & set(b)) if FOUND else []\n",
    "double": "def double(x):\n    return 2 * x if FOUND else 0\n",
}


def coder_env(problem):
    """A single-workflow code-v0 env on a HumanEval-schema dict or an MBPP row."""
    env = pettingllms.make("code-v0", workflow="single", test_timeout=3.0)
    if "entry_point" in problem:
        env.reset(options={"problem": problem})
    else:
        env.reset(options={"problem": HUMANEVAL_FRAC})
        env.unwrapped.problem = problem_from_mbpp_row(problem)
    return env


def judged(problem, code: str) -> dict:
    env = coder_env(problem)
    env.step(f"```python\n{code}\n```")
    return env.infos["coder"]


FUNCTION_PROBLEMS = {"humaneval": HUMANEVAL_FRAC, "mbpp_builtins": MBPP_COMMON, "mbpp_plain": MBPP_DOUBLE}


def entry_point(problem) -> str:
    return problem.get("entry_point") or problem_from_mbpp_row(problem).entry_point


@pytest.mark.parametrize("kind", sorted(FUNCTION_PROBLEMS))
def test_references_pass_and_the_plain_wrong_solutions_fail(kind):
    problem = FUNCTION_PROBLEMS[kind]
    reference = problem.get("code") or problem.get("prompt", "") + problem.get("canonical_solution", "")
    info = judged(problem, reference)
    assert info["success"] and info["hidden_pass_ratio"] == 1.0
    info = judged(problem, WRONG[entry_point(problem)])
    assert not info["success"] and info["hidden_pass_ratio"] == 0.0


@pytest.mark.parametrize("attack", sorted(FUNCTION_ATTACKS))
@pytest.mark.parametrize("kind", sorted(FUNCTION_PROBLEMS))
def test_a_hostile_function_solution_is_judged_a_failure(kind, attack):
    problem = FUNCTION_PROBLEMS[kind]
    name = entry_point(problem)
    code = FUNCTION_ATTACKS[attack].replace("{name}", name).replace("{wrong}", WRONG[name])
    code = code.replace("{right}", RIGHT_IF_FOUND[name])
    info = judged(problem, code)
    assert not info["success"] and info["hidden_pass_ratio"] == 0.0, (kind, attack)
    assert info["reward_team"] == 0.0


# --- stdio problems: the verdict is the host's comparison of stdout, and only a clean exit counts -------------

STDIO_SUM = {
    "id": "hostile-sum",
    "statement": "Read two integers and print their sum.",
    "tests": [{"input": "2 3\n", "output": "5\n"}, {"input": "10 -4\n", "output": "6\n"}],
    "solution": "a, b = map(int, input().split())\nprint(a + b)\n",
}
STDIO_ATTACKS = {
    "right_output_then_nonzero_exit": "a, b = map(int, input().split())\nprint(a + b, flush=True)\nimport os\nos._exit(3)\n",
    "right_output_then_killed_by_a_signal": (
        "import os, signal\na, b = map(int, input().split())\nprint(a + b, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    ),
    "fake_verdict_printed": "print('PASS')\nprint('ok')\nprint('{\"passed\": true}')\n",
    "parent_killed": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint(5)\n",
    "everything_killed": "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\nprint(5)\n",
    "atexit_prints_a_verdict": "import atexit\natexit.register(print, 'PASS')\nprint(0)\n",
}


@pytest.mark.parametrize("attack", sorted(STDIO_ATTACKS))
def test_a_hostile_stdio_solution_is_judged_a_failure(attack):
    env = pettingllms.make("code-v0", workflow="single")
    env.reset(options={"problem": STDIO_SUM})
    env.step(f"```python\n{STDIO_SUM['solution']}\n```")
    assert env.infos["coder"]["success"]
    env.reset(options={"problem": STDIO_SUM})
    env.step(f"```python\n{STDIO_ATTACKS[attack]}\n```")
    info = env.infos["coder"]
    assert not info["success"] and info["hidden_pass_ratio"] < 1.0


# --- tester cases: parsed into data, never executed ---------------------------------------------------------

ADD = {
    "task_id": "Hostile/add",
    "prompt": 'def add(x: int, y: int) -> int:\n    """x plus y."""\n',
    "canonical_solution": "    return x + y\n",
    "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n",
    "entry_point": "add",
}


def play_add_problem(code: str, asserts: str):
    """The `code-v0` env on the ADD problem after the coder answered `code` and the tester `asserts`."""
    env = pettingllms.make("code-v0", test_timeout=3.0)
    env.reset(options={"problem": ADD})
    env.step(f"```python\n{code}\n```")
    env.step(f"```python\n{asserts}\n```")
    return env


HOSTILE_CASES = {
    "os_exit_or": "assert __import__('os')._exit(0) or add(1, 1) == 3",
    "sys_exit_or": "assert __import__('sys').exit(0) or add(1, 1) == 3",
    "exit_after_a_false_comparison": "assert add(1, 1) == 3 or __import__('os')._exit(0)",
    "exec_exit": "assert [exec('import os; os._exit(0)')]",
    "lambda_exit": "assert (lambda: __import__('os')._exit(0))()",
    "atexit_exit": "assert __import__('atexit').register(__import__('os')._exit, 0) and add(1, 1) == 3",
    "always_equal_expected": "assert add(1, 1) == type('E', (), {'__eq__': lambda s, o: True})()",
    "builtins_patched": "assert setattr(__import__('builtins'), 'abs', lambda x: 0) or abs(add(1, 1) - 3) < 1",
    "walrus_and_call": "assert (f := __import__('os')._exit) and f(0)",
}


@pytest.mark.parametrize("case", sorted(HOSTILE_CASES))
def test_a_hostile_tester_case_is_never_right(case):
    wrong = "def add(x, y):\n    return x - y"
    info = play_add_problem(wrong, HOSTILE_CASES[case]).infos["tester"]
    assert info.get("cases_right", 0) == 0 and info.get("cases_caught", 0) == 0, case
    assert info["reward_local"] <= 0.0


def test_the_memory_probe_works_on_what_the_candidates_process_does_hold():
    """Control for the memory attacks above: the same scan finds the marker once it is in the candidate's own
    memory (here, in its own code), so their failure means the hidden check was not there to find."""
    code = (
        SCAN + f"MINE = {MARKER_HEAD!r} {MARKER_TAIL!r}\nFOUND = _scan('self')\n" + RIGHT_IF_FOUND["double"]
    )
    info = judged(MBPP_DOUBLE, code)
    assert info["success"] and info["hidden_pass_ratio"] == 1.0


SWALLOWING = {  # a weak check that hides every exception: only the judge's own record of a dead process counts
    "task_id": "Hostile/swallow",
    "prompt": 'def square(x: int) -> int:\n    """x squared."""\n',
    "canonical_solution": "    return x * x\n",
    "test": (
        "def check(candidate):\n    try:\n        candidate(3)\n    except BaseException:\n        pass\n"
        "    try:\n        candidate(4)\n    except BaseException:\n        pass\n"
    ),
    "entry_point": "square",
}


@pytest.mark.parametrize(
    "code",
    [
        "def square(x):\n    import os\n    os._exit(0)\n",
        "def square(x):\n    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n",
        "def square(x):\n    return object()\n",
    ],
)
def test_a_candidate_that_died_fails_even_when_the_check_swallows_exceptions(code):
    assert judged(SWALLOWING, SWALLOWING["prompt"] + SWALLOWING["canonical_solution"])["success"]
    info = judged(SWALLOWING, code)
    assert not info["success"] and info["hidden_pass_ratio"] == 0.0


# --- a non-root host: the harness and the candidate share the user's uid ------------------------------------

_NOBODY_HOST = r"""
import json, sys
from pettingllms.data.code.judge import check_judgement, read_verdicts
from pettingllms.data.code.schema import problem_from_dict
from pettingllms.sandbox import Sandbox

problem = problem_from_dict(json.loads(sys.argv[1]))
codes = json.loads(sys.stdin.read())
with Sandbox(workers=1, preload=()) as box:
    judgements = [check_judgement(problem, code, timeout=5.0, memory_mb=512) for code in codes]
    results = box.run_batch([j.program for j in judgements])
print(json.dumps([read_verdicts(j, r)[0][0] for j, r in zip(judgements, results)]))
"""


def _as_nobody() -> list[str]:
    """Command prefix that runs a system Python as nobody; skips where that cannot host a sandbox."""
    import os
    import shutil
    import subprocess

    setpriv, bwrap, python = (
        shutil.which("setpriv"),
        _bwrap.find_bwrap(),
        shutil.which("python3", path="/usr/bin"),
    )
    if setpriv is None or python is None:
        pytest.skip("needs setpriv and a system python3 under /usr/bin")
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    probe = subprocess.run(
        [*prefix, bwrap, "--unshare-user", "--ro-bind", "/", "/", "true"], capture_output=True
    )
    if probe.returncode != 0:
        pytest.skip(f"unprivileged user namespaces are unavailable: {probe.stderr.decode().strip()}")
    return [*prefix, python]


@pytest.fixture
def world_readable_dir():
    """A fresh folder that nobody can read (pytest's root lives under a 0700 folder of root)."""
    import shutil
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="pettingllms-judge-"))
    yield path
    shutil.rmtree(path)


def test_on_a_non_root_host_the_candidate_cannot_read_the_harness(world_readable_dir):
    root = world_readable_dir
    """As a normal user every process of a run has the user's uid: only the harness being non-dumpable (the
    sandbox marks runs so, and the harness marks itself) keeps the candidate out of its memory, fds and stdin;
    the control (last) shows the probe reads what the candidate's process does hold."""
    import json
    import shutil
    import subprocess
    from pathlib import Path

    command = _as_nobody()
    package = Path(pettingllms.__file__).parent
    for folder in ("sandbox", "data/code"):
        (root / "pettingllms" / folder).mkdir(parents=True)
    for name in (
        "pettingllms/__init__.py",
        "pettingllms/data/__init__.py",
        "pettingllms/data/code/__init__.py",
    ):
        (root / name).write_text("")
    for source in (package / "sandbox").glob("*.py"):
        shutil.copy(source, root / "pettingllms" / "sandbox" / source.name)
    for name in ("schema.py", "judge.py", "judge_harness.py", "judge_candidate.py"):
        shutil.copy(package / "data" / "code" / name, root / "pettingllms" / "data" / "code" / name)
    for path in (root, *root.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    codes = [
        HUMANEVAL_FRAC["prompt"] + HUMANEVAL_FRAC["canonical_solution"],
        FUNCTION_ATTACKS["parent_memory_read"].replace("{right}", RIGHT_IF_FOUND["frac"]),
        FUNCTION_ATTACKS["stdin_of_the_run_read"].replace("{right}", RIGHT_IF_FOUND["frac"]),
        SCAN + f"MINE = {MARKER_HEAD!r} {MARKER_TAIL!r}\nFOUND = _scan('self')\n" + RIGHT_IF_FOUND["frac"],
    ]
    done = subprocess.run(
        [*command, "-c", _NOBODY_HOST, json.dumps(HUMANEVAL_FRAC)],
        input=json.dumps(codes),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "HOME": str(root)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True, False, False, True]


# --- model text never crashes the host's step -----------------------------------------------------------------

HEX = "0x" + "f" * 3700
CRASHING_TESTER_LINES = {  # each made env.step raise (ValueError from ast.unparse, Unsupported from encode)
    "hex_in_a_non_literal_argument": f"assert add(x + {HEX}) == 1",
    "hex_in_a_non_literal_expected": f"assert add(1, 2) == x + {HEX}",
    "hex_in_a_non_literal_tolerance": f"assert abs(add(1, 2) - 3) < y - {HEX}",
    "ellipsis_argument": "assert add([1.0, 2.0], ...) == True",
    "ellipsis_keyword": "assert add(1, y=...) == 3",
    "ellipsis_expected": "assert add(1, 2) == ...",
    "ellipsis_nested": "assert add([1, (2, {3: ...})], 2) == 3",
    "ellipsis_identity": "assert add(1, 2) is ...",
    "ellipsis_tolerance": "assert abs(add(1, 2) - ...) < 1",
    "ellipsis_rel_tol": "assert math.isclose(add(1, 2), 3, rel_tol=...)",
}


@pytest.mark.parametrize("line", sorted(CRASHING_TESTER_LINES))
def test_a_tester_line_that_crashed_the_host_is_a_rejected_case(line):
    env = play_add_problem(
        "def add(*a, **k):\n    return None", f"assert add(2, 3) == 5\n{CRASHING_TESTER_LINES[line]}"
    )
    info = env.infos["tester"]
    assert (info["cases"], info["cases_right"], info["cases_caught"]) == (2, 1, 1)
    observation = env.observe("coder")
    assert "Case 2: " in observation and "not run: " in observation
    env.step("```python\ndef add(x, y):\n    return x + y\n```")
    env.step(f"```python\n{CRASHING_TESTER_LINES[line]}\n```")  # alone: a parse error with the reason
    assert env.infos["tester"]["parse_error"] and "no usable test case" in env.observe("tester")


class _RecordingSandbox:
    """A sandbox stand-in for fuzzing the host's side (its own lease): it runs nothing, checks that each program's
    stdin is what the harness can read (two frames of JSON, every case's values decodable), and answers a
    failure."""

    workers = 1

    def lease(self, owner=None):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def run(self, program):
        from pettingllms.data.code import judge_harness
        from pettingllms.sandbox import SandboxResult

        stdin, frames = program.stdin, []
        while stdin:
            size = int(stdin[: judge_harness.FRAME_DIGITS])
            frames.append(
                json.loads(stdin[judge_harness.FRAME_DIGITS : judge_harness.FRAME_DIGITS + size])
            )
            stdin = stdin[judge_harness.FRAME_DIGITS + size :]
        assert len(frames) == 2
        for case in frames[1].get("cases", []):
            assert case["op"] in judge_harness.COMPARISONS
            for key in ("args", "kwargs", "expected"):
                judge_harness.decode(case[key])
        return SandboxResult("error", "", "fuzz", 1, 0.0)


_ATOMS = st.sampled_from(
    [
        "1",
        "-2.5",
        "1e999",
        "-1e999",
        "0",
        "1e-9",
        "1e300",
        "'x'",
        "b'\\xff'",
        "'\\ud800'",
        "None",
        "True",
        "...",
        "[]",
        "{}",
        "set()",
        "(1,)",
        "{1: 2j}",
        "[...]",
        "x",
        "x + 1",
        HEX,
        "-" * 50 + "1",
        f"x + {HEX}",
        "float('nan')",
        "*[1]",
        "**{}",
        "a=...",
        "a=1",
        "rel_tol=...",
        "abs_tol=1e300",
        "\x00",
        "lambda: 0",
        "(",
        ")",
        "[" * 45 + "]" * 45,
        "__import__('os')._exit(0)",
        "'\\ud800'",
        "\ud800",
        "'" * 3,
        '"' * 3,
    ]
)
_ARGS = st.lists(_ATOMS, max_size=4).map(", ".join)
_LINES = st.one_of(
    st.tuples(_ARGS, st.sampled_from(["==", "!=", "is", "is not", "<", "<="]), _ATOMS).map(
        lambda t: f"assert has_close_elements({t[0]}) {t[1]} {t[2]}"
    ),
    st.tuples(_ARGS, _ATOMS, st.sampled_from(["<", "<=", ">"]), _ATOMS).map(
        lambda t: f"assert abs(has_close_elements({t[0]}) - {t[1]}) {t[2]} {t[3]}"
    ),
    st.tuples(_ARGS, _ATOMS, _ARGS).map(
        lambda t: f"assert math.isclose(has_close_elements({t[0]}), {t[1]}, {t[2]})"
    ),
    st.tuples(st.sampled_from(["", "not "]), _ARGS).map(lambda t: f"assert {t[0]}has_close_elements({t[1]})"),
    st.text(max_size=80).map(lambda text: "assert " + text),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(lines=["assert 1"], crash=CRASHING_TESTER_LINES["hex_in_a_non_literal_argument"], code="")
@example(lines=["assert 1"], crash=CRASHING_TESTER_LINES["ellipsis_rel_tol"], code="")
@given(
    lines=st.lists(_LINES, min_size=1, max_size=10),
    crash=st.sampled_from([None, *CRASHING_TESTER_LINES.values()]),
    code=st.one_of(
        st.just("def has_close_elements(*a, **k):\n    return False"), st.text(max_size=60), _LINES
    ),
)
def test_env_step_never_raises_on_any_tester_text(lines, crash, code):
    """Arbitrary assert-ish text (and the forms that crashed the host) for a HumanEval-schema tester, after
    arbitrary code: the step returns, every line is a case or a rejected case, and what is sent to the judge is
    what it can read."""
    env = pettingllms.make("code-v0", dataset="humaneval", sandbox=_RecordingSandbox(), render_mode="ansi")
    env.reset(seed=0, options={"index": 0})
    env.step(f"```python\n{code}\n```")
    if crash is not None:
        lines = [*lines, crash.replace("add(", "has_close_elements(")]
    env.step("```python\n" + "\n".join(lines) + "\n```")
    info = env.infos["tester"]
    assert info["parse_error"] or info["cases"] >= 1
    env.observe("coder"), env.observe("tester"), env.render()


# --- MBPP-style tests that rely on the solution's module, and returned iterators ------------------------------

MBPP_AREA = {  # the test uses math, which only the solution imports (MBPP's harness shares one module)
    "task_id": 90003,
    "text": "Write a function for the area of a circle.",
    "code": "import math\ndef area(r):\n    return math.pi * r * r\n",
    "test_list": ["assert math.isclose(area(2), 12.566, rel_tol=0.001)"],
    "test_setup_code": "",
    "challenge_test_list": [],
}
MBPP_SQUARES = {
    "task_id": 90004,
    "text": "Write a function to square every item of a list.",
    "code": "def squares(xs):\n    return map(lambda x: x * x, xs)\n",
    "test_list": ["assert list(squares([1, 2])) == [1, 4]", "assert sorted(squares([3, -1])) == [1, 9]"],
    "test_setup_code": "",
    "challenge_test_list": [],
}
MBPP_SQUARES_EQ = {**MBPP_SQUARES, "task_id": 90005, "test_list": ["assert squares([1, 2]) == [1, 4]"]}
MBPP_PAIR = {  # MBPP 601: the check builds instances of the solution's class: out of reach (documented)
    "task_id": 90006,
    "text": "Write a function for the longest chain of pairs.",
    "code": "class Pair(object):\n    def __init__(self, a, b):\n        self.a = a\n        self.b = b\n"
    "def max_chain_length(arr, n):\n    return n\n",
    "test_list": ["assert max_chain_length([Pair(5, 24), Pair(15, 25)], 2) == 2"],
    "test_setup_code": "",
    "challenge_test_list": [],
}


@pytest.mark.parametrize(
    ("row", "code", "passes"),
    [
        (MBPP_AREA, MBPP_AREA["code"], True),
        # the check's math is the stdlib's even when the solution imported it otherwise (MBPP's harness would
        # raise NameError here: the judge is lenient, the check plainly means the module)
        (MBPP_AREA, "from math import pi\ndef area(r):\n    return pi * r * r\n", True),
        (MBPP_AREA, "import math\ndef area(r):\n    return 3 * r * r\n", False),
        (MBPP_SQUARES, MBPP_SQUARES["code"], True),
        (MBPP_SQUARES, "def squares(xs):\n    for x in xs:\n        yield x * x\n", True),
        (MBPP_SQUARES, "def squares(xs):\n    return filter(None, [x * x for x in xs])\n", True),
        (MBPP_SQUARES, "def squares(xs):\n    return map(lambda x: x + x, xs)\n", False),
        (MBPP_SQUARES, "import itertools\ndef squares(xs):\n    return itertools.count()\n", False),
        (MBPP_SQUARES, "def squares(xs):\n    while True:\n        yield 1\n", False),  # endless
        (MBPP_SQUARES, "def squares(xs):\n    yield 1\n    raise ValueError\n", False),
        (MBPP_SQUARES_EQ, MBPP_SQUARES["code"], False),  # a map is not a list, as in Python
        (MBPP_SQUARES_EQ, "def squares(xs):\n    return [x * x for x in xs]\n", True),
        (MBPP_PAIR, MBPP_PAIR["code"], False),  # known limit: the check's Pair cannot cross to the candidate
    ],
)
def test_mbpp_checks_see_stdlib_modules_and_returned_iterators_as_mbpps_harness_does(row, code, passes):
    info = judged(row, code)
    assert info["success"] is passes and info["hidden_pass_ratio"] == float(passes)


def test_a_candidate_function_named_like_a_module_is_offered_as_in_one_module():
    """The check's `math` is the candidate's only if the candidate defines a function of that name (as when
    both share one module); the harness never takes an object of the candidate's other than by proxy."""
    code = "def math(*a):\n    return 0\ndef area(r):\n    return 3.14159 * r * r\n"
    assert not judged(MBPP_AREA, code)["success"]
    assert judged(MBPP_AREA, "def area(r):\n    return 3.14159 * r * r\n")["success"]
