"""scripts/credit_study.py without training: what a row measures, the area under a curve, the warm start's rule,
and the report built from ledger rows (the predictions' verdicts computed as the pre-registration states them)."""

import argparse

import numpy as np
import pytest
from scripts_loader import load_script

from research import ledger

credit = load_script("credit_study")


def test_a_relay_episodes_progress_is_its_grids_solved_and_a_fraction_of_a_grid_is_refused():
    result = {"per_episode": {"progress": [0.0, 12.5, 100.0, 37.5]}}
    assert credit.grids_solved(result, 8) == "0183"
    row = {"turns": 8, "grids_solved": "0183"}
    assert credit.turn_shares(row) == [0.0, 0.125, 1.0, 0.375]
    with pytest.raises(ValueError, match="not a whole number of its 8 grids"):
        credit.grids_solved({"per_episode": {"progress": [30.0]}}, 8)
    with pytest.raises(ValueError, match="no per-episode progress"):
        credit.grids_solved({"per_episode": {"success": [0]}}, 8)


def test_the_area_is_the_trapezoid_rule_over_completions_divided_by_the_last_point():
    points = [(0, 0.1), (256, 0.3), (512, 0.2), (640, 0.6)]
    expected = (256 * 0.2 + 256 * 0.25 + 128 * 0.4) / 640  # each trapezoid by hand
    assert credit.curve_area(list(reversed(points))) == pytest.approx(expected)
    assert credit.curve_area([(0, 0.5), (100, 0.5)]) == pytest.approx(0.5)  # a flat curve: its height
    with pytest.raises(ValueError, match="the warm start's point at 0"):
        credit.curve_area([(256, 0.3), (512, 0.2)])


def test_the_chosen_warm_start_is_the_first_candidate_in_the_window_at_t8():
    names = list(credit.CANDIDATES)

    def row(name, turns, share):
        return {"part": "warmstart", "candidate": name, "turns": turns, "success_rate": share}

    assert credit.chosen_candidate([row(names[0], 8, 0.12), row(names[1], 8, 0.09)]) is None
    rows = [row(names[0], 8, 0.12), row(names[1], 1, 0.06), row(names[2], 8, 0.07), row(names[3], 8, 0.05)]
    assert credit.chosen_candidate(rows) == names[2]  # names[1] was in the window only at T = 1


def _ledger_rows(table, effect_at_8, seeds=8):
    """Curve and final rows of the four arms, 8 seeds: at T = 8 AT's curve above trajectory's by `effect_at_8`
    plus seed noise, at T = 1 the two equal up to noise."""
    rng = np.random.default_rng(0)
    path = table.with_name(ledger.LEDGER_NAME)
    for seed in range(seeds):
        for turns in (8, 1):
            noise = rng.normal(0, 0.01, size=2)
            for arm, lift in (("at", effect_at_8 if turns == 8 else noise[0]), ("trajectory", noise[1])):
                base = {"candidate": "c", "arm": arm, "turns": turns, "seed": seed}
                for completions, share in ((0, 0.06), (1280, 0.06 + lift / 2), (2560, 0.06 + lift)):
                    solved = round(share * 16 * turns)
                    digits = "".join(str(min(turns, solved // 16 + (i < solved % 16))) for i in range(16))
                    row = {**base, "part": "curve", "completions": completions, "split": "val",
                           "success_rate": share, "episodes": 16, "grids_solved": digits}  # fmt: skip
                    ledger.append(path, "credit", row, code_commit="abc1234", warm_start="w")
                final = {**base, "part": "final", "completions": 2560, "split": "eval",
                         "success_rate": share, "episodes": 16, "grids_solved": digits}  # fmt: skip
                ledger.append(path, "credit", final, code_commit="abc1234", warm_start="w")
    return ledger.table_rows(table, credit.RULE)


def _report(tmp_path, rows):
    args = argparse.Namespace(
        out=tmp_path / "credit.json",
        results_md=tmp_path / "results.md",
        val_grids=128,
        eval_grids=400,
        window=credit.WINDOW,
    )
    credit.write_report(rows, args)
    return args.results_md.read_text()


def test_the_report_says_each_prediction_as_it_came_out(tmp_path):
    rows = _ledger_rows(tmp_path / "credit.json", effect_at_8=0.10)
    text = _report(tmp_path, rows)
    assert "T = 8, predicted: AT minus trajectory above 0 with p < 0.05. Measured: +" in text
    assert text.count("**as predicted**.") == 2  # a lift on every seed at T = 8, noise of 1 point at T = 1
    assert "p = 0.0078" in text  # 2/256: 8 seeds of one sign, the exact test's floor
    assert (tmp_path / credit.FIGURE).is_file()
    rows = [r for r in rows if not (r["arm"] == "trajectory" and r["seed"] == 7)]
    text = _report(tmp_path, rows)  # a seed missing: no verdict yet, and why
    assert "- T = 8: incomplete (7 of 8 paired seeds): no verdict before every seed of both arms." in text
    assert "precursor on math" in text and "| 8 | +" in text


def test_no_lift_at_t8_is_reported_as_the_prediction_falsified(tmp_path):
    rows = _ledger_rows(tmp_path / "credit.json", effect_at_8=0.0)
    text = _report(tmp_path, rows)
    assert "**not as predicted (the prediction is falsified)**." in text


def test_the_study_refuses_to_run_before_a_warm_start_is_chosen(tmp_path):
    args = argparse.Namespace(out=tmp_path / "credit.json", window=credit.WINDOW)
    with pytest.raises(SystemExit, match="no warm start chosen yet: run --parts warmstart first"):
        credit.Study(args).runs()


def test_a_control_whose_seeds_all_differ_by_the_same_amount_is_judged_by_that_amount():
    control = {"difference": 0.0, "ci95": None, "test": {"p_value": 1.0}, "paired": True, "seeds": (8, 8)}
    assert credit.verdict(None, control)[1].endswith("Measured: [+0.0, +0.0]: **as predicted**.")
    control = {**control, "difference": 0.07}
    assert "the control shows a difference" in credit.verdict(None, control)[1]
    unpaired = {**control, "paired": False, "seeds": (8, 7)}
    assert "incomplete (7 of 8 paired seeds)" in credit.verdict(None, unpaired)[1]


def test_a_smoke_setting_without_folders_of_its_own_is_refused_before_anything_runs(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(credit.ROOT / "scripts" / "credit_study.py"), "--budget", "16"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert (
        done.returncode == 2 and "--budget change the study's settings: give --out and --runs" in done.stderr
    )


def _formats_row(arm, turns, seed, tool, plan, program, truncated=0.0):
    return {"part": "formats", "candidate": "c", "arm": arm, "turns": turns, "seed": seed, "split": "eval",
            "parse_error_rate": {"tool": tool, "plan": plan}, "truncated_rate": {"tool": truncated, "plan": 0.0},
            "solving_program_rate": {"tool": program}}  # fmt: skip


def test_what_the_agents_wrote_is_averaged_over_seeds_and_given_per_seed():
    rows = [
        _formats_row(None, 8, 0, 0.0, 0.0, 0.0),
        _formats_row("trajectory", 1, 0, 1.0, 0.02, 0.0, truncated=0.9),
        _formats_row("trajectory", 1, 1, 0.5, 0.0, 0.5),
    ]
    lines = credit.format_lines(rows)
    assert lines[0].startswith("### What the agents wrote")
    assert "| warm start | 8 | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 | — |" in lines
    # trajectory at T = 1: tool unparseable (100 + 50) / 2, truncated 90 / 2, programs 50 / 2, plan 2 / 2
    assert "| trajectory | 1 | 75.0 | 45.0 | 25.0 | 1.0 | 0.0 | s0 100 / 2 / 0, s1 50 / 0 / 50 |" in lines
    assert credit.format_lines([r for r in rows if r["part"] == "curve"]) == []


def test_formats_refuses_a_run_whose_report_and_checkpoint_are_both_gone(tmp_path):
    args = argparse.Namespace(out=tmp_path / "credit.json", window=credit.WINDOW, runs=tmp_path / "runs",
                              eval_grids=400)  # fmt: skip
    study = credit.Study(args)
    name = list(credit.CANDIDATES)[0]
    study.rows = [
        {"part": "warmstart", "candidate": name, "turns": 8, "success_rate": 0.06},
        {"part": "final", "candidate": name, "arm": "at", "turns": 8, "seed": 3, "completions": 2560,
         "split": "eval", "steps": 20},
    ]  # fmt: skip
    with pytest.raises(
        SystemExit, match="at-8_s3_final_g400: neither its evaluation report nor its checkpoint"
    ):
        study.formats()
