"""The study scripts run end to end at a tiny budget, as `docs/results.md`'s "Regenerate" commands run them at
full size: every import, warm start, training run, evaluation, row and report section on the real path (`slow`:
a few minutes of CPU)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def run_script(name: str, *args: str, home: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PETTINGLLMS_HOME": str(home), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), *args],
        capture_output=True,
        text=True,
        timeout=1200,
        env=environment,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_the_miniature_runs_end_to_end_at_a_tiny_budget(tmp_path):
    out, results_md = tmp_path / "rows.json", tmp_path / "results.md"
    results_md.write_text("# Results\n")
    run_script(
        "reproduce_miniature.py",
        *("--parts", "main", "--seeds", "0", "--methods", "mas", "mas+at-grpo-per-role"),
        *("--budget", "16", "--max_steps", "1", "--curve_every", "0", "--eval_episodes", "4"),
        *("--demos_per_role", "40", "--warm_start_steps", "2"),
        *("--runs", str(tmp_path / "runs"), "--out", str(out), "--results_md", str(results_md)),
        *("--leaderboard", str(tmp_path / "board")),
        home=tmp_path / "home",
    )
    rows = json.loads(out.read_text())
    assert sorted(row["method"] for row in rows) == ["mas", "mas+at-grpo-per-role"]
    board = (tmp_path / "board" / "leaderboard.md").read_text()  # seed 0's rows, on the setting's own column
    # each row named by the ledger line it is (`leaderboard_label`)
    assert "tiny miniature: mas+at-grpo-per-role (seed 0; ledger line " in board
    assert "tiny miniature: mas (warm start, no RL; ledger line " in board
    assert 'plan-path-v0 {"size": 7}' in board  # the setting's own column
    assert all(0.0 <= row["success_rate"] <= 1.0 and row["seed"] == 0 for row in rows)
    assert (tmp_path / "runs" / "main_mas+at-grpo-per-role_s0" / "metrics.jsonl").is_file()
    assert "<!-- miniature:start -->" in results_md.read_text()
    assert list(
        (tmp_path / "home" / "models").glob("tiny-plan-path-v0-mas-mini7_40d_2s-*")
    )  # the smoke variant


def test_the_code_miniature_runs_end_to_end_at_a_tiny_budget(tmp_path):
    """The code domain: the tester's catches before and after RL, the episodes' turns on every row."""
    out, results_md = tmp_path / "rows.json", tmp_path / "results.md"
    results_md.write_text("# Results\n")
    run_script(
        "reproduce_miniature.py", "--env", "code-v0",
        *("--parts", "warmstart", "main", "mechanism", "--seeds", "0", "--methods", "mas", "mas+at-grpo-per-role"),
        *("--budget", "16", "--max_steps", "1", "--curve_every", "0", "--eval_episodes", "4", "--val_episodes", "4"),
        *("--demos_per_role", "40", "--warm_start_steps", "2"),
        *("--runs", str(tmp_path / "runs"), "--out", str(out), "--results_md", str(results_md)),
        *("--leaderboard", str(tmp_path / "board")),
        home=tmp_path / "home",
    )  # fmt: skip
    rows = json.loads(out.read_text())
    catches = [row for row in rows if row["method"].startswith("tester completions")]
    assert {row["part"] for row in catches} == {"warmstart", "mechanism"}
    assert all(0.0 <= row["greedy_catch_share"] <= 1.0 for row in catches)
    main = [row for row in rows if row["part"] == "main"]
    assert all(len(row["episode_turns"]) == 4 for row in main)
    assert any(row["method"] == "mas, oracle tester" for row in rows)
    assert "<!-- miniature-code:start -->" in results_md.read_text()


def test_the_scaling_study_runs_end_to_end_at_a_tiny_budget(tmp_path, tiny_model):
    out, results_md = tmp_path / "rows.json", tmp_path / "results.md"
    results_md.write_text("# Results\n")
    run_script(
        "scaling_study.py",
        *("--sizes", "1", "--seeds", "0", "--max_steps", "1", "--budget", "2", "--eval_episodes", "2"),
        *("--model_name_or_path", tiny_model, "--runs", str(tmp_path / "runs")),
        *("--out", str(out), "--results_md", str(results_md)),
        home=tmp_path / "home",
    )
    rows = json.loads(out.read_text())
    assert {(row["num_agents"], row["reward"]) for row in rows} == {(1, "shaped"), (2, "outcome")}
    assert {row["method"] for row in rows} == {"untrained", "at-grpo"}
    assert (
        out.with_suffix(".png").stat().st_size > 5_000 and "<!-- scaling:start -->" in results_md.read_text()
    )


def test_the_grouping_study_runs_end_to_end_at_a_tiny_budget(tmp_path):
    out, results_md = tmp_path / "rows.json", tmp_path / "results.md"
    results_md.write_text("# Results\n")
    run_script(
        "grouping_study.py",
        *("--parts", "curves", "--methods", "at-grpo-per-role", "trajectory-grpo", "--seeds", "0"),
        *("--budget", "260", "--val_episodes", "4", "--eval_episodes", "4"),
        *("--demos_per_role", "40", "--warm_start_steps", "2"),
        *("--runs", str(tmp_path / "runs"), "--out", str(out), "--results_md", str(results_md)),
        home=tmp_path / "home",
    )
    rows = json.loads(out.read_text())
    assert {(row["method"], row["split"], row["budget"]) for row in rows} == {
        (method, split, budget)
        for method in ("at-grpo-per-role", "trajectory-grpo")
        for split, budget in (("val", 250), ("eval", 260))
    }
    assert all(
        row["sampled_completions"] >= row["budget"] and len(row["episode_success"]) == 4 for row in rows
    )
    assert (
        "<!-- grouping:start -->" in results_md.read_text() and (tmp_path / "grouping_curves.png").is_file()
    )


def test_the_grouping_studys_pooling_part_and_its_probe_run_end_to_end_at_a_tiny_budget(tmp_path):
    out, results_md, probe = tmp_path / "rows.json", tmp_path / "results.md", tmp_path / "probe.json"
    results_md.write_text("# Results\n")
    warm_start = ("--demos_per_role", "40", "--warm_start_steps", "2", "--runs", str(tmp_path / "runs"))
    run_script(
        "grouping_study.py",
        *("--parts", "pooling", "--seeds", "0", "--budget", "260", "--final_eval", "false"),
        *("--val_episodes", "4", "--out", str(out), "--results_md", str(results_md), *warm_start),
        home=tmp_path / "home",
    )
    rows = json.loads(out.read_text())
    assert {(row["part"], row["method"], row["budget"]) for row in rows} == {
        ("pooling", method, 250)
        for method in ("at-grpo-per-role", "turn-only", "at-grpo-per-role+dr_grpo", "turn-only+dr_grpo")
    }
    assert "| lead under grpo minus lead under dr_grpo |" in results_md.read_text()
    # the probe reads the same runs' dumps (trains nothing) and checks each dumped advantage against its own
    run_script(
        "turn_pool_probe.py",
        *("--seeds", "0", "--budget", "260", "--bounds", "0", "1000", "--out", str(probe), *warm_start),
        home=tmp_path / "home",
    )
    report = json.loads(probe.read_text())
    shifts = report["shifts"]["turn-only"]["whole_run"]
    assert set(shifts) == {"plan", "tool"}  # K candidates each: their shifts are opposite
    assert shifts["tool"]["mean_shift"] == pytest.approx(-shifts["plan"]["mean_shift"])
    assert set(report["tool_lengths"]["[0, 1000)"]["turn_only_minus_per_role"]) == {"grpo", "dr_grpo"}


def test_the_credit_study_runs_end_to_end_at_a_tiny_budget(tmp_path):
    """Issue 60's study: a warm start chosen by its rule (the window widened), the four arms' curves and finals."""
    out, results_md = tmp_path / "credit.json", tmp_path / "results.md"
    results_md.write_text("# Results\n")
    run_script(
        "credit_study.py", "--seeds", "0", "--window", "0", "1",
        *("--budget", "16", "--select_grids", "8", "--val_grids", "8", "--eval_grids", "8"),
        *("--demos_per_role", "40", "--warm_start_steps", "2"),
        *("--runs", str(tmp_path / "runs"), "--out", str(out), "--results_md", str(results_md)),
        home=tmp_path / "home",
    )  # fmt: skip
    rows = json.loads(out.read_text())
    assert {(r["part"], r["turns"]) for r in rows if r["part"] == "warmstart"} == {
        ("warmstart", 8),
        ("warmstart", 1),
    }
    finals = {(r["arm"], r["turns"]) for r in rows if r["part"] == "final"}
    assert finals == {("at", 8), ("trajectory", 8), ("at", 1), ("trajectory", 1)}
    curves = [r for r in rows if r["part"] == "curve"]
    assert {r["completions"] for r in curves if r["turns"] == 8} == {0, 128}  # the warm start, then one step
    assert all(len(r["grids_solved"]) == 8 // r["turns"] for r in curves)
    formats = {(r["arm"], r["turns"]): r for r in rows if r["part"] == "formats"}
    assert set(formats) == finals | {(None, 8), (None, 1)}  # every run, and the warm start at each T
    assert all(set(r["parse_error_rate"]) == {"tool", "plan"} for r in formats.values())
    text = results_md.read_text()
    assert "<!-- credit:start -->" in text and "| at | 8 |" in text and "### What the agents wrote" in text
    assert "- T = 8: incomplete (1 of 8 paired seeds)" in text  # one seed of the eight: no verdict


def test_the_comlrl_study_runs_end_to_end_at_a_tiny_budget(tmp_path):
    """Issue 62's learning comparison: both trainers from one warm start, each team evaluated and on the ledger."""
    pytest.importorskip("comlrl")
    out, results_md = tmp_path / "comlrl.json", tmp_path / "results.md"
    results_md.write_text("# Results\n")
    run_script(
        "comlrl_study.py", "--envs", "plan-path-v0", "--seeds", "0", "--budget", "40", "--eval_episodes", "4",
        *("--demos_per_role", "40", "--warm_start_steps", "2"),
        *("--runs", str(tmp_path / "runs"), "--out", str(out), "--results_md", str(results_md)),
        home=tmp_path / "home",
    )  # fmt: skip
    rows = json.loads(out.read_text())
    played = sorted((r["trainer"], r.get("turns", "aec")) for r in rows)  # every team in both turn structures
    assert played == [
        (trainer, turns) for trainer in ("comlrl", "ours", "ours-joint", "start") for turns in ("aec", "joint")
    ]
    start = next(r for r in rows if r["trainer"] == "start")
    assert start["seed"] is None and len(start["episode_success"]) == 4  # the warm start, evaluated once
    comlrl = next(r for r in rows if r["trainer"] == "comlrl")
    assert comlrl["sampled_completions"] == 40 and len(comlrl["episode_success"]) == 4  # one tree of 2 turns
    assert (tmp_path / "runs" / "plan-path-v0" / "comlrl_s0" / "agent_1" / "config.json").is_file()
    assert (
        "Ours minus CoMLRL's:" in results_md.read_text() and "Ours minus the start:" in results_md.read_text()
    )
