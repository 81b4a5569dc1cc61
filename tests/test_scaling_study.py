"""The scaling-study script's bookkeeping: rows in the documented schema, the plot, and the results section."""

import argparse
import json

import pytest
from scripts_loader import load_script

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def study():
    return load_script("scaling_study")


def test_rows_plot_and_section(study, tmp_path):
    rows = []
    for size, before, after in ((1, 0.2, 0.3), (3, 0.25, 0.45)):
        for seed in (0, 1):
            result = {"before": before, "after": after + 0.02 * seed, "sampled_completions": 100, "steps": 4,
                      "instances_per_step": 32 // size, "run": f"runs/x{size}{seed}"}  # fmt: skip
            rows += study._rows(size, "shaped", seed, result)
    for reward, after in (("shaped", 0.5), ("outcome", 0.4)):
        result = {"before": 0.38, "after": after, "sampled_completions": 90, "steps": 4, "instances_per_step": 16,
                  "run": "runs/m"}  # fmt: skip
        rows += [dict(row, workflow="mas") for row in study._rows(2, reward, 0, result)]
    assert {"env", "num_agents", "method", "reward", "seed", "success_rate"} <= set(rows[0])
    assert {row["method"] for row in rows} == {"untrained", "at-grpo"}
    study.plot(rows, tmp_path / "scaling.png")
    assert (tmp_path / "scaling.png").stat().st_size > 5_000
    results_md = tmp_path / "results.md"
    results_md.write_text("# Results\n\nkept text\n")
    args = argparse.Namespace(seeds=[0, 1], steps=4, budget=32, eval_episodes=10)
    study.write_section(rows, args, results_md)
    study.write_section(rows, args, results_md)  # idempotent: the section is replaced, not appended
    text = results_md.read_text()
    assert text.count(study.START) == 1 and "kept text" in text
    assert "| 3 | 25.0 ± 0.0 | 46.0 ± 1.4 | +21.0 | 100 |" in text  # 45 and 47: sample std (ddof=1) 1.4
    assert "| outcome | 38.0 ± 0.0 | 40.0 ± 0.0 | +2.0 |" in text
    json.dumps(rows)  # JSON-ready
