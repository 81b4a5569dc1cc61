"""Every experiment run on the record: an append-only ledger of result rows, and the rule a table is built by.

A study script (`scripts/grouping_study.py`, `scripts/reproduce_miniature.py`, `scripts/scaling_study.py`) records
each result row (one evaluation of one run: method, seed, budget, split, success, ...) by appending it to the
ledger, `docs/results/ledger.jsonl`, one JSON object per line:

    {"n": 17, "study": "grouping", "row": {...}, "code_commit": "9379a2a..." or null,
     "warm_start": "<sha256 of the warm start's weights>" or null, "recorded": "2026-12-02", "note": "...",
     "prev": "<sha256 of line n-1>"}

- Append-only: a rerun adds a line; no line is ever edited or removed (`record` appends no copy of a row the
  table already holds from the same code and warm start). Each line names the sha256 of the line
  before it (`prev`; the first names `GENESIS`), so an edited, removed or reordered line breaks the chain, and
  `read_ledger` raises `LedgerError` naming the line.
- `code_commit` is the commit the run's code was at (`null` where it was not recorded: rows recovered from the
  git history of the study's JSON name the commit that first recorded them in `note`), `warm_start` the digest
  of the weights the run started from (`null` where not recorded).

A study's table is built from the ledger by its declared `Rule` (`select`): the rows of the study that the rule's
`keep` admits, one per identity (`Rule.key`: the fields naming what was measured), the row of the LAST line with
that identity, in the order of those last lines, each with its line's `code_commit` added (`PROVENANCE`: a report
says which comparisons mix code commits); every earlier row of an identity, and every row `keep` refuses,
is returned as set aside with the reason, so that a report that prefers a rerun says which rows it set aside and
why. The study's JSON file (`docs/results/<study>.json`) is that selection, and a test checks it is.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pettingllms.core.errors import PettingLLMsError

GENESIS = "0" * 64
"""The `prev` of the ledger's first line."""


class LedgerError(PettingLLMsError):
    """The ledger is not an intact append-only chain (a line edited, removed, reordered or malformed)."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One line of the ledger (module docstring)."""

    n: int
    study: str
    row: dict[str, Any]
    code_commit: str | None
    warm_start: str | None
    recorded: str
    note: str
    prev: str

    def line(self) -> str:
        """The entry as its ledger line (without the newline): keys sorted, so its digest is reproducible."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)


def _digest(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()


def read_ledger(path: Path) -> list[Entry]:
    """The ledger's entries in order (none for a missing file); `LedgerError` naming the first line that breaks
    the chain: malformed, numbered out of order, or naming another line's digest as its `prev`."""
    path = Path(path)
    if not path.is_file():
        return []
    entries: list[Entry] = []
    prev = GENESIS
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        try:
            entry = Entry(**json.loads(text))
        except (json.JSONDecodeError, TypeError) as error:
            raise LedgerError(f"{path}:{number}: not a ledger line ({error})") from error
        if entry.n != number or entry.prev != prev or entry.line() != text:
            raise LedgerError(
                f"{path}:{number}: the chain is broken (this line or the one before it was edited, removed or "
                f"reordered; expected n={number} and prev={prev[:12]}..., found n={entry.n} and "
                f"prev={entry.prev[:12]}...); the ledger is append-only: restore it from version control"
            )
        entries.append(entry)
        prev = _digest(text)
    return entries


def append(
    path: Path,
    study: str,
    row: dict[str, Any],
    *,
    code_commit: str | None,
    warm_start: str | None,
    note: str = "",
    recorded: str | None = None,
) -> Entry:
    """Append `row` of `study` to the ledger at `path` (created if missing; its chain checked first); the entry.
    `recorded` defaults to today's date (UTC)."""
    path = Path(path)
    entries = read_ledger(path)
    entry = Entry(
        n=len(entries) + 1,
        study=study,
        row=row,
        code_commit=code_commit,
        warm_start=warm_start,
        recorded=recorded or datetime.datetime.now(datetime.UTC).date().isoformat(),
        note=note,
        prev=_digest(entries[-1].line()) if entries else GENESIS,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(entry.line() + "\n")
    return entry


@dataclasses.dataclass(frozen=True)
class Rule:
    """How a study's table is built from the ledger (module docstring): its rows are identified by the fields
    `key`; `keep(row)` says whether a row belongs in today's table at all (`refusal` says why one does not)."""

    study: str
    key: tuple[str, ...]
    keep: Callable[[dict[str, Any]], bool] = lambda row: True
    refusal: str = ""

    def identity(self, row: dict[str, Any]) -> str:
        return json.dumps([row.get(field) for field in self.key], sort_keys=True)


PROVENANCE = "code_commit"
"""The key under which a table's row carries its ledger line's code commit (`select`); a row handed to `record`
loses it: its own line names the commit it is recorded at."""


@dataclasses.dataclass(frozen=True)
class Selection:
    """A study's table (`rows`, each with its line's `PROVENANCE`), the entries they come from (`entries`) and the
    entries set aside, each with its reason (`set_aside`)."""

    rows: list[dict[str, Any]]
    entries: list[Entry]
    set_aside: list[tuple[Entry, str]]


def select(entries: Sequence[Entry], rule: Rule) -> Selection:
    """The table `rule` builds from `entries` (module docstring)."""
    study = [entry for entry in entries if entry.study == rule.study]
    set_aside: list[tuple[Entry, str]] = [(e, rule.refusal) for e in study if not rule.keep(e.row)]
    kept = [entry for entry in study if rule.keep(entry.row)]
    last: dict[str, Entry] = {}
    for entry in kept:
        identity = rule.identity(entry.row)
        if identity in last:
            set_aside.append(
                (last[identity], f"superseded by line {entry.n}, a rerun recorded {entry.recorded}")
            )
        last[identity] = entry
    chosen = sorted(last.values(), key=lambda entry: entry.n)
    set_aside.sort(key=lambda pair: pair[0].n)
    rows = [{**entry.row, PROVENANCE: entry.code_commit} for entry in chosen]
    return Selection(rows, chosen, set_aside)


def set_aside_lines(selection: Selection, describe: Callable[[dict[str, Any]], str]) -> list[str]:
    """One Markdown bullet per row set aside: line number, what the row measured (`describe(row)`), its success
    where it has one, and why it was set aside."""
    lines = []
    for entry, reason in selection.set_aside:
        rate = entry.row.get("success_rate")
        shown = f", success {100 * rate:.1f}%" if isinstance(rate, (int, float)) else ""
        lines.append(f"- line {entry.n} ({entry.recorded}): {describe(entry.row)}{shown}: {reason}")
    return lines


CODE_PATHS = ("pettingllms", "scripts", "configs", "pyproject.toml")
"""What makes a result's code: a change elsewhere (the results and docs a study itself writes) is not "dirty"."""


def code_version(repo: Path) -> str | None:
    """The commit the git checkout at `repo` is at, with "+dirty" when a tracked file of `CODE_PATHS` differs from
    it; None outside a git checkout (or without git)."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def folder_digest(folder: Path | None) -> str | None:
    """A sha256 of the files under `folder` (their relative paths and bytes, in path order): the identity of a
    warm start's weights and tokenizer; None for None or for what is no local folder (a hub id)."""
    if folder is None or not Path(folder).is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


LEDGER_NAME = "ledger.jsonl"
"""The ledger's file name: it lies beside the study's JSON table (`docs/results/ledger.jsonl`)."""


def record(
    table: Path, rule: Rule, row: dict[str, Any], *, repo: Path, warm_start: Path | None
) -> list[dict]:
    """What a study script does with a new row: append it to the ledger beside `table` (with the checkout's
    `code_version` and the warm start's `folder_digest`), rebuild the table by `rule`, write it to `table`, and
    return its rows. A `PROVENANCE` key of `row` (a row copied from a table) is dropped.

    A row the table already holds as it is (the same identity's last line has the same row, code commit and warm
    start) is not appended again: a resumed study re-reads its cached evaluations, and recording them once more
    would list the first line as set aside by a "rerun" that measured nothing new. A row whose identity's last
    line was recorded at the same (clean) code commit from another warm start is refused (ValueError naming the
    line and the fix), the ledger unchanged: that warm start was rebuilt, not restored (`cycle.warm_start`)."""
    ledger = Path(table).with_name(LEDGER_NAME)
    row = {key: value for key, value in row.items() if key != PROVENANCE}
    code_commit, digest = code_version(repo), folder_digest(warm_start)
    selection = select(read_ledger(ledger), rule)
    rebuilt = _from_another_warm_start(selection, rule, row, code_commit, digest)
    if rebuilt is not None:
        raise ValueError(
            f"line {rebuilt.n} of {ledger} holds this row ({rule.identity(row)}) from warm start "
            f"{rebuilt.warm_start[:12]} at code commit {code_commit}; this one comes from warm start "
            f"{digest[:12]} at the same commit: the warm start was rebuilt, not restored (a rebuild is not "
            "byte-identical), and a row is never replaced by one from another warm start. Start the study from the "
            "kept warm start (the table's folder's warm_starts/), or record the rerun under a new code commit"
        )
    if not _holds(selection, rule, row, code_commit, digest):
        append(ledger, rule.study, row, code_commit=code_commit, warm_start=digest)
        selection = select(read_ledger(ledger), rule)
    rows = selection.rows
    Path(table).write_text(json.dumps(rows, indent=1) + "\n")
    return rows


def _from_another_warm_start(
    selection: Selection, rule: Rule, row: dict[str, Any], code_commit: str | None, warm_start: str | None
) -> Entry | None:
    """The entry of `selection` with `row`'s identity recorded at `code_commit` from a warm start other than
    `warm_start` (both known), or None: the same code cannot have built two warm starts on purpose."""
    identity = rule.identity(row)
    return next(
        (
            entry
            for entry in selection.entries
            if rule.identity(entry.row) == identity
            and entry.code_commit == code_commit
            and None not in (entry.warm_start, warm_start, code_commit)
            and not code_commit.endswith("+dirty")  # a dirty checkout's code is not known to be the same
            and entry.warm_start != warm_start
        ),
        None,
    )


def _holds(
    selection: Selection, rule: Rule, row: dict[str, Any], code_commit: str | None, warm_start: str | None
) -> bool:
    """Whether `selection` already holds `row` from `code_commit` and `warm_start` as its identity's last line
    (compared as the ledger stores it: a tuple of `row` reads back as a list)."""
    identity, stored = rule.identity(row), json.loads(json.dumps(row))
    return any(
        rule.identity(entry.row) == identity
        and (entry.row, entry.code_commit, entry.warm_start) == (stored, code_commit, warm_start)
        for entry in selection.entries
    )


def table_rows(table: Path, rule: Rule) -> list[dict]:
    """The rows of `rule`'s table, built from the ledger beside `table` (none without a ledger)."""
    return select(read_ledger(Path(table).with_name(LEDGER_NAME)), rule).rows


def write_table(table: Path, rule: Rule) -> list[dict]:
    """Rebuild `rule`'s table from the ledger beside `table` and write it there (a study's `--report`); its rows."""
    rows = table_rows(table, rule)
    Path(table).write_text(json.dumps(rows, indent=1) + "\n")
    return rows
