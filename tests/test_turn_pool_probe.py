"""scripts/turn_pool_probe.py: the constant that turn-only grouping adds to each agent's advantages, against
figures worked by hand, and how the dumps of a run are read."""

import json

import pytest
from scripts_loader import load_script


@pytest.fixture(scope="module")
def probe():
    return load_script("turn_pool_probe")


def turn_group(group, tool, plan, programs=None):
    """Dump rows of one turn group (step 1): the tool's candidates' rewards, then the plan's, with the pooled
    advantage a turn-grouped run with scale_rewards none dumps."""
    mean = (sum(tool) + sum(plan)) / (len(tool) + len(plan))
    programs = programs or ["absent"] * len(tool)
    rows = [{"step": 1, "group_id": group, "agent": "tool", "reward": r, "advantage": r - mean, "program": p}
            for r, p in zip(tool, programs, strict=True)]  # fmt: skip
    rows += [{"step": 1, "group_id": group, "agent": "plan", "reward": r, "advantage": r - mean, "program": None}
             for r in plan]  # fmt: skip
    return rows


ROWS = [
    # pooled mean 0.25: tool all tied at 0 (shift -0.25, AT-GRPO gives it nothing), plan +-0.5 (shift +0.25)
    *turn_group("a", [0, 0, 0, 0], [1, 0, 1, 0]),
    # pooled mean 0.7: tool mean 0.4 (shift -0.3; the solving program +0.6 per agent, +0.3 pooled), plan tied at 1
    *turn_group("b", [1, 0.2, 0.2, 0.2], [1, 1, 1, 1], ["solves", "fails", "fails", "fails"]),
    # pooled mean 0.675: tool mean 0.4 (shift -0.275: its solving program goes from +0.1 to -0.175, a flip), plan
    # mean 0.95 (shift +0.275: its -0.05 candidate becomes +0.225, a flip)
    *turn_group("c", [0.5, 0.3], [1.0, 0.9], ["solves", "fails"]),
    # one agent only: no pooling to measure
    {"step": 2, "group_id": "a", "agent": "plan", "reward": 1.0, "advantage": 0.0, "program": None},
]


def test_the_shift_of_each_agent_and_what_it_changes_are_the_hand_worked_figures(probe):
    figures = probe.pooling_shifts(ROWS)
    tool, plan = figures["tool"], figures["plan"]
    assert tool["groups"] == plan["groups"] == 3
    assert tool["mean_shift"] == pytest.approx(-(0.25 + 0.3 + 0.275) / 3)
    assert plan["mean_shift"] == pytest.approx((0.25 + 0.3 + 0.275) / 3)
    assert (tool["negative_share"], plan["negative_share"]) == (1.0, 0.0)
    assert tool["tied_share"] == tool["tied_signal_share"] == pytest.approx(1 / 3)  # group a
    assert plan["tied_share"] == plan["tied_signal_share"] == pytest.approx(1 / 3)  # group b
    # |AT-GRPO advantage| of the tool's 10 candidates: 0 x4, 0.6 + 0.2 x3, 0.1 x2 -> mean 0.14
    assert tool["shift_to_advantage"] == pytest.approx(((0.25 + 0.3 + 0.275) / 3) / 0.14)
    # nonzero AT-GRPO advantages: the tool's 6 (b, c), one flipped; the plan's 6 (a, c), one flipped
    assert tool["flip_share"] == pytest.approx(1 / 6) and plan["flip_share"] == pytest.approx(1 / 6)
    assert tool["solving"] == 2 and tool["solving_positive"] == {"per_agent": 1.0, "pooled": 0.5}
    assert "solving" not in plan


def test_a_dump_whose_advantages_are_not_the_pooled_ones_is_refused(probe):
    rows = turn_group("a", [0, 1], [1, 1])
    rows[0] = {**rows[0], "advantage": 0.0}  # per agent, or another grouping's
    with pytest.raises(ValueError, match="not a turn-grouped dump with scale_rewards none"):
        probe.pooling_shifts(rows)
    assert probe.pooling_shifts(rows, check_advantages=False)["tool"]["groups"] == 1


def test_phases_split_rows_by_the_completions_drawn_before_their_step(probe):
    rows = [{"id": i, "drawn_before": drawn} for i, drawn in enumerate((0, 249, 250, 999, 1000))]
    split = probe.phases(rows, (0, 250, 1000))
    assert {phase: [r["id"] for r in members] for phase, members in split.items()} == {
        "[0, 250)": [0, 1],
        "[250, 1000)": [2, 3],
    }


def test_a_runs_rows_carry_their_seed_and_the_completions_drawn_before_their_step(probe, tmp_path):
    metrics = [{"step": 0, "eval/success_rate": 0.1}, {"step": 1, "train/completions_total": 96},
               {"step": 2, "train/completions_total": 200}]  # fmt: skip
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    (tmp_path / "rollouts").mkdir()
    for step in (1, 2):
        (tmp_path / "rollouts" / f"step_{step}.jsonl").write_text(
            json.dumps({"step": step, "reward": 0.0}) + "\n"
        )
    rows = probe._read_run(tmp_path, seed=3)
    assert [(r["step"], r["drawn_before"]) for r in rows] == [((3, 1), 0), ((3, 2), 96)]
    (tmp_path / "rollouts" / "step_2.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="--dump_rollouts true"):
        probe._read_run(tmp_path, seed=3)


def test_length_leads_compare_turn_only_with_per_role_per_seed_under_each_loss(probe):
    def completions(seed, drawn, *texts):
        return [
            {"step": (seed, 1), "drawn_before": drawn, "agent": "tool", "completion": text} for text in texts
        ]

    runs = {
        "at-grpo-per-role": completions(0, 0, "ab", "abcd") + completions(1, 0, "a"),
        "turn-only": completions(0, 0, "abcdef") + completions(1, 0, "ab") + completions(1, 300, "abc"),
        "at-grpo-per-role+dr_grpo": completions(0, 0, "abc"),
        "turn-only+dr_grpo": completions(0, 0, "a")
        + [
            {"step": (0, 1), "drawn_before": 0, "agent": "plan", "completion": "a long plan answer"}
        ],  # fmt: skip
    }
    report = probe.length_leads(runs, (0, 250, 500))
    first = report["[0, 250)"]
    assert first["mean_chars"]["at-grpo-per-role"] == {0: 3.0, 1: 1.0}
    # turn-only 6 and 2 against per-role 3 and 1; under dr_grpo 1 against 3 (the plan's answer is not counted)
    assert first["turn_only_minus_per_role"] == {"grpo": {0: 3.0, 1: 1.0}, "dr_grpo": {0: -2.0}}
    assert report["[250, 500)"]["turn_only_minus_per_role"]["grpo"] == {}  # no per-role rows there
