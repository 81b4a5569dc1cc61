"""scripts/comlrl_study.py without training: CoMLRL's instances for a budget, and the report from ledger rows."""

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from scripts_loader import load_script

from research import ledger

study = load_script("comlrl_study")


def test_comlrl_gets_the_fewest_trees_that_sample_the_budget():
    # 2 agents x K=4 completions at the root and at each of its 4 children: 40 a tree
    assert study.comlrl_instances(2500, 2) == 63 and study.comlrl_instances(40, 2) == 1
    assert study.comlrl_instances(41, 2) == 2 and study.comlrl_instances(5000, 2) == 125


def test_the_report_compares_the_trainers_seed_by_seed(tmp_path):
    out = tmp_path / "comlrl.json"
    for seed, (ours, theirs) in enumerate([("1100", "1000"), ("1110", "0100"), ("1101", "1000")]):
        for trainer, successes in (("ours", ours), ("comlrl", theirs)):
            row = {"env": "plan-path-v0", "trainer": trainer, "seed": seed, "budget": 40, "sampled_completions": 40,
                   "train_wall_s": 60.0, "success_rate": successes.count("1") / 4, "episodes": 4,
                   "episode_success": successes}  # fmt: skip
            ledger.append(
                out.with_name(ledger.LEDGER_NAME), "comlrl", row, code_commit="abc1234", warm_start="w"
            )
    start = {"env": "plan-path-v0", "trainer": "start", "seed": None, "success_rate": 0.25, "episodes": 4,
             "episode_success": "0100"}  # fmt: skip
    ledger.append(out.with_name(ledger.LEDGER_NAME), "comlrl", start, code_commit="def5678", warm_start="w")
    joint = {"env": "plan-path-v0", "trainer": "ours", "seed": 0, "turns": "joint", "budget": 40,
             "sampled_completions": 40, "train_wall_s": 60.0, "success_rate": 0.0, "episodes": 4,
             "episode_success": "0000"}  # fmt: skip
    ledger.append(out.with_name(ledger.LEDGER_NAME), "comlrl", joint, code_commit="def5678", warm_start="w")
    rows = ledger.table_rows(out, study.RULE)
    args = argparse.Namespace(results_md=tmp_path / "results.md", eval_episodes=4)
    before, after = "# Results\n\nA warm-start paragraph before.\n\n", "\n\n## The next section\n"
    args.results_md.write_text(f"{before}{study.START}\nold table\n{study.END}{after}")
    study.write_report(rows, args)
    text = args.results_md.read_text()
    assert text.startswith(before + study.START) and text.endswith(study.END + after)  # its section only
    assert "old table" not in text
    assert "| ours | 66.7 ± 14.4" in text and "s0 50.0, s1 75.0, s2 75.0 |" in text  # not the joint row
    aec, joint = text.split(study.JOINT_WORDS["plan-path-v0"])  # the joint turns' rows: a table of their own
    assert "| ours | 0.0 (n=1) |" in joint and "s0 0.0 |" in joint and "judged" not in joint
    # per seed +25, +50, +50: mean 41.7 points, every seed above: p = 2/2^3 = 0.25
    assert "Ours minus CoMLRL's: +41.7 [" in text and "p = 0.25 (the smallest possible with 3 seeds)" in text
    assert "| the warm start, no RL | 25.0 (one greedy model) |" in text
    # ours per seed 50, 75, 75 against the start's 25 on every seed: +25, +50, +50; recorded at another commit
    assert (
        "Ours minus the start: +41.7 [" in text
        and "across builds: ours at abc1234, reference at def5678" in text
    )
    # CoMLRL's 25, 25, 25: no seed differs from the start
    assert "CoMLRL's minus the start: +0.0 [no interval: no spread]" in text
    assert "`math-v0`" not in text  # an env without rows gets no table
    assert "judged once both trainers and the start hold seeds 0-4." in text  # 3 seeds: not judged yet


def _comparison(low: float, high: float, seeds=range(5)) -> dict:
    return {"ci95": [low, high], "difference": (low + high) / 2, "per_seed": dict.fromkeys(seeds, 0.0)}


def test_the_prediction_is_judged_by_each_interval_once_every_seed_is_in():
    ours = dict.fromkeys(range(5), [1] * 9 + [0])  # 90% on every seed: at the predicted floor
    comparisons = {
        "Ours minus CoMLRL's": _comparison(0.01, 0.2),
        "Ours minus the start": _comparison(0.5, 0.7),
        "CoMLRL's minus the start": _comparison(-0.05, 0.3),  # holds 0: not the predicted gain
    }
    lines = study.prediction_lines("plan-path-v0", comparisons, ours)
    assert "- Ours minus CoMLRL's: predicted gains, found gains: **as predicted**." in lines
    assert "- CoMLRL's minus the start: predicted gains, found none: **not as predicted**." in lines
    assert "- Ours' mean success: predicted 90% or more, found 90.0%: **as predicted**." in lines
    below = study.prediction_lines("plan-path-v0", comparisons, dict.fromkeys(range(5), [1] * 8 + [0] * 2))
    assert "found 80.0%: **not as predicted**." in below[-1]
    comparisons["Ours minus the start"] = _comparison(0.5, 0.7, seeds=range(4))  # a seed missing: not judged
    assert len(study.prediction_lines("plan-path-v0", comparisons, ours)) == 1


@pytest.mark.parametrize("flags", [["--turns", "parallel"], ["--trainers", "start", "magrpo"]])
def test_a_bad_turns_or_trainer_is_one_line_naming_it_before_any_work(flags, tmp_path):
    script = Path(__file__).resolve().parents[1] / "scripts" / "comlrl_study.py"
    argv = [
        sys.executable,
        str(script),
        *flags,
        "--out",
        str(tmp_path / "rows.json"),
        "--runs",
        str(tmp_path / "runs"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and f"argument {flags[0]}: invalid choice:" in done.stderr
    assert not list(tmp_path.iterdir())  # no run folder, table or ledger line
