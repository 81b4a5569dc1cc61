"""Generate ``bundled_problems.jsonl`` from the bundled specs: ``python -m pettingllms.data.code.build_bundled``.

For every spec, the hidden-test inputs are the worked example followed by distinct inputs drawn from the
spec's generator with a generator seeded by the slug (:func:`draw_inputs`); the expected outputs come from
running the reference on them in ``pettingllms.sandbox`` (never on the host). The statement shown to agents
is the spec's statement followed by the example and its output. Any failing reference aborts the build.
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
"""Hidden tests per problem: the worked example plus nine generated inputs."""
MAX_DRAWS = 1000
REFERENCE_TIMEOUT_S = 10.0


def spec_rng(spec: BundledSpec) -> np.random.Generator:
    """The generator a spec's inputs are drawn from: seeded by ``BUILD_SEED`` and a hash of the slug."""
    slug_key = int.from_bytes(hashlib.blake2b(spec.slug.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng([BUILD_SEED, slug_key])


def draw_inputs(spec: BundledSpec) -> list[str]:
    """The ``TESTS_PER_PROBLEM`` distinct test inputs of ``spec``: its example, then generated inputs in
    draw order. RuntimeError if the generator cannot produce enough distinct inputs."""
    rng = spec_rng(spec)
    inputs = [spec.example]
    for _ in range(MAX_DRAWS):
        if len(inputs) == TESTS_PER_PROBLEM:
            return inputs
        candidate = spec.generate(rng)
        if candidate not in inputs:
            inputs.append(candidate)
    raise RuntimeError(f"{spec.slug}: only {len(inputs)} distinct inputs in {MAX_DRAWS} draws")


def build_rows(specs: Sequence[BundledSpec], sandbox: Sandbox) -> list[dict]:
    """One stdio-schema row per spec, its outputs computed in ``sandbox``; RuntimeError naming the spec
    and input if a reference does not exit cleanly."""
    inputs = [draw_inputs(spec) for spec in specs]
    programs = [Program(spec.reference, stdin=i) for spec, ins in zip(specs, inputs) for i in ins]
    results = iter(sandbox.run_batch(programs, timeout=REFERENCE_TIMEOUT_S))
    rows = []
    for spec, ins in zip(specs, inputs):
        tests = []
        for stdin in ins:
            result = next(results)
            if not result.ok:
                raise RuntimeError(f"{spec.slug}: reference {result.status} on {stdin!r}: {result.stderr}")
            tests.append({"input": stdin, "output": result.stdout})
        example = f"Example\nInput:\n{spec.example}Output:\n{tests[0]['output']}"
        rows.append(
            {
                "id": spec.slug,
                "difficulty": spec.difficulty,
                "statement": f"{spec.statement}\n\n{example}",
                "tests": tests,
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
