"""The candidate's side of a judgement: a fresh interpreter that loads the candidate's code and serves calls.

Started by the judging harness (``judge_harness``) as ``python -I -S -c <this source> --candidate`` with fds
0-2 on /dev/null, requests on fd 3 and replies on fd 4, and nothing else; stdlib-only and light to import (it
starts once per judgement). Requests come from the trusted harness as ``marshal`` data (4-byte big-endian
length, then the bytes): first ``{"prelude", "code", "path"}``, then calls ``{"name", "args", "kwargs"}``.
Replies are ASCII JSON (same framing) of ``{"ready": [names]}`` or ``{"error": text}`` after loading (the
``prelude``, the problem's public code, runs first), then per
call ``{"value": encoded}``, ``{"raised": text}`` or ``{"unsupported": text}``. The harness decodes them
strictly; whatever this process does (it runs the candidate's code) it can only send data.

On the host, ``encode`` and ``dump_json`` are the codec's writing half (the harness's ``decode`` reads it).
"""

import builtins
import itertools
import marshal
import os
import sys
import types
from _json import encode_basestring_ascii

MAX_DEPTH = 100
"""Deepest nesting of plain data the codec accepts."""
MAX_ITEMS = 100_000
"""Most items an iterator may yield to be encoded (an endless one is ``Unsupported``)."""
_SEQUENCE_TAGS = {list: "l", tuple: "t", set: "s", frozenset: "F"}
_ITERATOR_TYPES = frozenset(
    {map, filter, zip, enumerate, reversed, types.GeneratorType}
    | {type(iter(x)) for x in ([], (), "", b"", range(0), set(), {}, {}.values(), {}.items())}
    | {type(reversed([])), type(reversed(range(0)))}
    | {
        itertools.chain,
        itertools.islice,
        itertools.starmap,
        itertools.accumulate,
        itertools.compress,
        itertools.dropwhile,
        itertools.takewhile,
        itertools.filterfalse,
        itertools.zip_longest,
        itertools.product,
        itertools.permutations,
        itertools.combinations,
        itertools.combinations_with_replacement,
        itertools.pairwise,
    }
)
"""Iterators (exact types) that ``encode`` consumes, up to ``MAX_ITEMS`` items, as tag ``"g"``; the harness
gives the check a fresh ``iter`` over the items, so ``list(f(x)) == [...]`` holds and ``f(x) == [...]`` does not,
as in Python."""


class Unsupported(TypeError):
    """A value that is not plain data (or nested deeper than ``MAX_DEPTH``)."""


def encode(value, depth=0):
    """The JSON-ready form of plain data: None, bool and str as themselves, anything else a tagged list.

    Only exact types count (``type(x) is int``: an int subclass with its own ``__eq__`` is not plain data);
    every float (nan, inf, -0.0) survives exactly through ``float.hex``, as do big ints (hex), tuple vs list
    and set vs frozenset. A finite iterator of ``_ITERATOR_TYPES`` (``map``, generators...) is consumed (in the
    candidate's process: its own code runs) into tag ``"g"``. ``Unsupported`` for anything else."""
    kind = type(value)
    if depth > MAX_DEPTH:
        raise Unsupported(f"nested deeper than {MAX_DEPTH}")
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return ["i", hex(value)]
    if kind is float:
        return ["f", float.hex(value)]
    if kind is complex:
        return ["c", float.hex(value.real), float.hex(value.imag)]
    if kind is bytes:
        return ["y", value.hex()]
    if kind in _SEQUENCE_TAGS:
        return [_SEQUENCE_TAGS[kind], [encode(item, depth + 1) for item in value]]
    if kind is dict:
        return ["d", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in dict.items(value)]]
    if kind in _ITERATOR_TYPES:
        items = []
        for item in value:
            if len(items) == MAX_ITEMS:
                raise Unsupported(f"an iterator of more than {MAX_ITEMS} items")
            items.append(encode(item, depth + 1))
        return ["g", items]
    raise Unsupported(
        f"unsupported type {kind.__name__!r} (only plain data: numbers, str, bytes, containers)"
    )


def dump_json(node):
    """ASCII JSON text of what ``encode`` makes (and of dicts of str keys), without importing ``json``."""
    if node is None:
        return "null"
    if node is True or node is False:
        return "true" if node else "false"
    if type(node) is str:
        return encode_basestring_ascii(node)
    if type(node) is list:
        return "[" + ",".join(dump_json(item) for item in node) + "]"
    return (
        "{"
        + ",".join(encode_basestring_ascii(key) + ":" + dump_json(item) for key, item in node.items())
        + "}"
    )


def describe(error):
    """``"<ExceptionType>: <message>"``, at most 300 characters."""
    return f"{type(error).__name__}: {error}".rstrip(": ")[:300]


def _receive(fd):
    size = int.from_bytes(_read_exact(fd, 4), "big")
    return marshal.loads(_read_exact(fd, size))


def _read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def _reply(fd, message):
    data = dump_json(message).encode()
    view = memoryview(len(data).to_bytes(4, "big") + data)
    while view:
        view = view[os.write(fd, view) :]


def candidate_main(requests=3, replies=4):
    """Load the candidate's code as ``__main__``, then answer calls until the harness goes away."""
    load = _receive(requests)
    sys.path.extend(path for path in load["path"] if path not in sys.path)
    module = types.ModuleType("__main__")
    module.__builtins__ = builtins
    sys.modules["__main__"] = module
    sys.argv = ["<solution>"]
    try:
        exec(compile(load["prelude"], "<prelude>", "exec"), module.__dict__)
        exec(compile(load["code"], "<solution>", "exec"), module.__dict__)
    except BaseException as error:  # noqa: BLE001  (reported to the harness, which fails the verdict)
        _reply(replies, {"error": describe(error)})
        return
    names = [name for name, value in module.__dict__.items() if type(name) is str and callable(value)]
    _reply(replies, {"ready": names})
    while True:
        call = _receive(requests)
        try:
            value = module.__dict__[call["name"]](*call["args"], **call["kwargs"])
        except BaseException as error:  # noqa: BLE001  (the candidate's own exception: the harness decides)
            _reply(replies, {"raised": describe(error)})
            continue
        try:
            encoded = encode(value)
        except (Unsupported, RecursionError) as error:
            _reply(replies, {"unsupported": describe(error)})
            continue
        except BaseException as error:  # noqa: BLE001  (an iterator's own code raised while consumed)
            _reply(replies, {"raised": describe(error)})
            continue
        _reply(replies, {"value": encoded})


if __name__ == "__main__" and sys.argv[1:] == ["--candidate"]:
    candidate_main()
