"""The learning curve: labelled success series (evaluations joined by a line only when there are more than two),
and a reward panel per agent."""

import pytest

pytest.importorskip("matplotlib")

from pettingllms.trainers.outputs.learning_curve import (  # noqa: E402
    CurveLabels,
    curve_series,
    reward_series,
    save_learning_curve,
)


def rows(eval_steps, steps=4):
    out = [{"step": 0, "eval/success_rate": 0.1}] if 0 in eval_steps else []
    for step in range(1, steps + 1):
        row = {
            "step": step,
            "train/success_rate": step / 10,
            "train/reward/tool": step,
            "train/reward/plan": -step,
        }
        if step in eval_steps:
            row["eval/success_rate"] = step / 5
        out.append(row)
    return out


def test_two_evaluations_are_markers_without_a_line():
    train, evaluation = curve_series(rows({0, 4}))
    assert (train.linestyle, train.steps) == ("-", (1, 2, 3, 4))
    assert (evaluation.linestyle, evaluation.marker, evaluation.steps) == ("none", "o", (0, 4))


def test_three_evaluations_are_joined():
    evaluation = curve_series(rows({0, 2, 4}))[1]
    assert (evaluation.linestyle, evaluation.steps, evaluation.values) == ("-", (0, 2, 4), (0.1, 0.4, 0.8))


def test_the_figure_is_written(tmp_path):
    save_learning_curve(rows({0, 4}), "t", tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_each_success_series_says_what_it_measures():
    labels = CurveLabels.for_run(4, 1.0, 300, "eval")
    train, evaluation = curve_series(rows({0, 4}), labels)
    assert train.label == "training: best of K=4 sampled candidates committed (T=1)"
    assert evaluation.label == "evaluation: greedy, 300 eval-split episodes"


def test_the_reward_panel_has_one_line_per_agent():
    plan, tool = reward_series(rows({0, 4}))
    assert (plan.label, plan.steps, plan.values) == ("plan", (1, 2, 3, 4), (-1.0, -2.0, -3.0, -4.0))
    assert (tool.label, tool.values) == ("tool", (1.0, 2.0, 3.0, 4.0))
    assert reward_series([{"step": 0, "eval/success_rate": 0.1}]) == []
