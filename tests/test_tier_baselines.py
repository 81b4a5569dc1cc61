"""The solver and random baselines of every tier: the script runs end to end at a tiny budget, and the committed
board holds every tier's baselines as the script writes them."""

import json

from scripts_loader import load_script

from pettingllms.envs import tiers

tier_baselines = load_script("tier_baselines")


def test_the_script_evaluates_both_baselines_at_every_tier_and_builds_their_tables(tmp_path):
    results, board = tmp_path / "results", tmp_path / "board"
    tier_baselines.main(
        [
            "--episodes",
            "2",
            "--envs",
            "sudoku-v0,plan-path-v0",
            "--results",
            str(results),
            "--board",
            str(board),
        ]
    )
    assert sorted(p.name for p in results.iterdir()) == sorted(
        f"tier_{tier}_{policy}.json" for tier in tiers.TIER_NAMES for policy in ("oracle", "random")
    )
    for tier in tiers.TIER_NAMES:
        oracle = json.loads(tier_baselines.result_file(results, tier, "oracle").read_text())
        assert oracle["label"] == "oracle (solver / reference)"
        for env in ("sudoku-v0", "plan-path-v0"):
            assert oracle["results"][env]["tier"] == tier and oracle["results"][env]["episodes"] == 2
            assert (
                oracle["results"][env]["success_rate"] == 1.0
                and oracle["results"][env]["mean_progress"] == 100.0
            )
    text = (board / "leaderboard.md").read_text()
    sudoku = text.split("### sudoku-v0")[1]
    assert "| policy | easy | medium | hard | expert |" in sudoku
    assert (
        "| oracle (solver / reference) | " + " | ".join(["100.0 [34.2, 100.0] (n=2); progress 100.0"] * 4)
        in sudoku
    )
    assert "| random | " in sudoku


def test_an_env_without_tiers_is_refused(tmp_path, capsys):
    import pytest

    with pytest.raises(SystemExit):
        tier_baselines.main(["--envs", "bargain-v0", "--results", str(tmp_path)])
    assert "--envs: ['bargain-v0'] have no tiers" in capsys.readouterr().err


def test_the_board_holds_every_tiers_baselines():
    for tier in tiers.TIER_NAMES:
        for policy, label in tier_baselines.LABELS.items():
            path = tier_baselines.result_file(tier_baselines.RESULTS, tier, policy)
            assert path.is_file(), f"{path.name} missing: run scripts/tier_baselines.py"
            report = json.loads(path.read_text())
            assert report["label"] == label and sorted(report["results"]) == sorted(tier_baselines.ENVS)
            for env, result in report["results"].items():
                # every suite holds EPISODES instances, but the easy code suite: its split has 15 programs
                assert result["tier"] == tier and result["episodes"] == result["suite"]["episodes"]
                assert result["episodes"] == tier_baselines.EPISODES or (
                    (env, tier) == ("code-v0", "easy")
                    and "the space holds no more" in result["suite"]["description"]
                )
                assert result["suite"]["env_kwargs"] == dict(getattr(tiers, tier_baselines.TABLES[env])[tier])
                if policy == "oracle":
                    assert result["success_rate"] == 1.0 and result["mean_progress"] == 100.0
    board = (tier_baselines.BOARD / "leaderboard.md").read_text()
    assert all(f"### {env}" in board.split("## Difficulty tiers")[1] for env in tier_baselines.ENVS)
