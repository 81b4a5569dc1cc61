"""The leaderboard: every `pettingllms-eval` result in a folder, as a Markdown table and a static HTML page.

`build_leaderboard(results_dir, out_dir)` reads `results_dir/*.json` (files in the `pettingllms-eval/1` format;
other JSON files are skipped with a note), and writes to `out_dir`:

- `leaderboard.md`: rows are policies (their `label`), columns are suites (`suite_column`: the env id, with the
  suite's env arguments when it has any, e.g. `plan-path-v0 {"size": 7}`, since another setting is another
  suite), cells the success rate in percent with its 95% interval and the number of episodes; rows ranked by
  pairwise comparisons (`Table.rank`: a row beats another when its mean success over the columns both cover
  is higher; wins minus losses, then the mean, then the label), so a row covering one suite is never ranked by
  a mean over other suites than its rival's; `mean` is over the columns a row covers;
- `index.html`: the same table and the plots, self-contained apart from the PNGs beside it;
- `plots/overview.png` (grouped bars with their 95% intervals, one group per column; a missing result draws no
  bar) and one `plots/<column>.png` per column (one bar per policy, with the 95% interval as an error bar;
  `plot_name`).

The board's files are built together or not at all: everything is rendered into a staging folder first, and the
old `leaderboard.md`, `index.html` and `plots/` are replaced only once all of it is written.

What a result file says is checked, not trusted, and nothing is dropped or replaced without a note in the board
itself (a "Notes" list in `leaderboard.md` and `index.html`, also printed by the command):

- a file that breaks the result format (`pettingllms.eval.result_schema`: types, ranges, finite numbers) is
  skipped, with its problems;
- when two files give the same label and the same column, neither replaces the other: each of that label's files
  becomes its own row, `label [file name]`;
- a file that repeats an earlier file's evaluation (the same suite, policies, weights, sampling and seed) with the
  same results is shown once (the first file by name) and the note names both files and labels; the same claimed
  evaluation with other results is shown twice, with a note;
- labels and columns are escaped where they are written (Markdown, HTML), and control and format characters
  (newlines, bidi overrides) are shown as `\\uXXXX`, so no label can forge a row or reorder text.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import html
import importlib
import inspect
import itertools
import json
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pettingllms.envs.tiers import TIER_NAMES
from pettingllms.eval.result_schema import FORMAT, result_problems


@dataclasses.dataclass(frozen=True)
class Cell:
    """One policy on one env."""

    success_rate: float
    ci95: tuple[float, float]
    episodes: int
    progress: float | None = None
    """The mean progression score (0-100, the result's `mean_progress`); None where the result has none."""

    def text(self) -> str:
        low, high = self.ci95
        return f"{100 * self.success_rate:.1f} [{100 * low:.1f}, {100 * high:.1f}] (n={self.episodes})"

    def text_with_progress(self) -> str:
        """`text()`, then the mean progression score ("progress —" where the result has none)."""
        shown = "—" if self.progress is None else f"{self.progress:.1f}"
        return f"{self.text()}; progress {shown}"


@dataclasses.dataclass
class Table:
    """Rows (labels) x columns (env ids); `cells[(label, env)]`; `notes` says which files were skipped or shown
    otherwise than as they came, and why (module docstring)."""

    labels: list[str]
    envs: list[str]
    cells: dict[tuple[str, str], Cell]
    notes: list[str]

    @property
    def suites(self) -> list[str]:
        """The columns of the main table: every column that is not a difficulty tier's (`column_tier`)."""
        return [env for env in self.envs if column_tier(env) is None]

    def tier_envs(self) -> dict[str, dict[str, str]]:
        """env id -> {tier name -> column}, for the envs with a tier's column, tiers easiest first."""
        found: dict[str, dict[str, str]] = {}
        for column in self.envs:
            if (tier := column_tier(column)) is not None:
                found.setdefault(tier[0], {})[tier[1]] = column
        return {
            env: {name: tiers[name] for name in TIER_NAMES if name in tiers}
            for env, tiers in sorted(found.items())
        }

    def mean(self, label: str, envs: Sequence[str] | None = None) -> float:
        """Mean success of `label` over `envs` (None: every column) that it covers; 0 when it covers none."""
        columns = self.envs if envs is None else envs
        values = [self.cells[(label, e)].success_rate for e in columns if (label, e) in self.cells]
        return sum(values) / len(values) if values else 0.0

    def covered(self, label: str) -> set[str]:
        return {env for env in self.envs if (label, env) in self.cells}

    def rank(self) -> list[str]:
        """The labels, best first: by wins minus losses over the other rows, a win being a higher mean success
        on the columns both rows cover (rows sharing no column do not meet), then by mean, then by label."""
        labels = sorted({label for label, _ in self.cells})
        score = dict.fromkeys(labels, 0)
        for index, first in enumerate(labels):
            for second in labels[index + 1 :]:
                shared = sorted(self.covered(first) & self.covered(second))
                if shared:
                    difference = self.mean(first, shared) - self.mean(second, shared)
                    sign = (difference > 0) - (difference < 0)
                    score[first] += sign
                    score[second] -= sign
        return sorted(labels, key=lambda label: (-score[label], -self.mean(label), label))


def suite_column(env_id: str, result: dict) -> str:
    """The column of an env's result: its env id, followed by its difficulty tier (`[hard]`) for a result of a
    tier's suite (`tier`, which `pettingllms-eval --tier` records when the env arguments are the tier's own), else
    by the suite's env arguments that differ from the env's defaults (`env_defaults`), when any do.

    >>> suite_column("plan-path-v0", {"suite": {"env_kwargs": {"size": 7}}})
    'plan-path-v0 {"size": 7}'
    >>> suite_column("code-v0", {"suite": {"env_kwargs": {"dataset": "bundled"}}}), suite_column("math-v0", {})
    ('code-v0', 'math-v0')
    >>> suite_column("plan-path-v0", {"tier": "hard", "suite": {"env_kwargs": {"size": 12, "obstacle_density": 0.3}}})
    'plan-path-v0 [hard]'
    """
    if result.get("tier") is not None:
        return f"{env_id} [{result['tier']}]"
    kwargs = (result.get("suite") or {}).get("env_kwargs") or {}
    defaults = env_defaults(env_id)
    kwargs = {key: value for key, value in kwargs.items() if key not in defaults or defaults[key] != value}
    return f"{env_id} {json.dumps(kwargs, sort_keys=True)}" if kwargs else env_id


TIER_COLUMN = re.compile(r"^(?P<env>\S+) \[(?P<tier>" + "|".join(TIER_NAMES) + r")\]$")
"""A tier's column, as `suite_column` names it: `env-id [tier]`."""


def column_tier(column: str) -> tuple[str, str] | None:
    """(env id, tier) of a tier's column; None for any other column.

    >>> column_tier("sokoban-v0 [expert]"), column_tier('sokoban-v0 {"num_boxes": 2}')
    (('sokoban-v0', 'expert'), None)
    """
    match = TIER_COLUMN.match(column)
    return (match["env"], match["tier"]) if match else None


@functools.cache
def env_defaults(env_id: str) -> dict[str, Any]:
    """The default value of every keyword argument of a registered env's class (its own and its bases'), with
    the registration's kwargs; empty for an id that is not registered here."""
    import pettingllms

    spec = pettingllms.registry.get(env_id)
    if spec is None:
        return {}
    module, _, name = spec.entry_point.partition(":")
    defaults: dict[str, Any] = {}
    for cls in getattr(importlib.import_module(module), name).__mro__:
        init = cls.__dict__.get("__init__")
        if init is not None:
            for parameter in inspect.signature(init).parameters.values():
                if parameter.default is not inspect.Parameter.empty:
                    defaults.setdefault(parameter.name, parameter.default)
    return {**defaults, **dict(spec.kwargs)}


def plot_name(column: str) -> str:
    """The file stem of a column's plot, distinct for distinct columns and never `overview`: the column with every
    run of other characters than letters, digits, `.`, `_` and `-` replaced by `_`, followed by the first 8 hex
    digits of the column's SHA-256 unless the column is already such a name in lower case (so `a b` and `a_b`,
    or `A` and `a` on a case-blind disk, get different files).

    >>> plot_name("plan-path-v0"), plot_name('plan-path-v0 {"size": 7}'), plot_name("overview")
    ('plan-path-v0', 'plan-path-v0_size_7-40e45095', 'overview-bd445c46')
    """
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", column).strip("_") or "column"
    if stem == column and column == column.lower() and column != "overview":
        return stem
    return f"{stem}-{hashlib.sha256(column.encode()).hexdigest()[:8]}"


@dataclasses.dataclass
class _Entry:
    """One readable result file: its name, label, cells by column, and outcomes (what two repeats share)."""

    file: str
    label: str
    columns: dict[str, Cell]
    outcomes: str


def read_results(results_dir: Path) -> Table:
    """Collect the cells of every result file in `results_dir` (module docstring)."""
    notes: list[str] = []
    entries: list[_Entry] = []
    seen: dict[str, _Entry] = {}  # an evaluation's identity -> the entry that gave it first
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            report = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            notes.append(f"{path.name}: skipped: not JSON ({error})")
            continue
        problems = result_problems(report)
        if problems:
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            notes.append(f"{path.name}: skipped: " + "; ".join(problems[:3]) + more)
            continue
        entry = _entry(path.name, report)
        identity = evaluation_identity(report)
        first = seen.get(identity) if identity is not None else None
        if first is not None and first.outcomes == entry.outcomes:
            notes.append(
                f"{entry.file} (label {entry.label!r}) repeats {first.file} (label {first.label!r}): the same "
                f"evaluation with the same results, shown once, as {first.label!r}"
            )
            continue
        if first is not None:
            notes.append(
                f"{entry.file} (label {entry.label!r}) and {first.file} (label {first.label!r}) claim the same "
                "evaluation (suite, policies, weights, sampling, seed) with different results: both shown"
            )
        elif identity is not None:
            seen[identity] = entry
        entries.append(entry)
    cells = _rows(entries, notes)
    envs = sorted({env for _, env in cells})
    table = Table([], envs, cells, notes)
    table.labels = table.rank()
    return table


def _entry(file: str, report: dict) -> _Entry:
    columns, outcomes = {}, {}
    for env_id, result in report["results"].items():
        columns[suite_column(env_id, result)] = Cell(
            float(result["success_rate"]),
            tuple(result["ci95"]),
            int(result["episodes"]),
            result.get("mean_progress"),
        )
        outcomes[env_id] = [
            result["success_rate"],
            result["ci95"],
            result["episodes"],
            result.get("per_episode"),
        ]
    return _Entry(file, report["label"], columns, json.dumps(outcomes, sort_keys=True))


def _rows(entries: list[_Entry], notes: list[str]) -> dict[tuple[str, str], Cell]:
    """The cells by (row, column): a label's files merge into one row unless two of them give the same column,
    in which case each of its files is a row of its own (`label [file]`), with a note."""
    cells: dict[tuple[str, str], Cell] = {}
    by_label: dict[str, list[_Entry]] = {}
    for entry in entries:
        by_label.setdefault(entry.label, []).append(entry)
    rows = {}  # entry file -> row name
    for label, group in by_label.items():
        clash = sorted(
            {c for a, b in itertools.combinations(group, 2) for c in a.columns.keys() & b.columns.keys()}
        )
        for entry in group:
            rows[entry.file] = f"{label} [{entry.file}]" if clash else label
        if clash:
            notes.append(
                f"label {label!r}: {', '.join(e.file for e in group)} each report {', '.join(clash)}; neither "
                "replaces the other: one row per file"
            )
    taken = set(by_label)
    for entry in entries:
        row = rows[entry.file]
        if row != entry.label and row in taken:  # a file's row name is another file's own label
            row = f"{row} #{hashlib.sha256(entry.file.encode()).hexdigest()[:8]}"
        taken.add(row)
        for column, cell in entry.columns.items():
            cells[(row, column)] = cell
    return cells


IDENTITY_FIELDS = ("suite", "policies", "weights_sha256", "sampling", "workflow", "samples", "seed")
"""What makes two env results one evaluation (`pettingllms-eval`'s result fields), whatever their labels."""


def evaluation_identity(report: dict) -> str | None:
    """A key equal for two reports of the same evaluation (every env's `IDENTITY_FIELDS`); None for a report
    whose results lack the suite or the policies (hand-written files), which is never taken for another."""
    results = report.get("results") or {}
    if not results or any("suite" not in r or "policies" not in r for r in results.values()):
        return None
    fields = {env: {f: r.get(f) for f in IDENTITY_FIELDS} for env, r in results.items()}
    return json.dumps(fields, sort_keys=True)


def visible(text: str) -> str:
    """`text` with every control and format character (newline, NUL, bidi override, zero-width joiner) written
    as `\\uXXXX`, so it cannot break a line or reorder what surrounds it.

    >>> visible("a\\nb\\u202ec")
    'a\\\\u000ab\\\\u202ec'
    """
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cc", "Cf") else c for c in text)


MARKDOWN_SPECIAL = re.compile(r"([\\`*\[\]<>|~&])")
"""What Markdown could read as markup inside a table cell: a cell or row break, HTML, a link, code, emphasis."""


def markdown_text(text: str) -> str:
    """`text` as literal text in a Markdown table cell: `visible`, and every character of `MARKDOWN_SPECIAL`
    backslash-escaped.

    >>> markdown_text("a | b <i>")
    'a \\\\| b \\\\<i\\\\>'
    """
    return MARKDOWN_SPECIAL.sub(r"\\\1", visible(text))


def markdown(table: Table) -> str:
    """The main table in Markdown (success rate in %, 95% interval, episodes) over the suites that are no tier's,
    then the difficulty tiers' tables (`tier_markdown`), then the notes, if any."""
    suites = table.suites
    lines = [
        "| policy | " + " | ".join(markdown_text(env) for env in suites) + " | mean |",
        "|---|" + "---|" * (len(suites) + 1),
    ]
    for label in table.labels:
        if not table.covered(label) & set(suites):
            continue
        cells = [table.cells[(label, env)].text() if (label, env) in table.cells else "—" for env in suites]
        lines.append(
            f"| {markdown_text(label)} | " + " | ".join(cells) + f" | {100 * table.mean(label, suites):.1f} |"
        )
    lines += tier_markdown(table)
    if table.notes:
        lines += ["", "## Notes", "", *(f"- {markdown_text(note)}" for note in table.notes)]
    return "\n".join(lines) + "\n"


TIERS_INTRO = (
    "Each generated env at its difficulty tiers (docs/tiers.md): success rate (%) [95% interval] (episodes); "
    "progress, the mean progression score (0 to 100: partial progress by the env's own measure, 100 once "
    "solved)."
)


def tier_markdown(table: Table) -> list[str]:
    """The lines of the difficulty tiers' section: one table per env with tier columns (rows: the policies
    evaluated on any of its tiers, in the board's order; columns: its tiers, easiest first); [] when no column
    is a tier's."""
    tier_envs = table.tier_envs()
    if not tier_envs:
        return []
    lines = ["", "## Difficulty tiers", "", TIERS_INTRO]
    for env, tiers in tier_envs.items():
        lines += ["", f"### {markdown_text(env)}", "", "| policy | " + " | ".join(tiers) + " |"]
        lines.append("|---|" + "---|" * len(tiers))
        for label in table.labels:
            if table.covered(label) & set(tiers.values()):
                cells = [
                    table.cells[(label, column)].text_with_progress()
                    if (label, column) in table.cells
                    else "—"
                    for column in tiers.values()
                ]
                lines.append(f"| {markdown_text(label)} | " + " | ".join(cells) + " |")
    return lines


def plot(table: Table, out_dir: Path) -> list[Path]:
    """Write the overview and per-column PNGs of the main table's suites (`Table.suites`; the tiers' figures are
    in their tables) under `out_dir/plots/`; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    folder = out_dir / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    suites = table.suites
    if suites:  # a board of tier results only has no overview
        written.append(_overview(table, folder / "overview.png"))
    for env in suites:
        labels = [label for label in table.labels if (label, env) in table.cells]
        cells = [table.cells[(label, env)] for label in labels]
        rates = np.array([100 * cell.success_rate for cell in cells])
        errors = np.array(
            [[rate - 100 * c.ci95[0], 100 * c.ci95[1] - rate] for rate, c in zip(rates, cells)]
        ).T
        figure, axis = plt.subplots(figsize=(6, 0.45 * len(labels) + 1.2))
        axis.barh(np.arange(len(labels)), rates, xerr=errors, capsize=3, color="#4C72B0")
        axis.set_yticks(np.arange(len(labels)), [visible(label) for label in labels])
        axis.invert_yaxis()
        axis.set_xlim(0, 105)
        axis.set_xlabel("success rate (%), 95% interval")
        axis.set_title(visible(env))
        figure.tight_layout()
        written.append(_save(figure, folder / f"{plot_name(env)}.png"))
    return written


LEGEND_LINE_INCHES = 0.17
"""The height of one line of the overview's 7-point legend: the figure grows with the policies it shows."""


def _overview(table: Table, path: Path) -> Path:
    """Grouped bars of the main table's suites, one group per suite, one bar per policy covering it."""
    import matplotlib.pyplot as plt
    import numpy as np

    suites = table.suites
    labels = [label for label in table.labels if table.covered(label) & set(suites)]
    legend_inches = LEGEND_LINE_INCHES * len(labels) + 0.5  # the legend beside the axes, one line per policy
    figure, axis = plt.subplots(figsize=(max(7.0, 1.4 * len(suites)) + 2.5, max(4.0, legend_inches)))
    width = 0.8 / max(1, len(labels))
    for index, label in enumerate(labels):
        columns = [i for i, env in enumerate(suites) if (label, env) in table.cells]  # missing: no bar
        cells = [table.cells[(label, suites[i])] for i in columns]
        rates = np.array([100 * cell.success_rate for cell in cells])
        errors = np.array([[r - 100 * c.ci95[0], 100 * c.ci95[1] - r] for r, c in zip(rates, cells)]).T
        axis.bar(
            np.array(columns) + index * width, rates, width, yerr=errors, capsize=2, label=visible(label)
        )
    axis.set_xticks(
        np.arange(len(suites)) + width * (len(labels) - 1) / 2,
        [visible(env) for env in suites],
        rotation=20,
        ha="right",
    )
    axis.set_ylabel("success rate (%), 95% interval")
    axis.set_ylim(0, 105)
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    return _save(figure, path)


def _save(figure, path: Path) -> Path:
    import matplotlib.pyplot as plt

    # "tight": tick labels and a legend beside the axes stay inside the image
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)
    return path


def _html_rows(table: Table, columns: Sequence[str], with_progress: bool = False) -> list[str]:
    """The rows of the policies covering any of `columns`, as HTML, labels and cells escaped; the main table's
    (without progress) end with the mean over `columns`."""
    rows = []
    for label in table.labels:
        if not table.covered(label) & set(columns):
            continue
        text = Cell.text_with_progress if with_progress else Cell.text
        cells = "".join(
            f"<td>{html.escape(text(table.cells[(label, env)]))}</td>"
            if (label, env) in table.cells
            else "<td>—</td>"
            for env in columns
        )
        mean = "" if with_progress else f"<td>{100 * table.mean(label, columns):.1f}</td>"
        rows.append(f"<tr><th scope='row'>{html.escape(visible(label))}</th>{cells}{mean}</tr>")
    return rows


def _html_tiers(table: Table) -> str:
    """The difficulty tiers' section of the page (`tier_markdown`'s tables); empty when no column is a tier's."""
    tier_envs = table.tier_envs()
    if not tier_envs:
        return ""
    parts = ["<h2>Difficulty tiers</h2>", f"<p>{html.escape(TIERS_INTRO)}</p>"]
    for env, tiers in tier_envs.items():
        head = "".join(f"<th>{html.escape(name)}</th>" for name in tiers)
        rows = "\n".join(_html_rows(table, list(tiers.values()), with_progress=True))
        parts.append(
            f"<h3>{html.escape(visible(env))}</h3>\n<table class='tiers'>\n<thead><tr><th>policy</th>{head}</tr>"
            f"</thead>\n<tbody>\n{rows}\n</tbody>\n</table>"
        )
    return "\n".join(parts)


def html_page(table: Table, plots: Sequence[Path], out_dir: Path) -> str:
    """A static page with the table and the plots (relative links)."""
    head = "".join(f"<th>{html.escape(visible(env))}</th>" for env in table.suites)
    rows = _html_rows(table, table.suites)
    notes = (
        "<h2>Notes</h2>\n<ul id='notes'>"
        + "".join(f"<li>{html.escape(visible(note))}</li>" for note in table.notes)
        + "</ul>"
        if table.notes
        else ""
    )
    images = "\n".join(
        f'<figure><img class="plot" src="{html.escape(p.relative_to(out_dir).as_posix())}" '
        f'alt="{html.escape(p.stem)}"><figcaption>{html.escape(p.stem)}</figcaption></figure>'
        for p in plots
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>PettingLLMs leaderboard</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 2em; }}
th, td {{ border: 1px solid #ccc; padding: 0.35em 0.7em; text-align: right; }}
th[scope=row] {{ text-align: left; }}
thead th {{ background: #f0f0f0; }}
figure {{ display: inline-block; margin: 0 1em 1em 0; }}
</style>
</head>
<body>
<h1>PettingLLMs leaderboard</h1>
<p>Success rate (%) on each environment's fixed evaluation suite, with its 95% Wilson interval and the number of
episodes. Rows are ranked by pairwise comparisons: a row beats another when its mean success over the suites both
cover is higher (wins minus losses). The mean is over the suites a row covers.</p>
<table id="leaderboard">
<thead><tr><th>policy</th>{head}<th>mean</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
{_html_tiers(table)}
{notes}
{images}
<script>
// The page reports how many plots rendered (used by the headless-browser test).
window.addEventListener("load", () => {{
  const shown = [...document.querySelectorAll("img.plot")].filter((img) => img.complete && img.naturalWidth > 0);
  document.body.dataset.plotsRendered = String(shown.length);
}});
</script>
</body>
</html>
"""


def build_leaderboard(results_dir: Path, out_dir: Path) -> Table:
    """Write `leaderboard.md`, `index.html` and `plots/` for `results_dir` into `out_dir`, all or none of them
    (module docstring); return the table."""
    table = read_results(Path(results_dir))
    if not table.cells:
        raise ValueError(f"no {FORMAT} result in {results_dir} (skipped: {table.notes or 'no JSON files'})")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".leaderboard-", dir=out_dir))
    try:
        (staging / "leaderboard.md").write_text(
            "# PettingLLMs leaderboard\n\nSuccess rate (%) [95% interval] (episodes), fixed evaluation suites (a "
            "column is an env with its setting). Rows are ranked by pairwise comparisons: a row beats another when "
            "its mean success over the suites both cover is higher (wins minus losses; rows sharing no suite do not "
            "meet). `mean` is over the suites a row covers, comparable only between rows covering the same ones. The "
            "difficulty tiers of the generated envs have their own section, with the mean progression score.\n\n"
            + markdown(table)
        )
        plots = plot(table, staging)
        (staging / "index.html").write_text(html_page(table, plots, staging))
        _replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return table


def _replace(staging: Path, out_dir: Path) -> None:
    """Move the board written in `staging` into `out_dir`, in place of the old one (its `plots/` whole)."""
    if (out_dir / "plots").is_dir():
        (out_dir / "plots").rename(staging / "old-plots")
    (staging / "plots").rename(out_dir / "plots")
    for name in ("leaderboard.md", "index.html"):
        os.replace(staging / name, out_dir / name)
