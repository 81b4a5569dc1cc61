"""What `pettingllms-train` prints when a run ends."""

import pytest


def test_a_finished_run_ends_with_a_short_summary():
    pytest.importorskip("trl")
    from pettingllms.trainers.cli import run_summary

    text = run_summary(
        {"eval/success_rate_before": 0.0701, "eval/success_rate_after": 0.3299}, "runs/default"
    )
    assert text.splitlines() == [
        "evaluation success: 0.07 before training -> 0.33 after",
        "run: runs/default  (metrics: runs/default/metrics.jsonl, curve: runs/default/learning_curve.png, "
        "checkpoints: runs/default/checkpoints)",
    ]
    resumed = run_summary({"eval/success_rate_after": 0.5}, "r")
    assert (
        resumed.splitlines()[0]
        == "evaluation success: (resumed: see metrics.jsonl) before training -> 0.50 after"
    )
