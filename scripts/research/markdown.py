"""Generated sections of hand-written Markdown files (the results pages)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from research.stats import seed_summary


def replace_section(path: Path, start: str, end: str, section: str) -> None:
    """Put `section` (which begins with the `start` marker and ends with the `end` marker) into the file at `path`:
    in place of the text between the markers if both are there, else appended. A missing file starts as
    "# Results"."""
    text = path.read_text() if path.is_file() else "# Results\n"
    if start in text and end in text:
        text = text[: text.index(start)] + section + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def seed_cell(values: Sequence[float], *, show_n: bool = True) -> str:
    """A table cell of success rates over seeds, in %: "mean ± sample std (ddof=1) [the seeds' 95% t-interval]"
    and " (n=k)" when `show_n`; "mean (n=1)" for one seed; "—" for none.

    The interval is clipped to [0, 100], the range a success rate can take: the mean it covers lies there, so the
    clipping drops only impossible values and cannot lower the interval's coverage.

    >>> seed_cell([0.45, 0.47], show_n=False)
    '46.0 ± 1.4 [33.3, 58.7]'
    >>> seed_cell([0.9, 0.99], show_n=False)
    '94.5 ± 6.4 [37.3, 100.0]'
    >>> seed_cell([0.5]), seed_cell([])
    ('50.0 (n=1)', '—')
    """
    if not values:
        return "—"
    summary = seed_summary(values)
    if summary["std"] is None:
        return f"{100 * summary['mean']:.1f} (n=1)"
    low, high = max(0.0, summary["ci95"][0]), min(1.0, summary["ci95"][1])
    cell = f"{100 * summary['mean']:.1f} ± {100 * summary['std']:.1f} [{100 * low:.1f}, {100 * high:.1f}]"
    return f"{cell} (n={summary['n']})" if show_n else cell
