"""Recover every result row a study ever committed from the git history of its JSON file, into the ledger.

    .venv/bin/python scripts/ledger_history.py            # once: docs/results/ledger.jsonl from the history

The studies recorded their rows by replacing a row of the same identity in `docs/results/<study>.json` (and the
scaling study dropped the rows of its previous setting), so a rerun's predecessor survives only in git. This walks
each study file's commits oldest first and appends to the ledger (`research.ledger`) every row version not
seen before, in the order the commits first recorded them, with `note` naming that commit and `code_commit` and
`warm_start` left null (not recorded at the time). A study file holding a list has one row per item; one holding an
object (`default_run.json`: the last measurement) is itself the row. It refuses a study the ledger already has
lines of: the recovery is made once per study, and every later row is appended by the study scripts as they
record it.

    .venv/bin/python scripts/ledger_history.py --studies default_run   # a study added to the ledger later
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from research.ledger import append, read_ledger

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "docs" / "results" / "ledger.jsonl"
STUDIES = ("scaling", "miniature", "grouping", "default_run")
"""The studies whose rows are recovered, each from `docs/results/<study>.json`."""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def history_rows(repo: Path, studies: Sequence[str]) -> Iterator[tuple[str, str, str, dict]]:
    """(study, commit, commit date, row) for every row version of each study's JSON list
    (`docs/results/<study>.json`) in `repo`'s history, oldest commit first (studies in `studies` order within a
    commit), each version once, at the commit that first recorded it."""
    paths = {study: f"docs/results/{study}.json" for study in studies}
    seen: dict[str, set[str]] = {study: set() for study in studies}
    for line in _git(repo, "log", "--reverse", "--format=%H %cs", "--", *paths.values()).splitlines():
        commit, date = line.split()
        changed = set(_git(repo, "show", "--name-only", "--format=", commit).splitlines())
        for study in studies:
            if paths[study] not in changed:
                continue
            try:
                rows = json.loads(_git(repo, "show", f"{commit}:{paths[study]}"))
            except subprocess.CalledProcessError:  # the file deleted at this commit: nothing recorded here
                continue
            for row in rows if isinstance(rows, list) else [rows]:
                text = json.dumps(row, sort_keys=True)
                if text not in seen[study]:
                    seen[study].add(text)
                    yield study, commit, date, row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="the git checkout whose history is read")
    parser.add_argument("--ledger", type=Path, default=LEDGER, help="the ledger appended to")
    parser.add_argument("--studies", nargs="+", default=list(STUDIES), choices=STUDIES)
    args = parser.parse_args(argv)
    recorded = sorted({entry.study for entry in read_ledger(args.ledger)} & set(args.studies))
    if recorded:
        raise SystemExit(
            f"{args.ledger} already has lines of {recorded}: a study's history is recovered once"
        )
    count = 0
    for study, commit, date, row in history_rows(args.repo, args.studies):
        note = f"recovered from the git history: first recorded in commit {commit[:12]}"
        append(args.ledger, study, row, code_commit=None, warm_start=None, note=note, recorded=date)
        count += 1
    print(f"wrote {count} rows to {args.ledger}")


if __name__ == "__main__":
    main()
