"""The committed comparison of issue 54's move (docs/results/step_identity.json, from tests/step_identity.py): the
metrics of a short letters run and of the default run's first 3 steps, equal row for row at the commit before the
move and at the commit that made it."""

import json
from pathlib import Path

RECORD = Path(__file__).resolve().parents[1] / "docs" / "results" / "step_identity.json"


def test_the_move_left_every_logged_metric_bit_identical():
    record = json.loads(RECORD.read_text())
    before, after = record["before"], record["after"]
    assert before["commit"] != after["commit"]
    assert {name: len(rows) for name, rows in before["runs"].items()} == {"default": 4, "letters": 3}
    assert before["runs"] == after["runs"] and record["identical"] == {"default": True, "letters": True}
    assert all("policy/tool/loss" in row for row in before["runs"]["default"][1:])  # the updates are in the rows
