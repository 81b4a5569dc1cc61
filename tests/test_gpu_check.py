"""`benchmarks/gpu_check.py` runs end to end (on the CPU, at a toy size): the GPU check is ready for a GPU, and its
report holds every phase's figures, written after each phase."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_check.py"
TOY = ["--cpu", "--layers", "1", "--hidden", "64", "--intermediate", "128", "--rows", "4", "--context", "16"]
TOY += ["--new", "8", "--instances", "1", "--completion", "8"]


def run(tmp_path, *flags) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "check.json"
    command = [
        sys.executable,
        str(SCRIPT),
        *TOY,
        *flags,
        "--out",
        str(out),
        "--workdir",
        str(tmp_path / "work"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    return done, json.loads(out.read_text()) if out.exists() else {}


@pytest.mark.slow  # ~2 min: the step phase's update over Qwen3's 151k-token vocabulary on the CPU
def test_the_gpu_check_runs_every_phase_and_reports_its_figures(tmp_path):
    done, report = run(tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    generation, update, step = report["generation"], report["update"], report["step"]
    assert (
        generation["rows"] == 4 and generation["prompt_tokens"] == [16, 32] and generation["new_tokens"] == 8
    )
    assert (
        generation["hf_backend_tokens_per_s"] > 0 and generation["transformers_static_cache_tokens_per_s"] > 0
    )
    assert generation["planned_peak_gib"] > 0 and generation["hf_backend_peak_gib"] is None  # no GPU here
    assert update["weights_dtype"] == "torch.float32" and update["micro_batch"] >= 1
    assert (
        0.5 < update["weights_changed_share_at_lr_1e-6"] <= 1.0
    )  # float32 masters: an lr 1e-6 step moves them
    assert update["update_tokens_per_s"] > 0 and update["planned_update_peak_gib"] > 0
    assert step["completions"] > 0 and step["rollout_s"] > 0 and step["update_s"] > 0 and step["sync_s"] >= 0
    assert report["wall_s"] > 0


def test_a_failing_phase_leaves_the_phases_before_it_in_the_report(tmp_path):
    done, report = run(tmp_path, "--phases", "generation,nonexistent")
    assert done.returncode != 0
    assert "generation" in report and "nonexistent" not in report
    assert report["generation"]["hf_backend_tokens_per_s"] > 0
