"""How many of an agent's completions on an evaluation suite hold a Python program without the ```python fence
that makes the env run it: the failure the miniatures' results call fence drift.

    .venv/bin/python scripts/fence_drift.py runs/miniature/sokoban-v0/eval            # every transcript there
    .venv/bin/python scripts/fence_drift.py runs/miniature/sokoban-v0/eval --agent tool --json

Reads the `*.transcripts.jsonl` files that `pettingllms-eval` writes beside its result (one JSON object per
episode, with its `steps`: `agent` and `completion` per turn) and sorts each completion of `--agent` into one of:

- `fenced`: it holds a closed ```python block (`pettingllms.core.parsing.extract_python_block`), which the env runs;
- `bare`: no such block, but a line of it starts a Python program (`import`, `from ... import`, `def`): the
  program written without its fence, which the env reads as an answer and rejects;
- `other`: neither (a direct answer, or nothing the env can use).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from pettingllms.core.parsing import extract_python_block

PROGRAM_LINE = re.compile(r"^\s*(import\s+\w|from\s+[\w.]+\s+import\s|def\s+\w+\s*\()", re.MULTILINE)
"""A line that starts a Python program: an import or a function definition."""


@dataclass(frozen=True)
class FenceCounts:
    """One transcript file's completions of one agent, sorted as the module docstring says."""

    transcripts: str
    completions: int
    fenced: int
    bare: int
    other: int

    @property
    def bare_share(self) -> float:
        """The share of completions that are bare programs (0.0 when there are none)."""
        return self.bare / self.completions if self.completions else 0.0


def classify(completion: str) -> str:
    """The kind of one completion: "fenced", "bare" or "other" (see the module docstring)."""
    if extract_python_block(completion) is not None:
        return "fenced"
    return "bare" if PROGRAM_LINE.search(completion) else "other"


def count(path: Path, agent: str) -> FenceCounts:
    """Sort every completion of `agent` in the transcript file `path`."""
    kinds = {"fenced": 0, "bare": 0, "other": 0}
    with path.open() as lines:
        for line in lines:
            for step in json.loads(line)["steps"]:
                if step["agent"] == agent:
                    kinds[classify(step["completion"])] += 1
    name = path.name.removesuffix(".transcripts.jsonl").removesuffix(".json")
    return FenceCounts(name, sum(kinds.values()), **kinds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "folder", type=Path, help="a folder of pettingllms-eval results and their transcripts"
    )
    parser.add_argument("--agent", default="tool", help="the agent whose completions are counted")
    parser.add_argument("--json", action="store_true", help="one JSON object per transcript file")
    args = parser.parse_args(argv)
    paths = sorted(args.folder.glob("*.transcripts.jsonl"))
    if not paths:
        parser.error(
            f"{args.folder} holds no *.transcripts.jsonl (pettingllms-eval writes them beside its result)"
        )
    for path in paths:
        counts = count(path, args.agent)
        if args.json:
            print(json.dumps({**asdict(counts), "bare_share": counts.bare_share}))
        else:
            print(
                f"{counts.transcripts}: {counts.completions} {args.agent} completions, {counts.fenced} fenced, "
                f"{counts.bare} bare programs ({100 * counts.bare_share:.0f}%), {counts.other} other"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
