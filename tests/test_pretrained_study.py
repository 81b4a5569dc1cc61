"""The pretrained-model study's candidates: pass@k by hand, and a real warm start of SmolLM2 end to end (slow)."""

import json
import math

import pytest
from scripts_loader import load_script

study = load_script("pretrained_study")


def test_pass_at_k_is_the_unbiased_estimator_by_hand():
    # 8 episodes, 2 successes: pass@4 = 1 - C(6, 4) / C(8, 4) = 1 - 15/70
    assert study.pass_at([1, 0, 0, 1, 0, 0, 0, 0], 4) == pytest.approx(1 - 15 / 70)
    assert study.pass_at([1, 0, 0, 1, 0, 0, 0, 0], 8) == 1.0 and study.pass_at([0] * 8, 8) == 0.0
    # instances in a row, as pettingllms-eval --samples writes them: (1 - 15/70 + 0) / 2
    flags = [1, 0, 0, 1, 0, 0, 0, 0] + [0] * 8
    assert study.mean_pass_at(flags, 8, 4) == pytest.approx((1 - 15 / 70) / 2)
    with pytest.raises(ValueError, match="at least 8"):
        study.pass_at([1, 0], 8)
    with pytest.raises(ValueError, match="do not split"):
        study.mean_pass_at([1, 0, 0], 2, 1)
    assert math.isclose(study.pass_at([1, 1, 0, 0], 1), 0.5)


def test_the_table_shows_each_agents_parse_errors_and_missing_figures():
    row = {"task": "t", "model": "untrained", "greedy": 0.0, "sampled_success": 0.125, "pass@8": 0.5,
           "greedy_parse_error_rate": {"reasoner": 0.9}, "sampled_parse_error_rate": None}  # fmt: skip
    line = study.table_lines([row])[2]
    assert line == "| t | untrained | 0.0 | — | 50.0 | 12.5 | reasoner 0.90; — |"


@pytest.mark.slow
def test_a_smoke_run_warm_starts_smollm2_and_records_its_candidates(tmp_path, monkeypatch):
    pytest.importorskip("gguf")
    import sys

    monkeypatch.setattr(sys, "argv", [
        "pretrained_study.py", "--tasks", "math-v0 difficulty 1, single", "--instances", "2", "--samples", "2",
        "--steps", "2", "--demos_per_role", "8", "--runs", str(tmp_path / "runs"), "--out",
        str(tmp_path / "pretrained.json"), "--results_md", str(tmp_path / "results.md"),
    ])  # fmt: skip
    assert study.main() == 0
    rows = json.loads((tmp_path / "pretrained.json").read_text())
    assert [row["model"] for row in rows] == ["warm start", "untrained"]
    warm, untrained = rows
    assert warm["warm_start"]["steps"] == 2 and untrained["warm_start"] is None
    # two SFT steps teach the answer format: the warm start's answers parse where the untrained model's do not
    assert warm["greedy_parse_error_rate"]["reasoner"] < untrained["greedy_parse_error_rate"]["reasoner"]
    assert "| math-v0 difficulty 1, single | warm start |" in (tmp_path / "results.md").read_text()


def test_a_warm_start_of_a_model_folder_fine_tunes_it_and_writes_it_once(tiny_model, tmp_path):
    from transformers import AutoTokenizer

    from pettingllms.models.tokenizer import CHAT_TEMPLATE
    from pettingllms.warmstart.pretrained import PretrainedWarmStart, warm_start_pretrained

    settings = PretrainedWarmStart(
        "math-v0", "single", {"dataset": "generated", "difficulty": 1}, demos_per_role=8, steps=3, batch_size=4,
        learning_rate=1e-3,
    )  # fmt: skip
    manifest = warm_start_pretrained(tiny_model, tmp_path / "warm", settings)
    assert manifest["demonstrations"] == 8 and manifest["settings"]["steps"] == 3
    assert manifest["sft"]["probe_loss_after"] < manifest["sft"]["probe_loss_before"]  # it learned something
    assert json.loads((tmp_path / "warm" / "warmstart.json").read_text()) == json.loads(json.dumps(manifest))
    assert (
        AutoTokenizer.from_pretrained(tmp_path / "warm").chat_template == CHAT_TEMPLATE
    )  # what it is prompted with
    assert [p.name for p in tmp_path.iterdir()] == ["warm"]  # no staging folder left behind
    with pytest.raises(FileExistsError, match="built once"):
        warm_start_pretrained(tiny_model, tmp_path / "warm", settings)
    with pytest.raises(ValueError, match="steps=0 must be >= 1"):
        PretrainedWarmStart("math-v0", steps=0)


def test_the_report_describes_the_rows_it_shows_not_the_flags_it_was_given(tmp_path):
    import argparse

    rows = [{"task": "t", "model": "warm start", "instances": 24, "samples": 8, "max_new_tokens": 128, "greedy": 0.5,
             "warm_start": {"demos_per_role": 400, "steps": 60, "batch_size": 8, "learning_rate": 1e-4}}]  # fmt: skip
    args = argparse.Namespace(instances=32, samples=4, max_new_tokens=64, demos_per_role=1, steps=1, batch_size=1,
                              learning_rate=1.0)  # fmt: skip
    (tmp_path / "results.md").write_text("")
    study.write_report(rows, args, tmp_path / "results.md")
    text = (tmp_path / "results.md").read_text()
    assert "400 per role, 60 steps of 8, lr 0.0001" in text and "24 validation-split instances" in text
    assert "from 8 episodes per instance" in text and "128-token answers" in text
