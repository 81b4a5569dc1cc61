"""The grouping study's bookkeeping (scripts/grouping_study.py): which checkpoint answers each budget, and the
paired comparison in its table, against numbers worked by hand."""

import json

import pytest
from scripts_loader import load_script


@pytest.fixture(scope="module")
def study():
    return load_script("grouping_study")


def test_each_budget_is_answered_by_the_first_step_that_reached_it(study, tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    rows = [{"step": 0, "eval/success_rate": 0.1}] + [
        {"step": step, "train/completions_total": total}
        for step, total in ((1, 180), (2, 390), (3, 610), (4, 1020))
    ]
    metrics.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert study._steps_at_budgets(metrics, [250, 500, 1000, 2000]) == {
        250: (2, 390),
        500: (3, 610),
        1000: (4, 1020),
    }
    assert study._last_step(metrics) == (4, 1020)


def row(method, seed, successes, part="curves", split="eval", budget=4000):
    return {"part": part, "method": method, "seed": seed, "split": split, "budget": budget,
            "success_rate": sum(successes) / len(successes), "episode_success": "".join(map(str, successes))}  # fmt: skip


def test_the_final_table_pairs_each_method_with_trajectory_grpo_on_the_same_episodes(study):
    rows = [
        row("trajectory-grpo", 0, [1, 0, 0, 0]), row("trajectory-grpo", 1, [0, 1, 0, 0]),
        row("at-grpo-per-role", 0, [1, 1, 1, 0]), row("at-grpo-per-role", 1, [1, 1, 0, 1]),
    ]  # fmt: skip
    lines = study.final_table(rows, ["at-grpo-per-role", "trajectory-grpo"])
    # seeds 0 and 1: 75% and 75% against 25% and 25%: +50 points on each seed; the sign-flip test over 2 seeds
    # cannot go below 2/2^2 = 0.5
    assert lines[2].startswith("| at-grpo-per-role | 75.0 ± 0.0 | 2 | +50.0 [")
    assert lines[2].endswith("p = 0.5 (the smallest possible with 2 seeds), 2 vs 2 seeds; per seed +50, +50 |")
    assert lines[3] == "| trajectory-grpo | 25.0 ± 0.0 | 2 | — |"


def test_the_report_compares_per_role_with_shared_at_each_budget_and_on_the_suite(study, tmp_path):
    rows = [
        row("trajectory-grpo", 0, [0, 0, 0, 0], split="val", budget=500),
        row("at-grpo-shared", 0, [1, 0, 0, 0], split="val", budget=500),
        row("at-grpo-per-role", 0, [1, 1, 1, 0], split="val", budget=500),
        row("at-grpo-shared", 0, [1, 1, 0, 0]),
        row("at-grpo-per-role", 0, [1, 1, 1, 1]),
    ]
    results_md = tmp_path / "results.md"
    results_md.write_text("")
    fields = {"out": tmp_path / "grouping.json", "task": next(iter(study.TASKS))}
    fields.update(val_episodes=100, eval_episodes=300)
    args = type("Args", (), fields)()
    study.write_report(rows, args, results_md)
    text = results_md.read_text()
    section = text[text.index("Per-role minus shared AT-GRPO") : text.index("Optimizer steps taken")]
    # one seed a side: 75% against 25% at 500 completions (+50), 100% against 50% on the suite (+50)
    budget_row = next(line for line in section.splitlines() if line.startswith("| at-grpo-per-role | —"))
    assert budget_row.split(" | ")[2].startswith("+50.0 [")
    assert "| at-grpo-per-role | 100.0 | 1 | +50.0 [" in section
    assert "minus at-grpo-shared in points" in section


def test_the_budget_table_pairs_each_method_at_each_budget_and_shows_every_seed(study):
    rows = [
        row("trajectory-grpo", 0, [0, 0, 0, 0], split="val", budget=500),
        row("trajectory-grpo", 1, [1, 0, 0, 0], split="val", budget=500),
        row("at-grpo-per-role", 0, [1, 1, 0, 0], split="val", budget=500),
        row("at-grpo-per-role", 1, [1, 1, 1, 1], split="val", budget=500),
        row("at-grpo-per-role", 0, [1, 1, 1, 1], split="val", budget=1000),  # no trajectory row at 1000
    ]
    lines = study.budget_table(rows, ["at-grpo-per-role", "trajectory-grpo"])
    assert len(lines) == 3  # the header, its rule, and no row for the reference itself
    cells = lines[2].strip("| ").split(" | ")
    assert cells[0] == "at-grpo-per-role" and cells[1] == "—" and cells[3:] == ["—", "—", "—"]
    # per seed 50% and 100% against 0% and 25%: +50 and +75 points, mean +62.5; over 2 seeds p >= 0.5 (not the
    # 5 discordant episodes' McNemar p of 0.062: the seeds are the replicates)
    assert cells[2].startswith("+62.5 [")
    assert cells[2].endswith("p = 0.5 (the smallest possible with 2 seeds), 2 vs 2 seeds; per seed +50, +75")


def test_the_report_names_the_code_behind_each_budgets_rows(study, tmp_path):
    from research import ledger

    out = tmp_path / "grouping.json"
    path = out.with_name(ledger.LEDGER_NAME)
    old = dict(
        code_commit=None,
        warm_start=None,
        note="recovered from the git history: first recorded in commit aee8c8c12345",
    )
    ledger.append(path, "grouping", row("trajectory-grpo", 0, [0, 1], split="val", budget=500), **old)
    ledger.append(path, "grouping", row("at-grpo-per-role", 0, [1, 1], split="val", budget=500), **old)
    new = dict(code_commit="4517de9" + "0" * 33, warm_start=None)
    for seed in (0, 1):  # reruns at one commit: seed 0's supersede the old rows
        for method in ("trajectory-grpo", "at-grpo-per-role"):
            ledger.append(path, "grouping", row(method, seed, [1, 0], split="val", budget=500), **new)
    ledger.append(path, "grouping", row("at-grpo-per-role", 0, [1, 1], split="eval", budget=4000), **old)
    ledger.append(
        path, "grouping", row("at-grpo-per-role", 0, [1], part="ablations"), **new
    )  # not a curve row
    lines = study.version_lines(out)
    assert lines[2:] == [
        "| split | budget | code: method seeds |",
        "|---|---|---|",
        "| validation | 500 | commit 4517de9: at-grpo-per-role s0,1, trajectory-grpo s0,1 |",
        "| suite | 4000 | first recorded in aee8c8c: at-grpo-per-role s0 |",
    ]
    assert study.version_lines(tmp_path / "none" / "grouping.json") == []


def test_the_report_prints_every_comparison_again_with_the_first_rows_in_place_of_their_reruns(
    study, tmp_path
):
    from research import ledger

    out = tmp_path / "grouping.json"
    path = out.with_name(ledger.LEDGER_NAME)
    first = [
        row("trajectory-grpo", 0, [0, 0, 0, 0], split="val", budget=500),
        row("at-grpo-per-role", 0, [0, 0, 0, 0], split="val", budget=500),
        row("turn-only", 0, [1, 0, 0, 0], split="val", budget=500),
    ]
    for made in first:
        ledger.append(path, "grouping", made, code_commit=None, warm_start=None)
    assert study.rerun_lines(first, out) == []  # nothing rerun yet
    rerun = row("at-grpo-per-role", 0, [1, 1, 1, 1], split="val", budget=500)
    ledger.append(path, "grouping", rerun, code_commit=None, warm_start=None)
    lines = study.rerun_lines([first[0], rerun, first[2]], out)
    assert "at-grpo-per-role seed 0" in lines[1]
    cells = {line.split(" | ")[0].strip("| "): line.split(" | ")[2] for line in lines[5:]}
    assert cells["at-grpo-per-role"].startswith("+0.0 [")  # the first row, not the rerun's +100
    assert cells["turn-only"].startswith("+25.0 [")  # every method's comparison is printed again


def test_the_steps_table_averages_each_budgets_recorded_optimizer_steps(study):
    rows = [
        {**row("trajectory-grpo", 0, [0], split="val", budget=500), "optimizer_steps": 3},
        {**row("trajectory-grpo", 1, [0], split="val", budget=500), "optimizer_steps": 4},
        {**row("trajectory-grpo", 2, [0], split="val", budget=500), "optimizer_steps": None},  # not recorded
        {**row("trajectory-grpo", 0, [0], split="eval", budget=4000), "optimizer_steps": 27},  # the suite's
    ]
    lines = study.steps_table(rows, ["trajectory-grpo", "at-grpo-per-role"])
    assert lines[2:] == ["| trajectory-grpo | — | 3.5 (n=2) | — | — | — |"]


@pytest.mark.parametrize("final_eval", [True, False])
def test_a_rerun_of_the_first_budgets_leaves_the_suite_alone(study, tmp_path, final_eval):
    import argparse

    metrics = tmp_path / "run" / "metrics.jsonl"
    metrics.parent.mkdir()
    metrics.write_text(
        "".join(json.dumps({"step": s, "train/completions_total": 300 * s}) + "\n" for s in (1, 2, 4))
    )
    runner = study.Study.__new__(study.Study)
    runner.args = argparse.Namespace(budget=1000, final_eval=final_eval)
    done = []
    runner.evaluate = lambda policy, name, split: done.append((name, split)) or {"success_rate": 0.5, "episodes": 1,
                                                                                  "per_episode": {"success": [1]}}  # fmt: skip
    runner.record = lambda row, warm_start: None
    runner.warm_start = lambda env_kwargs: None
    runner.env_kwargs = {}
    runner.final_row = lambda part, method, seed, folder: done.append(("final", "eval"))
    runner.budget_rows("curves", "trajectory-grpo", 0, metrics.parent)
    budgets = [name.rsplit("_b", 1)[1] for name, split in done if split == "val"]
    assert budgets == ["250_val", "500_val", "1000_val"]
    assert (("final", "eval") in done) is final_eval


def test_the_pooling_part_compares_turn_only_with_per_role_under_each_loss_apart_from_the_curves(
    study, tmp_path
):
    from research import ledger

    out = tmp_path / "grouping.json"
    made = [
        row("at-grpo-per-role", 0, [1, 0, 0, 0], part="pooling", split="val", budget=500),
        row("turn-only", 0, [1, 1, 1, 0], part="pooling", split="val", budget=500),
        row("at-grpo-per-role+dr_grpo", 0, [1, 1, 0, 0], part="pooling", split="val", budget=500),
        row("turn-only+dr_grpo", 0, [1, 1, 0, 0], part="pooling", split="val", budget=500),
        row("turn-only", 0, [0, 0, 0, 0], split="val", budget=500),  # a curves row: not in these tables
    ]
    for entry in made:
        ledger.append(out.with_name(ledger.LEDGER_NAME), "grouping", entry, code_commit="a959dc1" + "0" * 33,
                      warm_start=None)  # fmt: skip
    lines = study.pooling_lines(made, out)
    success = {line.split(" | ")[0].strip("| "): line.split(" | ")[2] for line in lines if "(n=" in line}
    assert success == {"at-grpo-per-role": "25.0 (n=1)", "turn-only": "75.0 (n=1)",
                       "at-grpo-per-role+dr_grpo": "50.0 (n=1)", "turn-only+dr_grpo": "50.0 (n=1)"}  # fmt: skip
    differences = [line for line in lines if line.startswith("| turn-only") and "(n=" not in line]
    # one seed a side at 500 completions: 75% - 25% under grpo, 50% - 50% under dr_grpo
    assert [line.split(" | ")[2][:5] for line in differences] == ["+50.0", "+0.0 "]
    assert (
        "| validation | 500 | commit a959dc1: at-grpo-per-role s0, at-grpo-per-role+dr_grpo s0"
        in "\n".join(lines)
    )
    # the lead under grpo minus the lead under dr_grpo, grid by grid: (0, 1, 1, 0) - (0, 0, 0, 0) at 500
    interaction = next(
        line for line in lines if line.startswith("| lead under grpo minus lead under dr_grpo")
    )
    assert interaction.split(" | ")[1] == "—" and interaction.split(" | ")[2].startswith("+50.0 [")
    assert study.pooling_lines([entry for entry in made if entry["part"] == "curves"], out) == []
