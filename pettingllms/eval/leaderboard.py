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
  bar) and `plots/<column>.png` (one bar per policy, with the
  95% interval as an error bar; the column's name with every run of other characters than letters, digits, `.`,
  `_` and `-` replaced by `_`).

When several files give the same label and env, the one with more episodes wins (then the later file name).
A file that repeats an earlier file's evaluation (the same policies, weights, sampling and suite) under another
label is skipped, with a note naming the file it repeats, so one run is not listed twice.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import importlib
import inspect
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FORMAT = "pettingllms-eval/1"


@dataclasses.dataclass(frozen=True)
class Cell:
    """One policy on one env."""

    success_rate: float
    ci95: tuple[float, float]
    episodes: int

    def text(self) -> str:
        low, high = self.ci95
        return f"{100 * self.success_rate:.1f} [{100 * low:.1f}, {100 * high:.1f}] (n={self.episodes})"


@dataclasses.dataclass
class Table:
    """Rows (labels) x columns (env ids); `cells[(label, env)]`; `skipped` lists unreadable files and why."""

    labels: list[str]
    envs: list[str]
    cells: dict[tuple[str, str], Cell]
    skipped: list[str]

    def mean(self, label: str, envs: Sequence[str] | None = None) -> float:
        """Mean success of `label` over `envs` (default: every column) that it covers; 0 when it covers none."""
        values = [self.cells[(label, e)].success_rate for e in envs or self.envs if (label, e) in self.cells]
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
    """The column of an env's result: its env id, followed by the suite's env arguments that differ from the
    env's defaults (`env_defaults`), when any do.

    >>> suite_column("plan-path-v0", {"suite": {"env_kwargs": {"size": 7}}})
    'plan-path-v0 {"size": 7}'
    >>> suite_column("code-v0", {"suite": {"env_kwargs": {"dataset": "bundled"}}}), suite_column("math-v0", {})
    ('code-v0', 'math-v0')
    """
    kwargs = (result.get("suite") or {}).get("env_kwargs") or {}
    defaults = env_defaults(env_id)
    kwargs = {key: value for key, value in kwargs.items() if key not in defaults or defaults[key] != value}
    return f"{env_id} {json.dumps(kwargs, sort_keys=True)}" if kwargs else env_id


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
    """The file stem of a column's plot.

    >>> plot_name('plan-path-v0 {"size": 7}')
    'plan-path-v0_size_7'
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "_", column).strip("_")


def read_results(results_dir: Path) -> Table:
    """Collect the cells of every result file in `results_dir` (module docstring)."""
    cells: dict[tuple[str, str], Cell] = {}
    skipped: list[str] = []
    seen: dict[str, str] = {}  # an evaluation's identity -> the file that gave it first
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            report = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            skipped.append(f"{path.name}: not JSON ({error})")
            continue
        if not isinstance(report, dict) or report.get("format") != FORMAT:
            skipped.append(f"{path.name}: not a {FORMAT} result")
            continue
        identity = evaluation_identity(report)
        if identity is not None and seen.get(identity, path.name) != path.name:
            skipped.append(f"{path.name}: the same evaluation as {seen[identity]}, under another label")
            continue
        if identity is not None:
            seen[identity] = path.name
        for env_id, result in report["results"].items():
            cell = Cell(float(result["success_rate"]), tuple(result["ci95"]), int(result["episodes"]))
            key = (str(report["label"]), suite_column(env_id, result))
            if key not in cells or cell.episodes >= cells[key].episodes:
                cells[key] = cell
    envs = sorted({env for _, env in cells})
    table = Table([], envs, cells, skipped)
    table.labels = table.rank()
    return table


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


def markdown(table: Table) -> str:
    """The table in Markdown (success rate in %, 95% interval, episodes)."""
    lines = [
        "| policy | " + " | ".join(table.envs) + " | mean |",
        "|---|" + "---|" * (len(table.envs) + 1),
    ]
    for label in table.labels:
        cells = [
            table.cells[(label, env)].text() if (label, env) in table.cells else "—" for env in table.envs
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {100 * table.mean(label):.1f} |")
    return "\n".join(lines) + "\n"


def plot(table: Table, out_dir: Path) -> list[Path]:
    """Write the overview and per-column PNGs under `out_dir/plots/` (replacing the PNGs there); return their
    paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    folder = out_dir / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.png"):  # plots of columns no longer on the board
        stale.unlink()
    written = []
    figure, axis = plt.subplots(figsize=(max(7.0, 1.4 * len(table.envs)) + 2.5, 4))
    width = 0.8 / max(1, len(table.labels))
    for index, label in enumerate(table.labels):
        columns = [i for i, env in enumerate(table.envs) if (label, env) in table.cells]  # missing: no bar
        cells = [table.cells[(label, table.envs[i])] for i in columns]
        rates = np.array([100 * cell.success_rate for cell in cells])
        errors = np.array([[r - 100 * c.ci95[0], 100 * c.ci95[1] - r] for r, c in zip(rates, cells)]).T
        axis.bar(np.array(columns) + index * width, rates, width, yerr=errors, capsize=2, label=label)
    axis.set_xticks(
        np.arange(len(table.envs)) + width * (len(table.labels) - 1) / 2, table.envs, rotation=20, ha="right"
    )
    axis.set_ylabel("success rate (%), 95% interval")
    axis.set_ylim(0, 105)
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    written.append(_save(figure, folder / "overview.png"))
    for env in table.envs:
        labels = [label for label in table.labels if (label, env) in table.cells]
        cells = [table.cells[(label, env)] for label in labels]
        rates = np.array([100 * cell.success_rate for cell in cells])
        errors = np.array(
            [[rate - 100 * c.ci95[0], 100 * c.ci95[1] - rate] for rate, c in zip(rates, cells)]
        ).T
        figure, axis = plt.subplots(figsize=(6, 0.45 * len(labels) + 1.2))
        axis.barh(np.arange(len(labels)), rates, xerr=errors, capsize=3, color="#4C72B0")
        axis.set_yticks(np.arange(len(labels)), labels)
        axis.invert_yaxis()
        axis.set_xlim(0, 105)
        axis.set_xlabel("success rate (%), 95% interval")
        axis.set_title(env)
        figure.tight_layout()
        written.append(_save(figure, folder / f"{plot_name(env)}.png"))
    return written


def _save(figure, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def html_page(table: Table, plots: Sequence[Path], out_dir: Path) -> str:
    """A static page with the table and the plots (relative links)."""
    head = "".join(f"<th>{html.escape(env)}</th>" for env in table.envs)
    rows = []
    for label in table.labels:
        cells = "".join(
            f"<td>{html.escape(table.cells[(label, env)].text())}</td>"
            if (label, env) in table.cells
            else "<td>—</td>"
            for env in table.envs
        )
        rows.append(
            f"<tr><th scope='row'>{html.escape(label)}</th>{cells}<td>{100 * table.mean(label):.1f}</td></tr>"
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
    """Write `leaderboard.md`, `index.html` and `plots/` for `results_dir` into `out_dir`; return the table."""
    table = read_results(Path(results_dir))
    if not table.cells:
        raise ValueError(f"no {FORMAT} result in {results_dir} (skipped: {table.skipped or 'no JSON files'})")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "leaderboard.md").write_text(
        "# PettingLLMs leaderboard\n\nSuccess rate (%) [95% interval] (episodes), fixed evaluation suites (a column "
        "is an env with its setting). Rows are ranked by pairwise comparisons: a row beats another when its mean "
        "success over the suites both cover is higher (wins minus losses; rows sharing no suite do not meet). "
        "`mean` is over the suites a row covers, comparable only between rows covering the same ones.\n\n"
        + markdown(table)
    )
    plots = plot(table, out_dir)
    (out_dir / "index.html").write_text(html_page(table, plots, out_dir))
    return table
