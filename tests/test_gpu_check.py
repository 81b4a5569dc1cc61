"""`benchmarks/gpu_check.py` runs end to end (on the CPU, at a toy size): the GPU check is ready for a GPU."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_check.py"


@pytest.mark.slow
def test_the_gpu_check_runs_and_reports_its_figures(tmp_path):
    out = tmp_path / "check.json"
    flags = ["--cpu", "--layers", "1", "--hidden", "64", "--intermediate", "128", "--steps", "1"]
    flags += ["--instances", "1", "--completion", "8", "--out", str(out), "--workdir", str(tmp_path / "work")]
    done = subprocess.run([sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["steps"] == 1 and report["measured_peak_gib"] is None
    assert 0 < report["predicted_generation_peak_gib"] and 0 < report["predicted_update_peak_gib"]
    assert report["generation_tokens_per_s"] > 0 and report["update_tokens_per_s"] > 0
