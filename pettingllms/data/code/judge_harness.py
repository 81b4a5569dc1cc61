"""The judging program: run inside the sandbox, it decides a function-kind verdict outside the candidate's process.

This file's source is the whole program sent to the sandbox (``pettingllms.data.code.judge`` sends it; it is
stdlib-only and imports nothing from this package). It is generic: no test data is in its text. Its stdin holds
two frames (``read_frame``: 12 ASCII digits giving the length, then that many bytes of ASCII JSON), read with
exact unbuffered ``os.read`` calls on fd 0:

1. the public frame ``{"source", "prelude", "code", "timeout"}``: the candidate's program (``judge_candidate``'s
   source), the problem's import lines, the candidate's code, the seconds the candidate may spend;
2. the secret frame ``{"nonce", "mode": "check", "setup", "check", "entry_point"}`` or
   ``{"nonce", "mode": "cases", "cases": [...]}`` (see ``run_cases`` for a case's fields).

The harness marks itself non-dumpable (so no process of the same uid can read its memory, fds or stdin
through ``/proc`` or ptrace), forks and execs a fresh interpreter for the candidate (``python -I -S``: nothing
of the harness's memory survives the exec; its fds are /dev/null plus a request and a reply pipe), and only
then reads the secret frame. The harness runs the dataset's ``check(candidate)`` (mode "check": HumanEval's
prompt ``setup`` first, for helpers such as ``poly``) or compares each tester case (mode "cases") with
``candidate`` a ``Proxy``: each call sends the arguments (``marshal``: plain data only) and decodes the reply
strictly (``decode``: None, bool, int, float, complex, str, bytes and list/tuple/set/frozenset/dict of those,
exact types only; a finite iterator the candidate returned, such as a ``map`` or a generator, arrives as a fresh
``iter`` over its items). A name the check needs that is a stdlib module and that neither the check, the
prompt nor the candidate (a function of that name) provides, e.g. ``math`` in an MBPP test relying on the
solution's ``import math``, is imported by the harness itself (the candidate's objects never cross). Instances
of classes the solution defines cannot cross either (a check that builds MBPP 601's ``Pair`` fails: a known
limit). A candidate that exits, dies, hangs, answers garbage or returns anything else makes that call raise
``CandidateFailed`` (a ``BaseException``, so a check cannot swallow it) and fails the verdict.
``random`` is seeded, so checks with random inputs are reproducible.

Output: one line on the run's stdout, ``<nonce> <json>`` with ``{"verdicts": [[passed, detail], ...], "ran": n}``
(one verdict for a check, one per case; the first ``n`` cases ran, the rest were not run: ``run_cases``),
written on a private copy of fd 1 that the candidate never holds; the check's own prints go to /dev/null. The host trusts nothing else (see ``judge.read_verdicts``).
"""

import builtins
import contextlib
import ctypes
import dis
import fcntl
import json
import marshal
import math
import os
import random
import reprlib
import select
import signal
import sys
import time
import types

FRAME_DIGITS = 12
"""Width of the decimal length header of a stdin frame."""
MAX_REPLY_BYTES = 16 << 20
"""Largest reply the harness accepts from the candidate's process."""
MAX_DEPTH = 100
"""Deepest nesting of plain data the codec accepts."""
TIMEOUT = "timeout"
"""The failure of a candidate that did not answer in time."""
NOT_RUN_DETAIL = "not run: the code timed out on an earlier case"
"""The detail of a case not run because the candidate timed out on an earlier one."""
_PR_SET_DUMPABLE = 4
_SCALAR_TAGS = {"i": int, "f": float, "y": bytes}
_SEQUENCE_TAGS = {"l": list, "t": tuple, "s": set, "F": frozenset}
_SHOW = reprlib.Repr()
_SHOW.maxstring = _SHOW.maxother = 80


class Unsupported(TypeError):
    """A reply that is not the encoding of plain data (or nested deeper than ``MAX_DEPTH``)."""


class CandidateFailed(BaseException):
    """The candidate's process exited, died, hung, answered garbage or returned a value that is not plain data.

    A ``BaseException``: a check's ``except Exception`` cannot hide it, and the harness fails the verdict."""


class CandidateRaised(Exception):
    """The candidate's function raised; the message is ``"<ExceptionType>: <message>"``."""


# --- reading the candidate's replies --------------------------------------------------------------------


def decode(node, depth=0):
    """The value that ``encode`` turned into ``node``; ``Unsupported`` for any other shape."""
    kind = type(node)
    if depth > MAX_DEPTH:
        raise Unsupported(f"nested deeper than {MAX_DEPTH}")
    if node is None or kind is bool or kind is str:
        return node
    if kind is not list or not node or type(node[0]) is not str:
        raise Unsupported("malformed value")
    tag, rest = node[0], node[1:]
    try:
        if tag in _SCALAR_TAGS and len(rest) == 1 and type(rest[0]) is str:
            return _scalar(tag, rest[0])
        if tag == "c" and len(rest) == 2 and all(type(part) is str for part in rest):
            return complex(float.fromhex(rest[0]), float.fromhex(rest[1]))
        if tag in _SEQUENCE_TAGS and len(rest) == 1 and type(rest[0]) is list:
            return _SEQUENCE_TAGS[tag](decode(item, depth + 1) for item in rest[0])
        if tag == "g" and len(rest) == 1 and type(rest[0]) is list:  # a consumed iterator: a fresh one
            return iter([decode(item, depth + 1) for item in rest[0]])
        if tag == "d" and len(rest) == 1 and type(rest[0]) is list:
            pairs = rest[0]
            if not all(type(pair) is list and len(pair) == 2 for pair in pairs):
                raise Unsupported("malformed dict")
            return {decode(k, depth + 1): decode(v, depth + 1) for k, v in pairs}
    except (ValueError, TypeError, OverflowError) as error:  # bad hex, unhashable keys or set items
        raise Unsupported(f"malformed value ({type(error).__name__})") from error
    raise Unsupported(f"malformed value (tag {tag[:10]!r})")


def _scalar(tag, text):
    if tag == "i":
        return int(text, 16)
    if tag == "f":
        return float.fromhex(text)
    return bytes.fromhex(text)


def describe(error):
    """``"<ExceptionType>: <message>"``, at most 300 characters."""
    text = f"{type(error).__name__}: {error}".rstrip(": ")
    return text[:300]


# --- framing ----------------------------------------------------------------------------------------------


def read_exact(fd, n, deadline=None):
    """Exactly ``n`` bytes from ``fd`` (unbuffered); EOFError if it closes, TimeoutError past ``deadline``."""
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def read_frame(fd):
    """One stdin frame: ``FRAME_DIGITS`` ASCII digits giving the length, then that much JSON."""
    return json.loads(read_exact(fd, int(read_exact(fd, FRAME_DIGITS))))


def send(fd, obj):
    """Write one request to the candidate's process: a 4-byte big-endian length, then ``marshal`` bytes
    (``ValueError`` for anything marshal refuses, e.g. an instance of a class)."""
    data = marshal.dumps(obj)
    view = memoryview(len(data).to_bytes(4, "big") + data)
    while view:
        view = view[os.write(fd, view) :]


def receive(fd, deadline=None):
    """One reply: a 4-byte big-endian length, then JSON; EOFError, TimeoutError, or ValueError when it is too
    big or not JSON."""
    size = int.from_bytes(read_exact(fd, 4, deadline), "big")
    if size > MAX_REPLY_BYTES:
        raise ValueError(f"a reply of {size} bytes")
    return json.loads(read_exact(fd, size, deadline))


# --- the candidate's process ------------------------------------------------------------------------------


class Candidate:
    """The candidate's process seen from the harness: started with ``start``, called through ``Proxy``s."""

    def __init__(self, public):
        self.public = public
        self.pid = None
        self.names = ()
        self.failure = None
        self.loaded = False

    def start(self):
        """Fork and exec a fresh interpreter that loads the candidate's code (no waiting: see ``ready``)."""
        request_r, request_w = os.pipe2(os.O_CLOEXEC)
        reply_r, reply_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            _exec_candidate(self.public["source"], request_r, reply_w)
        os.close(request_r)
        os.close(reply_w)
        self.pid, self.requests, self.replies = pid, request_w, reply_r
        load = {"prelude": self.public["prelude"], "code": self.public["code"], "path": _library_path()}
        send(self.requests, load)

    def ready(self, deadline):
        """Wait until the code is loaded; ``CandidateFailed`` if it raised, exited or took too long, or if this
        process failed before (a check that catches ``CandidateFailed`` and calls again gets it again)."""
        if self.failure:
            raise CandidateFailed(self.failure)
        if not self.loaded:
            reply = self._reply(deadline)
            if "error" in reply:
                self.fail(f"the code raised when loaded: {reply['error']}")
            names = reply.get("ready")
            if type(names) is not list or not all(type(n) is str and n.isidentifier() for n in names):
                self.fail("the code's process answered garbage")
            self.names, self.loaded = tuple(names[:1000]), True

    def call(self, name, args, kwargs, deadline):
        """``name(*args, **kwargs)`` in the candidate's process, its result as plain data."""
        self.ready(deadline)
        try:
            send(self.requests, {"name": name, "args": args, "kwargs": kwargs})
        except ValueError as error:
            self.fail(f"the check passed an argument that is not plain data ({describe(error)})")
        except OSError as error:
            self.fail(f"the code's process is gone ({describe(error)})")
        reply = self._reply(deadline)
        if "raised" in reply and type(reply["raised"]) is str:
            raise CandidateRaised(reply["raised"])
        if "unsupported" in reply:
            self.fail(f"{name} returned a value that is not plain data")
        if "value" not in reply:
            self.fail("the code's process answered garbage")
        try:
            return decode(reply["value"])
        except (Unsupported, RecursionError):
            self.fail("the code's process answered garbage")

    def _reply(self, deadline):
        try:
            reply = receive(self.replies, deadline)
        except TimeoutError:
            self.fail(TIMEOUT)
        except (EOFError, OSError):
            self.fail("the code exited or died")
        except (ValueError, RecursionError, MemoryError):
            self.fail("the code's process answered garbage")
        if type(reply) is not dict:
            self.fail("the code's process answered garbage")
        return reply

    def fail(self, why):
        """Record the first failure, stop the process and raise ``CandidateFailed``."""
        self.failure = self.failure or why
        self.stop()
        raise CandidateFailed(why)

    def stop(self):
        """SIGKILL the candidate's process and reap it (its own children are the sandbox's to kill)."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            os.close(self.requests)
            os.close(self.replies)
            self.pid = None


def _exec_candidate(source, request_r, reply_w):
    """In the forked child: fds 0-2 to /dev/null, the pipes to 3 and 4, nothing else; exec. Never returns."""
    try:
        high_request = fcntl.fcntl(request_r, fcntl.F_DUPFD, 10)
        high_reply = fcntl.fcntl(reply_w, fcntl.F_DUPFD, 10)
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        os.dup2(high_request, 3)
        os.dup2(high_reply, 4)
        os.closerange(5, os.sysconf("SC_OPEN_MAX"))
        os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", source, "--candidate"])
    finally:
        os._exit(127)


def _library_path():
    """The harness's import path minus path hooks: the candidate's interpreter starts without ``site`` (a third
    faster) and gets the installed libraries (numpy...) this way."""
    return [path for path in sys.path if os.path.isdir(path)]


class Proxy:
    """Stands for one of the candidate's functions inside the harness: calls go to the candidate's process."""

    def __init__(self, candidate, name, deadline):
        self._candidate, self._name, self._deadline = candidate, name, deadline

    def __call__(self, *args, **kwargs):
        return self._candidate.call(self._name, args, kwargs, self._deadline())

    def __repr__(self):
        return f"<the candidate's {self._name}>"


# --- the harness ------------------------------------------------------------------------------------------


def run_check(candidate, secret, deadline):
    """Mode "check": the dataset's ``check(candidate)``, in a namespace where the candidate's code can add
    only proxies of its functions that the check calls by a name no builtin has; one verdict."""
    setup = compile(secret["setup"], "<prompt>", "exec")
    check = compile(secret["check"], "<check>", "exec")
    namespace = {"__name__": "__check__", "__builtins__": builtins}
    candidate.ready(deadline)
    wanted = (_global_names(setup) | _global_names(check)) - set(dir(builtins))
    for name in candidate.names:
        if name in wanted and not name.startswith("__"):
            namespace[name] = Proxy(candidate, name, lambda: deadline)
    exec(setup, namespace)
    exec(check, namespace)
    for name in sorted(_loaded_globals(setup) | _loaded_globals(check)):
        if name not in namespace and name in sys.stdlib_module_names and not hasattr(builtins, name):
            try:
                namespace[name] = __import__(name)
            except Exception:  # noqa: BLE001  (not importable here: the check then gets its NameError)
                pass
    entry = namespace[secret["entry_point"]] = Proxy(candidate, secret["entry_point"], lambda: deadline)
    namespace["check"](entry)
    return [[True, "passed"]]


def _loaded_globals(code):
    """The names ``code`` (and the functions in it) reads as globals (not attribute names): those a check may
    use as a module that the solution imported (MBPP's tests share the solution's module)."""
    names = set()
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") and type(instruction.argval) is str:
            names.add(instruction.argval)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _loaded_globals(constant)
    return names


def _global_names(code):
    """Every name ``code`` (and the functions in it) may look up: the candidate's functions of those names
    (other than builtins and dunders) are offered to the check, as when both shared one module; the prompt's
    and the check's own definitions then replace them."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _global_names(constant)
    return names


def run_cases(candidate, start, secret, timeout):
    """Mode "cases": each case ``{"name", "args", "kwargs", "op", "expected"}`` (encoded values; ``op`` one of
    ``COMPARISONS``) is one call with ``timeout`` seconds (loading included), in order; a process that failed is
    replaced by ``start()`` before the next case, except after a timeout: then the later cases are not run
    (``NOT_RUN_DETAIL``), as a judge stops at the first time limit. One verdict per case, and how many ran."""
    verdicts = []
    for case in secret["cases"]:
        if candidate.failure == TIMEOUT:
            break
        if candidate.failure:
            candidate = start()
        try:
            value = candidate.call(
                case["name"], decode(case["args"]), decode(case["kwargs"]), time.monotonic() + timeout
            )
            holds = COMPARISONS[case["op"]](value, decode(case["expected"]))
            verdicts.append([holds, "passed" if holds else f"AssertionError: got {_SHOW.repr(value)}"])
        except (CandidateFailed, CandidateRaised, ArithmeticError, TypeError, ValueError) as error:
            verdicts.append([False, _reason(error)])
    candidate.stop()
    ran = len(verdicts)
    return verdicts + [[False, NOT_RUN_DETAIL]] * (len(secret["cases"]) - ran), ran


def _reason(error):
    """A failed verdict's detail: the candidate's failure or exception as is, the check's own as ``describe``."""
    return str(error) if isinstance(error, CandidateFailed | CandidateRaised) else describe(error)


COMPARISONS = {
    "==": lambda value, expected: value == expected,
    "is": lambda value, expected: value is expected,
    "abs<": lambda value, expected: abs(value - expected[0]) < expected[1],
    "abs<=": lambda value, expected: abs(value - expected[0]) <= expected[1],
    "isclose": lambda value, expected: math.isclose(
        value, expected[0], rel_tol=expected[1], abs_tol=expected[2]
    ),
}
"""How a tester case compares the call's value with its expected data (``is`` only for True/False/None). Only
forms that pin the value (``asserts`` refuses ``!=``, ``is not``, bare and negated calls, loose tolerances)."""


def harness_main():
    """The judging run: see the module docstring."""
    public = read_frame(0)
    ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    timeout = float(public["timeout"])

    def new_candidate():
        candidate = Candidate(public)
        candidate.start()
        return candidate

    first = new_candidate()
    secret = read_frame(0)
    null = os.open(os.devnull, os.O_RDWR)
    verdict_fd = os.dup(1)
    for fd in (0, 1):
        os.dup2(null, fd)
    # the dataset's checks call the `random` module's own functions (e.g. HumanEval/38's random strings), so the
    # module generator of this sandboxed process is what must be seeded for reproducible verdicts
    random.seed(0)
    if secret["mode"] == "check":
        try:
            verdicts = run_check(first, secret, time.monotonic() + timeout)
        except BaseException as error:  # noqa: BLE001  (any way the check ends but returning is a failure)
            verdicts = [[False, _reason(error)]]
        if first.failure:
            verdicts = [[False, first.failure]]
        first.stop()
        ran = 1
    else:
        verdicts, ran = run_cases(first, new_candidate, secret, timeout)
    line = secret["nonce"] + " " + json.dumps({"verdicts": verdicts, "ran": ran}) + "\n"
    os.write(verdict_fd, line.encode())
    os._exit(0)


if __name__ == "__main__":
    harness_main()
