"""`learning_curve.png`: success and reward over steps, from the run's metrics rows.

Two panels. The top one shows two different success rates, each labelled with what it measures (`CurveLabels`):

- training (`train/success_rate`, a line, one point per step): the share of the step's episodes that the
  committed candidates solved. Each turn commits the best of K sampled candidates (AT-GRPO), at the training
  temperature, on training instances: a best-of-K figure, so it runs well above the greedy evaluation;
- evaluation (`eval/success_rate`, markers): one greedy completion per turn on the fixed evaluation suite (the
  figure `pettingllms-eval` reports). Markers are joined by a line only when there are more than two of them: a
  line between the evaluation before training and the one after it would suggest a trajectory that was never
  measured.

The bottom panel shows each agent's mean training reward per step (`train/reward/<agent>`), the quantity its
advantages are computed from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TRAIN_KEY, EVAL_KEY, REWARD_PREFIX = "train/success_rate", "eval/success_rate", "train/reward/"


@dataclasses.dataclass(frozen=True)
class CurveLabels:
    """What the two success series measure, in the legend's words."""

    train: str = "training: committed best-of-K episodes (sampled)"
    evaluation: str = "evaluation: greedy, fixed suite"

    @classmethod
    def for_run(
        cls, num_generations: int, temperature: float, eval_episodes: int, eval_split: str
    ) -> CurveLabels:
        """The labels of a run with K=`num_generations` at `temperature`, evaluated on `eval_episodes` instances
        of `eval_split`.

        >>> CurveLabels.for_run(4, 1.0, 300, "eval").train
        'training: best of K=4 sampled candidates committed (T=1)'
        >>> CurveLabels.for_run(4, 1.0, 300, "eval").evaluation
        'evaluation: greedy, 300 eval-split episodes'
        """
        return cls(
            f"training: best of K={num_generations} sampled candidates committed (T={temperature:g})",
            f"evaluation: greedy, {eval_episodes} {eval_split}-split episodes",
        )


@dataclasses.dataclass(frozen=True)
class Series:
    label: str
    steps: tuple[int, ...]
    values: tuple[float, ...]
    linestyle: str
    marker: str | None


def curve_series(rows: Sequence[dict[str, Any]], labels: CurveLabels = CurveLabels()) -> list[Series]:
    """The top panel's series (see the module docstring); a metric no row holds is left out."""
    series = []
    for key, label in ((TRAIN_KEY, labels.train), (EVAL_KEY, labels.evaluation)):
        points = [(int(row["step"]), float(row[key])) for row in rows if key in row]
        if not points:
            continue
        steps, values = zip(*points)
        if key == EVAL_KEY:
            series.append(Series(label, steps, values, "-" if len(points) > 2 else "none", "o"))
        else:
            series.append(Series(label, steps, values, "-", None))
    return series


def reward_series(rows: Sequence[dict[str, Any]]) -> list[Series]:
    """The bottom panel's series: one line per agent with a `train/reward/<agent>` metric, in name order."""
    agents = sorted(
        {key.removeprefix(REWARD_PREFIX) for row in rows for key in row if key.startswith(REWARD_PREFIX)}
    )
    series = []
    for agent in agents:
        key = REWARD_PREFIX + agent
        steps, values = zip(*[(int(row["step"]), float(row[key])) for row in rows if key in row])
        series.append(Series(agent, steps, values, "-", None))
    return series


def save_learning_curve(
    rows: Sequence[dict[str, Any]], title: str, path: Path, labels: CurveLabels = CurveLabels()
) -> None:
    """Write the two panels (module docstring) of `rows` to `path` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, height_ratios=(3, 2))
    for series in curve_series(rows, labels):
        top.plot(
            series.steps, series.values, linestyle=series.linestyle, marker=series.marker, label=series.label
        )
    top.set_ylabel("success rate")
    top.set_ylim(-0.02, 1.02)
    top.set_title(title)
    top.legend(fontsize=8)
    for series in reward_series(rows):
        bottom.plot(series.steps, series.values, label=series.label)
    bottom.set_xlabel("step")
    bottom.set_ylabel("mean training reward")
    if bottom.lines:
        bottom.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
