"""The study scripts' command lines refuse a bad value in one line naming it, before anything runs, leaving
nothing behind (`research.arguments`)."""

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from research.arguments import positive_int, share

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("text", ["0", "-3", "1.5", "abc", "nan", ""])
def test_a_positive_int_refuses_anything_but_a_whole_number_above_zero(text):
    with pytest.raises(argparse.ArgumentTypeError, match="must be a whole number >= 1"):
        positive_int(text)
    assert positive_int("7") == 7


@pytest.mark.parametrize("text", ["-0.1", "1.5", "nan", "inf", "x"])
def test_a_share_refuses_anything_outside_zero_to_one(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be a number in \[0, 1\]"):
        share(text)
    assert share("0") == 0.0 and share("1") == 1.0


@pytest.mark.parametrize(
    ("script", "flags", "said"),
    [
        ("credit_study", ["--budget", "0"], "argument --budget: must be a whole number >= 1, not '0'"),
        (
            "credit_study",
            ["--val_grids", "-8"],
            "argument --val_grids: must be a whole number >= 1, not '-8'",
        ),
        ("credit_study", ["--eval_grids", "12"], "--eval_grids must be a multiple of 8"),
        ("credit_study", ["--max_steps", "x"], "argument --max_steps: must be a whole number >= 1, not 'x'"),
        (
            "credit_study",
            ["--warm_start_steps", "0"],
            "argument --warm_start_steps: must be a whole number >= 1",
        ),
        (
            "credit_study",
            ["--window", "nan", "0.1"],
            "argument --window: must be a number in [0, 1], not 'nan'",
        ),
        ("credit_study", ["--window", "0.5", "0.1"], "--window 0.5 0.1: LOW must not exceed HIGH"),
        ("comlrl_study", ["--budget", "-1"], "argument --budget: must be a whole number >= 1, not '-1'"),
        ("comlrl_study", ["--eval_episodes", "0"], "argument --eval_episodes: must be a whole number >= 1"),
        ("comlrl_study", ["--envs", "sokoban-v0"], "argument --envs: invalid choice: 'sokoban-v0'"),
        ("scaling_study", ["--rewards", "sparse"], "argument --rewards: invalid choice: 'sparse'"),
    ],
)
def test_a_bad_study_setting_is_one_line_naming_it_and_nothing_is_written(script, flags, said, tmp_path):
    out, runs = tmp_path / "tables" / "rows.json", tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / f"{script}.py"), *flags, "--out", str(out), "--runs", str(runs),
         "--results_md", str(tmp_path / "results.md")],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert said in done.stderr.strip().splitlines()[-1] and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no table, run folder or report
