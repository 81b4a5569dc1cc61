"""The README's figures of the default run are the last measurement of `scripts/default_run.py`, for today's config.

A changed default config, or a README section edited by hand, fails here until the script is rerun."""

import json

from scripts_loader import load_script

default_run = load_script("default_run")


def test_the_readme_shows_the_recorded_measurement_of_the_current_default_config():
    record = json.loads(default_run.OUT.read_text())
    assert record["config_sha256"] == default_run.config_digest(), (
        "pettingllms/configs/tiny/plan_path.yaml changed since the README's figures were measured: rerun "
        ".venv/bin/python scripts/default_run.py"
    )
    readme = default_run.README.read_text()
    start, end = readme.index(default_run.SECTION_START), readme.index(default_run.SECTION_END)
    shown = readme[start : end + len(default_run.SECTION_END)]
    assert shown == default_run.render_section(record, default_run.history()), (
        "the README's default-run section is not what scripts/default_run.py renders from "
        "docs/results/default_run.json: rerun it with --report (or in full, if the figures are stale)"
    )


def test_the_recorded_figures_agree_with_each_other():
    """The printed summary, the run's evaluations and pettingllms-eval's tell one story."""
    record = json.loads(default_run.OUT.read_text())
    before, after = record["run"]["before"], record["run"]["after"]
    assert record["summary"][0] == f"evaluation success: {before:.2f} before training -> {after:.2f} after"
    assert record["curve"][0][2] == before and record["curve"][-1][2] == after
    difference = record["eval"]["after"] - record["eval"]["before"]
    assert abs(record["paired"]["difference"] - difference) < 1e-9
    assert record["first_command_s"] > record["build_s"] > 0 and record["training_s"] > 0


def test_the_readme_gives_the_range_over_every_measurement_of_this_config_on_record():
    records = default_run.history()
    recorded = [{k: v for k, v in r.items() if k != "code_commit"} for r in records]  # the ledger line's commit
    assert json.loads(default_run.OUT.read_text()) in recorded  # the last measurement is on the record
    before = sorted(r["run"]["before"] for r in records)
    sentence = default_run.spread(records)
    assert f"Over the {len(records)} measurements of this config on record" in sentence
    assert (
        f"{before[0]:.3f}-{before[-1]:.3f} before training"
        if len(set(before)) > 1
        else f"{before[0]:.3f} before"
    ) in sentence
    step_5 = sorted(success for r in records for step, _, success in r["curve"] if step == 5)
    assert f"step 5 at {step_5[0]:.2f}-{step_5[-1]:.2f}" in sentence  # when the jump comes, over the records
