"""The examples run, and say what they show."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_the_minimal_at_grpo_example_runs_one_step_and_trains_both_roles():
    source = EXAMPLES / "at_grpo_minimal.py"
    assert len(source.read_text().splitlines()) < 300
    result = subprocess.run(
        [sys.executable, str(source), "--instances", "2", "--k", "4"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "groups of K=4" in out
    for agent in ("tool", "plan"):
        line = next(line for line in out.splitlines() if line.startswith(f"policy {agent}:"))
        assert " 0 parameter tensors changed" not in line, line  # the update moved the weights
