"""The learning curve joins evaluations by a line only when there are more than two of them."""

import pytest

pytest.importorskip("matplotlib")

from pettingllms.trainers.learning_curve import curve_series, save_learning_curve  # noqa: E402


def rows(eval_steps, steps=4):
    out = [{"step": 0, "eval/success_rate": 0.1}] if 0 in eval_steps else []
    for step in range(1, steps + 1):
        row = {"step": step, "train/success_rate": step / 10}
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
