"""docs/tiers.md shows the last measurement of `scripts/tier_figures.py` (docs/results/tiers.json), for every tier
of today's table; the script runs end to end at a tiny budget."""

import json

from scripts_loader import load_script

from pettingllms.envs import tiers

tier_figures = load_script("tier_figures")


def test_the_page_shows_the_recorded_measurement():
    record = json.loads(tier_figures.OUT.read_text())
    page = tier_figures.PAGE.read_text()
    assert page == tier_figures.PAGE_HEAD + tier_figures.render_section(record) + "\n", (
        "docs/tiers.md is not what scripts/tier_figures.py renders from docs/results/tiers.json: rerun it with --report"
    )


def test_the_recorded_measurement_is_of_the_current_tiers():
    record = json.loads(tier_figures.OUT.read_text())
    recorded = {(row["env"], row["tier"]): row["arguments"] for row in record["rows"]}
    current = {
        (env_id, tier): dict(table[tier])
        for env_id, table in tier_figures.ENVS.items()
        for tier in tiers.TIER_NAMES
    }
    assert recorded == current, (
        "the tier table changed since docs/results/tiers.json: rerun scripts/tier_figures.py"
    )


def test_the_script_measures_every_tier(tmp_path):
    out, page = tmp_path / "tiers.json", tmp_path / "tiers.md"
    tier_figures.main(["--instances", "2", "--out", str(out), "--page", str(page)])
    record = json.loads(out.read_text())
    assert record["instances"] == 2 and len(record["rows"]) == len(tier_figures.ENVS) * len(tiers.TIER_NAMES)
    for row in record["rows"]:
        assert row["instances_per_s"] > 0
        length = row["solution_length"]
        assert (length is None) == (row["env"] == "math-v0")
        if length is not None:
            assert 0 < length["min"] <= length["median"] <= length["max"]
    assert page.read_text().endswith(tier_figures.render_section(record) + "\n")
