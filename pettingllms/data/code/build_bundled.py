"""Generate ``bundled_problems.jsonl`` from the bundled specs: ``python -m pettingllms.data.code.build_bundled``.

For every spec, a pool of up to ``POOL_SIZE`` distinct candidate inputs is drawn from the spec's generator with
a generator seeded by the slug (:func:`draw_inputs`), never the worked example; the expected outputs come from
running the reference on them in ``pettingllms.sandbox`` (never on the host). The hidden tests are the first
``TESTS_PER_PROBLEM`` candidates in draw order such that no expected output is shared by more than
``MAX_SHARED_OUTPUT`` of them (:func:`select_tests`): the tests are disjoint from the example the statement
shows, and a program that prints one constant passes at most half of them (``code-v0`` pays it nothing). The
statement shown to agents is the spec's statement followed by the example and its output. Any failing
reference, or a pool that cannot give balanced tests, aborts the build naming the spec.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pettingllms.data.code.bundled import DATA_FILE, SPECS
from pettingllms.data.code.bundled_spec import BundledSpec
from pettingllms.sandbox import Program, Sandbox

BUILD_SEED = 2510_11062
TESTS_PER_PROBLEM = 10
"""Hidden tests per problem, all generated (the worked example is not one of them)."""
MAX_SHARED_OUTPUT = TESTS_PER_PROBLEM // 2
"""The most hidden tests of one problem that may expect the same output."""
POOL_SIZE = 60
"""Candidate inputs drawn per problem, from which the balanced hidden tests are selected."""
MAX_DRAWS = 2000
REFERENCE_TIMEOUT_S = 10.0


def spec_rng(spec: BundledSpec) -> np.random.Generator:
    """The generator a spec's inputs are drawn from: seeded by ``BUILD_SEED`` and a hash of the slug."""
    slug_key = int.from_bytes(hashlib.blake2b(spec.slug.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng([BUILD_SEED, slug_key])


def draw_inputs(spec: BundledSpec) -> list[str]:
    """Up to ``POOL_SIZE`` distinct candidate inputs of ``spec`` in draw order, none equal to its example
    (``MAX_DRAWS`` draws at most). RuntimeError if fewer than ``TESTS_PER_PROBLEM`` come out."""
    rng = spec_rng(spec)
    inputs: list[str] = []
    for _ in range(MAX_DRAWS):
        if len(inputs) == POOL_SIZE:
            break
        candidate = spec.generate(rng)
        if candidate != spec.example and candidate not in inputs:
            inputs.append(candidate)
    if len(inputs) < TESTS_PER_PROBLEM:
        raise RuntimeError(f"{spec.slug}: only {len(inputs)} distinct inputs in {MAX_DRAWS} draws")
    return inputs


def select_tests(slug: str, candidates: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The first ``TESTS_PER_PROBLEM`` (input, output) candidates, in order, skipping any whose output (its
    whitespace-separated tokens, as tests compare them) already has ``MAX_SHARED_OUTPUT`` tests. RuntimeError
    naming ``slug`` if the candidates run out first.

    >>> pairs = [(str(i), "YES" if i % 4 else "NO") for i in range(20)]
    >>> [t["output"] for t in select_tests("demo", pairs)]
    ['NO', 'YES', 'YES', 'YES', 'NO', 'YES', 'YES', 'NO', 'NO', 'NO']
    """
    tests: list[dict[str, str]] = []
    shared: dict[tuple[str, ...], int] = {}
    for stdin, stdout in candidates:
        key = tuple(stdout.split())
        if shared.get(key, 0) < MAX_SHARED_OUTPUT:
            shared[key] = shared.get(key, 0) + 1
            tests.append({"input": stdin, "output": stdout})
            if len(tests) == TESTS_PER_PROBLEM:
                return tests
    raise RuntimeError(
        f"{slug}: {len(candidates)} candidate inputs give no {TESTS_PER_PROBLEM} tests with at most "
        f"{MAX_SHARED_OUTPUT} sharing an output: make its generator's outputs more varied"
    )


def build_rows(specs: Sequence[BundledSpec], sandbox: Sandbox) -> list[dict]:
    """One stdio-schema row per spec, its outputs computed in ``sandbox``; RuntimeError naming the spec
    and input if a reference does not exit cleanly."""
    inputs = [[spec.example, *draw_inputs(spec)] for spec in specs]
    programs = [Program(spec.reference, stdin=i) for spec, ins in zip(specs, inputs) for i in ins]
    results = iter(sandbox.run_batch(programs, timeout=REFERENCE_TIMEOUT_S))
    rows = []
    for spec, ins in zip(specs, inputs):
        outputs = []
        for stdin in ins:
            result = next(results)
            if not result.ok:
                raise RuntimeError(f"{spec.slug}: reference {result.status} on {stdin!r}: {result.stderr}")
            outputs.append(result.stdout)
        example = f"Example\nInput:\n{spec.example}Output:\n{outputs[0]}"
        rows.append(
            {
                "id": spec.slug,
                "difficulty": spec.difficulty,
                "statement": f"{spec.statement}\n\n{example}",
                "tests": select_tests(spec.slug, list(zip(ins[1:], outputs[1:]))),
                "reference": spec.reference,
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    """Build every spec and write the rows as JSON lines (default: the packaged data file)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name(DATA_FILE))
    args = parser.parse_args(argv)
    with Sandbox(workers=max(1, min(4, os.cpu_count() or 1))) as sandbox:
        rows = build_rows(SPECS, sandbox)
    with args.output.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, sort_keys=True) + "\n")
    print(f"wrote {len(rows)} problems, {sum(len(r['tests']) for r in rows)} tests to {args.output}")


if __name__ == "__main__":
    main()
