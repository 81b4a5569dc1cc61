"""`learning_curve.png`: success over steps, from the run's metrics rows.

The training curve is drawn as a line (one point per step). Evaluations are drawn as markers, joined by a line only
when there are more than two of them: a line between the evaluation before training and the one after it would
suggest a trajectory that was never measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SERIES = (("train/success_rate", "train (committed episodes)"), ("eval/success_rate", "evaluation"))


@dataclasses.dataclass(frozen=True)
class Series:
    label: str
    steps: tuple[int, ...]
    values: tuple[float, ...]
    linestyle: str
    marker: str | None


def curve_series(rows: Sequence[dict[str, Any]]) -> list[Series]:
    """The series to draw (see the module docstring); a metric no row holds is left out."""
    series = []
    for key, label in SERIES:
        points = [(int(row["step"]), float(row[key])) for row in rows if key in row]
        if not points:
            continue
        steps, values = zip(*points)
        if key.startswith("eval"):
            series.append(Series(label, steps, values, "-" if len(points) > 2 else "none", "o"))
        else:
            series.append(Series(label, steps, values, "-", None))
    return series


def save_learning_curve(rows: Sequence[dict[str, Any]], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    for series in curve_series(rows):
        axis.plot(
            series.steps, series.values, linestyle=series.linestyle, marker=series.marker, label=series.label
        )
    axis.set_xlabel("step")
    axis.set_ylabel("success rate")
    axis.set_ylim(-0.02, 1.02)
    axis.set_title(title)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
