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
    missing = tmp_path / "no-python"
    tier_figures.main(
        ["--instances", "2", "--out", str(out), "--page", str(page), "--anchor-python", str(missing)]
    )
    record = json.loads(out.read_text())
    assert record["instances"] == 2 and len(record["rows"]) == len(tier_figures.ENVS) * len(tiers.TIER_NAMES)
    for row in record["rows"]:
        assert row["instances_per_s"] > 0
        length = row["solution_length"]
        assert (length is None) == (row["env"] in ("math-v0", "code-v0"))
        if length is not None:
            assert 0 < length["min"] <= length["median"] <= length["max"]
            assert length["min"] <= length["mean"] <= length["max"]
    assert record["anchor"] is None and "not measured in this run" in page.read_text()
    assert page.read_text().endswith(tier_figures.render_section(record) + "\n")


def test_the_anchor_line_gives_the_medium_sokoban_tier_against_gym_sokoban():
    record = {
        "rows": [{"env": "sokoban-v0", "tier": "medium", "instances_per_s": 500.0}],
        "anchor": {
            "rooms": 200,
            "failures": 1,
            "rooms_per_s": 40.0,
            "solution_length_mean": 11.35,
            "solved_sample": 100,
        },
    }
    line = tier_figures.anchor_line(record)
    assert "40.0 rooms/s (200 rooms, 1 failed and retried" in line and "resets at 500/s: **12.5x**" in line
