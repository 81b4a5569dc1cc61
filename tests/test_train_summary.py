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
    programs = {
        "eval/success_rate_before": 0.2,
        "eval/success_rate_after": 0.9,
        "eval/solving_program_before/tool": 0.0,
        "eval/solving_program_after/tool": 0.874,
    }
    assert run_summary(programs, "r").splitlines()[1] == (
        "the tool agent's first answer is a program that solves the instance in 87% of evaluation episodes "
        "(0% before training)"
    )
    resumed = run_summary({"eval/success_rate_after": 0.5}, "r")
    assert (
        resumed.splitlines()[0]
        == "evaluation success: (resumed: see metrics.jsonl) before training -> 0.50 after"
    )


def test_a_model_folder_that_does_not_exist_is_one_line_before_anything_is_built(tmp_path, capsys):
    pytest.importorskip("trl")
    from pettingllms.trainers.cli import main

    assert main(["--model_name_or_path", "./no-such-model", "--output_dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        "pettingllms-train: error: model_name_or_path='./no-such-model' is neither an existing"
    )
    assert "\n" not in err and not (tmp_path / "run").exists()


def test_a_hub_id_that_cannot_be_fetched_is_one_line_before_the_run_folder_exists(
    tmp_path, capsys, monkeypatch
):
    pytest.importorskip("trl")
    from huggingface_hub import constants

    from pettingllms.trainers.cli import main

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # as on a machine without the hub
    assert main(["--model_name_or_path", "Qwen/Qwen3-1.7B", "--output_dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pettingllms-train: error: model 'Qwen/Qwen3-1.7B': no such folder here")
    assert "no such model in the local Hugging Face cache" in err
    assert "'tiny', 'qwen3-test' and 'smollm2' need no download" in err  # what to use instead
    assert "\n" not in err and not (tmp_path / "run").exists()
