"""The pretrained model's RL study: its report from rows (no training; the study's own smoke run is in its
docstring and its rows are on the ledger)."""

import argparse

from scripts_loader import load_script

study = load_script("pretrained_rl_study")


def _row(part, method, seed, successes, **extra):
    return {"part": part, "method": method, "seed": seed, "episode_success": successes,
            "success_rate": successes.count("1") / len(successes), "episodes": len(successes), **extra}  # fmt: skip


def _examples(solved):
    return [
        {"key": f"seed/{i}", "success": s, "steps": [["reasoner", f"answer {i}"]]}
        for i, s in enumerate(solved)
    ]


def _steps(success, parse):
    return [{"step": 1, "train/success_rate": success, "train/completions_total": 72,
             "train/parse_error/reasoner": parse, "train/truncated/reasoner": 0.0}]  # fmt: skip


def rows():
    start = _row("start", "mas", None, "0001", examples=_examples([False, False, False, True]))
    trained = [
        _row(
            "trained",
            "AT-GRPO per role",
            seed,
            successes,
            examples=_examples([seed == 1, True, False, True]),
            steps=_steps(0.5, 0.25 * seed),
            curve=[[0, 0, 0.0], [3, 216, 0.5]],
        )  # fmt: skip
        for seed, successes in ((1, "1101"), (0, "0111"))
    ]
    return [start, *trained]


def test_each_methods_gain_is_against_its_own_start_paired_by_seed():
    lines = study.method_lines(rows())
    per_role = next(line for line in lines if line.startswith("| AT-GRPO per role"))
    # start 1 of 4 (25%); trained 75% on both seeds: +50 points on each, no spread
    assert "| 25.0 | 75.0 (seed 0), 75.0 (seed 1) | 75.0 |" in per_role
    assert "+50.0 [no interval: no spread]" in per_role and "per seed +50, +50" in per_role
    assert next(line for line in lines if line.startswith("| single GRPO")).endswith("| — | — | — | — |")


def test_the_step_table_averages_the_steps_and_seeds_of_each_bin_of_completions():
    [line] = [line for line in study.step_lines(rows()) if line.startswith("| AT-GRPO per role")]
    assert line == "| AT-GRPO per role | 1-128 | 2 | 50 | reasoner 12 | reasoner 0 |"  # one step of each seed


def test_the_transcripts_show_first_what_training_changed_then_the_rest_in_suite_order():
    lines = study.transcript_lines(rows())
    shown = [line for line in lines if line.startswith("**")]
    # seed 0 (the lowest) solved seed/0? no; seed/1 yes and the start did not: seed/1 first, then seed/0, seed/2
    assert shown == ["**seed/1, before: not solved**", "**seed/1, after: solved**",
                     "**seed/0, before: not solved**", "**seed/0, after: not solved**",
                     "**seed/2, before: not solved**", "**seed/2, after: not solved**"]  # fmt: skip


def test_the_report_writes_the_section_and_the_curve(tmp_path):
    args = argparse.Namespace(budget=1, eval_episodes=1, val_episodes=1, curve=tmp_path / "curve.png",
                              results_md=tmp_path / "results.md")  # fmt: skip
    table = rows()
    for row in table[1:]:
        row.update(budget=512, val_episodes=16)
    study.write_report(table, args)
    text = args.results_md.read_text()
    assert "for 512 sampled completions per seed" in text and "on 16 validation problems" in text
    assert "on 4 problems of the evaluation split" in text and args.curve.stat().st_size > 0
