"""The scaling-study script's bookkeeping: rows in the documented schema, resumable recording, the plot, and the
results section."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from scripts_loader import load_script

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def study():
    return load_script("scaling_study")


def _result(before, after, instances, run):
    return {"before": before, "after": after, "sampled_completions": 100, "steps": 4,
            "instances_per_step": instances, "run": run}  # fmt: skip


def test_rows_plot_and_section(study, tmp_path):
    rows = []
    for size, before, after in ((1, 0.2, 0.3), (3, 0.25, 0.45)):
        for seed in (0, 1):
            rows += study._rows(
                size, "shaped", seed, _result(before, after + 0.02 * seed, 16 // size, "runs/x")
            )
    for reward, after in (("shaped", 0.5), ("outcome", 0.4)):
        rows += study._rows(2, reward, 0, _result(0.38, after, 8, "runs/m"))
    assert {"env", "env_kwargs", "num_agents", "method", "reward", "seed", "success_rate"} <= set(rows[0])
    assert {row["method"] for row in rows} == {"untrained", "at-grpo"}
    study.plot(rows, tmp_path / "scaling.png")
    assert (tmp_path / "scaling.png").stat().st_size > 5_000
    results_md = tmp_path / "results.md"
    results_md.write_text("# Results\n\nkept text\n")
    args = argparse.Namespace(budget=100, agent_instances=16, eval_episodes=10, results_md=results_md)
    study.write_section(rows, args, results_md)
    study.write_section(rows, args, results_md)  # idempotent: the section is replaced, not appended
    text = results_md.read_text()
    assert text.count(study.START) == 1 and "kept text" in text
    # 45 and 47: sample std (ddof=1) 1.4; t(0.975, 1 df) = 12.706 -> half-width 12.7 points
    assert "| 3 | 25.0 ± 0.0 [25.0, 25.0] | 46.0 ± 1.4 [33.3, 58.7] | +21.0 | 100 | 2 |" in text
    assert "| outcome | 38.0 (n=1) | 40.0 (n=1) | +2.0 |" in text
    study.write_section(
        [r for r in rows if r["reward"] == "shaped" and r["num_agents"] != 2], args, results_md
    )
    assert "| shaped | — | — | — |" in results_md.read_text()  # a part not run yet
    json.dumps(rows)  # JSON-ready


def test_rows_are_recorded_after_every_run_and_rows_of_the_old_setting_are_set_aside(study, tmp_path):
    from research import cycle
    from research.ledger import append, read_ledger, select

    out = tmp_path / "scaling.json"
    old = {"env": "plan-path-v0", "num_agents": 1, "reward": "shaped", "seed": 0, "method": "at-grpo",
           "success_rate": 0.5}  # fmt: skip  # before the rerun: no env_kwargs
    append(tmp_path / "ledger.jsonl", "scaling", old, code_commit=None, warm_start=None)

    def record(rows, warm_start):  # as the study records a run's two rows
        for row in rows:
            table = cycle.record(out, study.RULE, row, warm_start=warm_start)
        return table

    rows = record(study._rows(1, "shaped", 0, _result(0.1, 0.2, 16, "runs/a")), None)
    rows = record(study._rows(2, "outcome", 0, _result(0.1, 0.3, 8, "runs/b")), tmp_path)
    rows = record(study._rows(1, "shaped", 0, _result(0.1, 0.9, 16, "runs/c")), None)  # a rerun
    assert json.loads(out.read_text()) == rows and len(rows) == 4
    assert [r["success_rate"] for r in rows if r["num_agents"] == 1 and r["method"] == "at-grpo"] == [0.9]
    entries = read_ledger(tmp_path / "ledger.jsonl")
    # nothing removed; the warm start's digest; the rerun's untrained row, the same figure from the same code and
    # weights, is not recorded a second time
    assert len(entries) == 6 and entries[3].warm_start is not None
    reasons = [reason for _, reason in select(entries, study.RULE).set_aside]
    assert reasons[0].startswith("recorded before the study's rerun under dr_grpo") and len(reasons) == 2


def test_rows_of_the_first_study_under_grpo_are_set_aside_and_shown_as_superseded(study, tmp_path):
    from research import cycle
    from research.ledger import append

    out, results_md = tmp_path / "scaling.json", tmp_path / "results.md"
    first = study._rows(3, "shaped", 0, _result(0.29, 0.9, 5, "runs/old"))
    for row in first:  # the first study's rows: the setting, no loss named
        append(out.with_name("ledger.jsonl"), "scaling", {k: v for k, v in row.items() if k != "loss"},
               code_commit=None, warm_start=None)  # fmt: skip
    args = argparse.Namespace(
        budget=2500, agent_instances=16, eval_episodes=300, results_md=results_md, out=out
    )
    study.write_report([], args)
    text = results_md.read_text()
    assert "No run under `dr_grpo` yet" in text and "### Superseded: the first study" in text
    assert "| 3 | 29.0 (n=1) | 90.0 (n=1) | +61.0 | 100 | 1 |" in text
    rows = []
    for row in study._rows(3, "shaped", 0, _result(0.29, 0.8, 5, "runs/new")):
        rows = cycle.record(out, study.RULE, row, warm_start=None)
    assert [r["loss"] for r in rows] == ["dr_grpo", "dr_grpo"]
    study.write_report(rows, args)
    text = results_md.read_text()
    current, old = text.split("### Superseded")
    assert "| 3 | 29.0 (n=1) | 80.0 (n=1) | +51.0 | 100 | 1 |" in current and "scaling.png" in current
    assert "| 3 | 29.0 (n=1) | 90.0 (n=1) | +61.0 | 100 | 1 |" in old and "scaling.png" not in old


def test_trained_teams_are_compared_paired_by_seed_against_a_hand_worked_example(study):
    rows = []
    for size, afters in ((1, (0.30, 0.40, 0.35)), (2, (0.90, 0.60, 0.65)), (3, (0.90, 0.84))):
        for seed, after in enumerate(afters):
            rows += study._rows(size, "shaped", seed, _result(0.3, after, 8, "runs/x"))
    lines = study.comparison_lines(rows, judge=False)
    # N=2 - N=1 per seed: +60, +20, +30 -> mean 36.67; sd 20.817 (ddof=1); t(0.975, 2) = 4.3027 -> half-width
    # 4.3027 * 20.817 / sqrt(3) = 51.71; every seed positive: the exact sign-flip p is 2 / 2^3 = 0.25
    assert lines[0] == (
        "| N = 2 minus N = 1 | +36.7 [-15.0, +88.4] | p = 0.25 (the smallest possible with 3 seeds) | +60, +20, +30 |"
    )
    # N=3 ran seeds 0 and 1 only: compared over those two, 0 and +24: one seed differs, so no sign flip can move
    # |mean| 12 (p = 1 whatever the result: no test); sd 16.97, t(0.975, 1) = 12.706 -> half-width 152.5, the
    # interval [-140.5, +164.5] clipped to the range of a difference of rates
    assert lines[1] == (
        "| N = 3 minus N = 2 | +12.0 [-100.0, +100.0] | no test possible with 1 of 2 seeds differing | +0, +24 |"
    )
    assert len(lines) == 2  # N = 5, 7 and outcome-only rewards were not run: no row


def test_the_prediction_is_judged_by_the_interval_once_every_seed_is_in(study):
    rows = []
    sizes = {1: [0.30] * 6, 2: [0.90, 0.92, 0.88, 0.91, 0.95, 0.89], 3: [0.97, 0.94, 0.90, 0.93, 0.92, 0.96],
             5: [0.93, 0.90, 0.91, 0.80, 0.82, 0.85], 7: [0.77, 0.94, 0.93]}  # fmt: skip
    for size, afters in sizes.items():
        for seed, after in enumerate(afters):
            rows += study._rows(size, "shaped", seed, _result(0.3, after, 8, "runs/x"))
    lines = study.comparison_lines(rows)
    # 2 - 1: +60 +62 +58 +61 +65 +59, every seed above: the interval lies above 0, as predicted ("gains")
    assert lines[0].endswith("| gains / gains: **as predicted** |")
    # 3 - 2: +7 +2 +2 +2 -3 +7 (mean 2.83, sd 3.76, half-width 2.571 * 3.76 / sqrt(6) = 3.95): holds 0
    assert "+2.8 [-1.1, +6.8]" in lines[1] and lines[1].endswith("| none / none: **as predicted** |")
    # 5 - 3: -4 -4 +1 -13 -10 -11 (mean -6.83, sd 5.35, half-width 5.61): below 0, still "no gain"
    assert "-6.8 [-12.4, -1.2]" in lines[2] and lines[2].endswith("| no gain / loses: **as predicted** |")
    # 7 ran 3 seeds: shown, not judged
    assert lines[3].endswith("| no gain / judged at 6 seeds |")
    # on seeds 2-5 alone (the ones the prediction had not seen): 2 - 1 is +58 +61 +65 +59 -> gains
    unseen = study.comparison_lines(rows, study.UNSEEN_SEEDS)
    assert "| +58, +61, +65, +59 |" in unseen[0] and unseen[0].endswith("| gains / gains: **as predicted** |")
    assert unseen[3].startswith("| N = 7 minus N = 3 |") and unseen[3].endswith(
        "| no gain / judged at 4 seeds |"
    )


def test_what_a_comparison_shows_and_whether_it_was_predicted(study):
    assert study.found({"ci95": [0.01, 0.2], "difference": 0.1}) == "gains"
    assert study.found({"ci95": [-0.2, -0.01], "difference": -0.1}) == "loses"
    assert study.found({"ci95": [-0.01, 0.2], "difference": 0.1}) == "none"
    assert study.found({"ci95": None, "difference": 0.03}) == "gains"  # every seed the same difference
    assert study.found({"ci95": None, "difference": 0.0}) == "none"
    assert study.as_predicted("no gain", "loses") and study.as_predicted("no gain", "none")
    assert not study.as_predicted("none", "loses") and not study.as_predicted("gains", "none")


def _run_folder(path, evaluations):
    path.mkdir(parents=True)
    path.joinpath("metrics.jsonl").write_text(
        "\n".join(json.dumps({"step": step, **metrics}) for step, metrics in evaluations) + "\n"
    )
    return str(path)


def test_what_the_trained_teams_wrote_is_read_from_each_runs_last_evaluation(study, tmp_path):
    out = tmp_path / "scaling.json"
    first = {"eval/success_rate": 0.3, "eval/truncated/aggregator_0": 0.5}
    rows = []
    for seed, (success, cut, programs) in enumerate(
        ((0.9, 0.1, (1.0, 0.5)), (0.7, 0.3, (1.0, 1.0)), (0.95, 0.0, (1.0, 1.0)))
    ):
        last = {"eval/success_rate": success, "eval/truncated/aggregator_0": cut,
                "eval/truncated/tool_0": 0.02, "eval/truncated/tool_1": 0.0,
                "eval/solving_program/tool_0": programs[0], "eval/solving_program/tool_1": programs[1]}  # fmt: skip
        run = _run_folder(tmp_path / f"n3_s{seed}", [(0, first), (4, {"train/loss": 0.1}), (8, last)])
        rows += study._rows(3, "shaped", seed, _result(0.3, success, 5, run))
    one = _run_folder(
        tmp_path / "n1_s0", [(0, first), (8, {"eval/success_rate": 0.31, "eval/truncated/aggregator_0": 0.0})]
    )
    rows += study._rows(1, "shaped", 0, _result(0.3, 0.31, 16, one))
    formats = study.record_formats(rows, out)
    assert study.read_formats(rows, out) == formats and len(formats) == 4  # the trained rows only
    three = [f for f in formats if f["num_agents"] == 3]
    assert three[0]["aggregator_truncated"] == 0.1 and three[0]["solving_program"] == 0.75
    assert three[0]["proposer_truncated"] == 0.01
    assert [f for f in formats if f["num_agents"] == 1][0]["solving_program"] is None
    lines = study.format_lines(formats)
    assert lines[2] == "| 1 | s0 31.0 / 0.0 | — (no proposer) | — (no proposer) |"
    # proposers: solving (0.75 + 1 + 1) / 3 = 91.7 %; cut (0.01 + 0.01 + 0.01) / 3 = 1.0 %
    assert lines[3] == "| 3 | s0 90.0 / 10.0, s1 70.0 / 30.0, s2 95.0 / 0.0 | 91.7 | 1.0 |"
    # success (0.9, 0.7, 0.95) against cut (0.1, 0.3, 0.0): deviations (+0.05, -0.15, +0.10) and (-1/30, +1/6,
    # -2/15): r = (-0.00167 - 0.025 - 0.01333) / sqrt(0.035 * 0.04667) = -0.04 / 0.04041 = -0.990
    assert lines[-1].endswith("Pearson r = -0.99.")
    # a run of another seed or folder than the table's row is not shown against it
    moved = [{**r, "run": "elsewhere"} if r["num_agents"] == 1 else r for r in rows]
    assert len(study.read_formats(moved, out)) == 3


def test_formats_refuses_runs_that_are_not_on_this_machine(study, tmp_path):
    rows = study._rows(2, "shaped", 0, _result(0.3, 0.9, 8, str(tmp_path / "gone")))
    with pytest.raises(SystemExit, match=r"1 are not here: .*gone\. Run --formats on the machine"):
        study.record_formats(rows, tmp_path / "scaling.json")
    assert not (tmp_path / study.FORMATS).exists()


def test_formats_without_report_is_refused_before_any_work(tmp_path):
    script = Path(__file__).resolve().parents[1] / "scripts" / "scaling_study.py"
    done = subprocess.run([sys.executable, str(script), "--formats", "--out", str(tmp_path / "rows.json")],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "--formats reads finished runs: give it with --report" in done.stderr
    assert not list(tmp_path.iterdir())
