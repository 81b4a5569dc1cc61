"""The studies' cycle (scripts/research/cycle.py): when a run counts as finished, for every study's rule,
against hand-written metrics.jsonl files; a finished run is not trained again; an evaluation runs once and is
read from its report afterwards; the warm start's variants; a row recorded beside its table."""

import json
from pathlib import Path

import pytest

from research import cycle, ledger

GROUPING = {"max_steps": 40, "budget": 100, "final_evaluation": False}
"""scripts/grouping_study.py's rule: its last training step reached a cap (no evaluation asked for)."""
MINIATURE = {"max_steps": 40, "budget": 100}
"""scripts/reproduce_miniature.py's rule: the log ends with the final evaluation, at a cap."""
SCALING: dict = {}
"""scripts/scaling_study.py's rule: the log ends with the final evaluation, whatever caps the run had."""

START = {"step": 0, "eval/success_rate": 0.1}  # the evaluation before training


def step(n, completions, evaluation=None):
    row = {"step": n, "train/completions_total": completions, "train/reward": 0.5}
    return row if evaluation is None else {**row, "eval/success_rate": evaluation}


CASES = {
    # name: (the log's rows, None for no file; (grouping, miniature, scaling) finished?)
    "no log": (None, (False, False, False)),
    "an empty log": ([], (False, False, False)),
    "killed after the step-0 evaluation": ([START], (False, False, False)),
    "killed mid-run": ([START, step(1, 60)], (False, False, False)),
    "stopped by the budget": ([START, step(1, 60), step(2, 120, 0.3)], (True, True, True)),
    "stopped by max_steps": (
        [START, *(step(n, 2 * n) for n in range(1, 40)), step(40, 80, 0.3)],
        (True,) * 3,
    ),
    # the step at the budget written without an evaluation (a hand-written or foreign log): only the grouping
    # study's rule does not ask for it
    "ends at the budget without an evaluation": ([START, step(1, 60), step(2, 120)], (True, False, False)),
    # an evaluation every N steps (eval_every) before the caps: only the scaling study's rule takes it for
    # the end
    "ends with an evaluation before the caps": ([START, step(1, 60, 0.2)], (False, False, True)),
    # a step-0 evaluation written after the run's last step: the grouping study judges the last training row
    "a step-0 evaluation after the last step": ([START, step(1, 120, 0.3), START], (True, False, False)),
    # a last row that holds an evaluation but counts no completions: it sampled none (miniature: not at the
    # budget, and below max_steps), while the grouping study judges the training row before it
    "an evaluation row without a completion count": (
        [START, step(1, 120), {"step": 2, "eval/success_rate": 0.3}],
        (True, False, True),
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_each_studys_rule_decides_each_log_as_it_always_did(tmp_path, name):
    rows, expected = CASES[name]
    log = tmp_path / "metrics.jsonl"
    if rows is not None:
        log.write_text("".join(json.dumps(row) + "\n" for row in rows))
    decided = tuple(cycle.finished(log, **rule) for rule in (GROUPING, MINIATURE, SCALING))
    assert decided == expected


def test_the_caps_are_this_invocations_and_either_one_is_enough(tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text("".join(json.dumps(row) + "\n" for row in [START, step(1, 60), step(2, 120, 0.3)]))
    assert cycle.finished(log, max_steps=2, budget=1000) and cycle.finished(log, max_steps=40, budget=120)
    assert not cycle.finished(log, max_steps=40, budget=200)  # a bigger budget: the run goes on
    assert not cycle.finished(log, max_steps=3) and cycle.finished(log, budget=120)
    assert not cycle.finished(log, 40, 200, final_evaluation=False)


def test_blank_lines_are_not_rows(tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(json.dumps(START) + "\n\n" + json.dumps(step(1, 120, 0.3)) + "\n\n")
    assert cycle.read_metrics(log) == [START, step(1, 120, 0.3)]
    assert cycle.finished(log, **MINIATURE) and cycle.finished(log, **GROUPING)


@pytest.fixture
def trainer(monkeypatch):
    """A stand-in for ATGRPOTrainer whose `train` logs a run that stops at its budget, after one step: the
    folders it trained, in order."""
    import pettingllms.trainers.at_grpo

    trained = []

    class Trainer:
        def __init__(self, args, log):
            self.args = args

        def train(self):
            folder = Path(self.args.output_dir)
            trained.append(folder)
            folder.mkdir(parents=True, exist_ok=True)
            rows = [START, step(1, self.args.max_completions, 0.4)]
            (folder / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
            return {}

    monkeypatch.setattr(pettingllms.trainers.at_grpo, "ATGRPOTrainer", Trainer)
    return trained


def run_argv(folder, budget):
    return ["--output_dir", str(folder), "--max_steps", "5", "--max_completions", str(budget)]


def test_a_run_is_trained_until_it_is_finished_and_then_skipped(trainer, tmp_path):
    folder = tmp_path / "run"
    assert cycle.train(run_argv(folder, 64), wall_time=True) == folder
    assert trainer == [folder] and cycle.training_seconds(folder) >= 0.0
    (folder / cycle.WALL_TIME).write_text("12.5\n")
    assert cycle.train(run_argv(folder, 64), wall_time=True) == folder
    assert trainer == [folder] and cycle.training_seconds(folder) == 12.5  # skipped: its file kept
    cycle.train(run_argv(folder, 128))  # a bigger budget: not finished under this invocation's caps
    assert trainer == [folder, folder] and cycle.training_seconds(folder) == 12.5  # no wall_time asked
    assert cycle.training_seconds(tmp_path) is None


def test_without_caps_a_run_that_ended_is_not_trained_again_whatever_its_budget(trainer, tmp_path):
    folder = tmp_path / "run"
    cycle.train(run_argv(folder, 64), caps=False)
    cycle.train(run_argv(folder, 128), caps=False)
    assert trainer == [folder]


def test_a_run_at_its_cap_without_an_evaluation_is_trained_again_only_where_the_rule_asks_for_one(
    trainer, tmp_path
):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "metrics.jsonl").write_text(json.dumps(START) + "\n" + json.dumps(step(1, 64)) + "\n")
    cycle.train(run_argv(folder, 64), final_evaluation=False)
    assert trainer == []
    cycle.train(run_argv(folder, 64))
    assert trainer == [folder]


@pytest.fixture
def evaluations(monkeypatch):
    """A stand-in for `pettingllms-eval`'s main that writes a report (exit status 0) or fails (`fail`): the
    argv of every call."""
    import pettingllms.eval.cli

    calls = []

    def main(argv):
        calls.append(list(argv))
        if "fail" in argv:
            return 2
        output = Path(argv[argv.index("--output") + 1])
        output.write_text(json.dumps({"results": {"plan-path-v0": {"success_rate": 0.5}}}))
        return 0

    monkeypatch.setattr(pettingllms.eval.cli, "main", main)
    return calls


def eval_argv(output, *more):
    return ["--env", "plan-path-v0", "--policy", "oracle", *more, "--output", str(output), "--no_progress"]


def test_an_evaluation_runs_once_and_is_read_from_its_report_afterwards(evaluations, tmp_path):
    output = tmp_path / "eval" / "run_s0_final.json"  # its folder is made
    argv = eval_argv(output)
    assert cycle.evaluate(argv, output, "plan-path-v0") == {"success_rate": 0.5}
    assert cycle.evaluate(argv, output, "plan-path-v0") == {"success_rate": 0.5}
    assert evaluations == [argv]


def test_a_failed_evaluation_raises_with_its_argv_and_is_run_again_next_time(evaluations, tmp_path):
    output = tmp_path / "run_s0_final.json"
    argv = eval_argv(output, "--label", "fail")
    message = "pettingllms-eval failed for run_s0_final: " + " ".join(argv)
    for _ in range(2):
        with pytest.raises(RuntimeError) as raised:
            cycle.evaluate(argv, output, "plan-path-v0")
        assert str(raised.value) == message
    assert len(evaluations) == 2 and not output.exists()


def test_an_argv_that_writes_its_report_elsewhere_is_refused(evaluations, tmp_path):
    output = tmp_path / "a.json"
    for argv in (eval_argv(tmp_path / "b.json"), eval_argv(output)[:-3], eval_argv(output)[:-2]):
        with pytest.raises(ValueError, match="the argv writes its report to"):
            cycle.evaluate(argv, output, "plan-path-v0")
    assert evaluations == []


def test_a_warm_start_variant_is_built_under_its_own_tag(monkeypatch):
    import pettingllms.warmstart.build

    built = []
    monkeypatch.setattr(
        pettingllms.warmstart.build, "ensure_tiny_model", lambda env_id, **kw: built.append((env_id, kw))
    )
    settings = {"workflow": "mas", "tag": "mini7", "demos_per_role": 3200, "sft_steps": 400}
    cycle.warm_start("plan-path-v0", settings)
    cycle.warm_start("plan-path-v0", settings, (40, 2))
    assert built == [
        ("plan-path-v0", settings),
        ("plan-path-v0", {"workflow": "mas", "tag": "mini7_40d_2s", "demos_per_role": 40, "sft_steps": 2}),
    ]
    assert settings["tag"] == "mini7"  # the study's settings are left as they were


def test_a_row_is_recorded_on_the_ledger_beside_its_table_and_once(tmp_path):
    out = tmp_path / "results" / "table.json"  # its folder is made
    rule = ledger.Rule("cycle-test", ("method",))
    rows = cycle.record(out, rule, {"method": "a", "success_rate": 0.5}, warm_start=None)
    commit = ledger.code_version(
        cycle.REPO
    )  # the table's row names the commit its ledger line was recorded at
    assert rows == [{"method": "a", "success_rate": 0.5, "code_commit": commit}]
    assert json.loads(out.read_text()) == rows
    cycle.record(out, rule, {"method": "a", "success_rate": 0.5}, warm_start=None)  # held as it is
    entries = ledger.read_ledger(out.with_name(ledger.LEDGER_NAME))
    assert len(entries) == 1 and entries[0].study == "cycle-test"
    assert cycle.REPO == Path(__file__).resolve().parents[1]  # the checkout whose code version rows name


def test_a_step_a_resumed_run_trained_again_counts_once(tmp_path):
    rows = [
        {"step": 0, "eval/success_rate": 0.1},  # the step-0 evaluation: no training row
        {"step": 1, "train/completions_total": 128, "train/probe_completions": 16},
        {"step": 2, "train/completions_total": 256, "train/probe_completions": 16},  # killed after this row
        {"step": 2, "train/completions_total": 256, "train/probe_completions": 15},  # resumed from step 1
        {"step": 3, "train/completions_total": 384, "train/probe_completions": 16},
    ]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    steps = cycle.training_steps(path)
    assert sorted(steps) == [1, 2, 3] and steps[2]["train/probe_completions"] == 15
    assert sum(row["train/probe_completions"] for row in steps.values()) == 47


def test_a_studys_warm_start_is_kept_beside_its_table_and_used_from_there(monkeypatch, tmp_path):
    import pettingllms.warmstart.build

    builds = []

    def build(env_id, **settings):  # a warm start in the cache: its weights and manifest
        folder = tmp_path / "cache" / f"tiny-{env_id}-{settings['workflow']}-{settings['tag']}-v2"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "model.safetensors").write_bytes(bytes([len(builds)]))  # a rebuild is not byte-identical
        recipe = {key: value for key, value in settings.items() if key != "tag"}
        manifest = {"settings": pettingllms.warmstart.build.build_settings(env_id, **recipe).to_json()}
        (folder / "warmstart.json").write_text(json.dumps(manifest))
        builds.append(settings["tag"])
        return folder

    monkeypatch.setattr(pettingllms.warmstart.build, "ensure_tiny_model", build)
    settings, results = {"workflow": "mas", "tag": "mini7", "sft_steps": 600}, tmp_path / "results"
    kept = cycle.warm_start("plan-path-v0", settings, keep=results)
    assert kept == results / cycle.WARM_STARTS / "tiny-plan-path-v0-mas-mini7-v2"
    assert (kept / "model.safetensors").read_bytes() == b"\x00" and builds == ["mini7"]
    # a new machine (no cache): the kept copy, not a rebuild
    assert cycle.warm_start("plan-path-v0", settings, keep=results) == kept and builds == ["mini7"]
    assert (kept / "model.safetensors").read_bytes() == b"\x00"
    (kept / "warmstart.json").unlink()  # a copy cut short is no warm start: copied again, whole
    assert cycle.warm_start("plan-path-v0", settings, keep=results) == kept and builds == ["mini7", "mini7"]
    assert sorted(p.name for p in kept.iterdir()) == ["model.safetensors", "warmstart.json"]
    with pytest.warns(UserWarning, match=r"built with other settings: sft_steps=7 \(built: 600\)"):
        assert cycle.warm_start("plan-path-v0", {**settings, "sft_steps": 7}, keep=results) == kept
    smoke = cycle.warm_start("plan-path-v0", settings, (40, 2), keep=results)  # a smoke run's: not kept
    assert smoke.parent == tmp_path / "cache" and len(list((results / cycle.WARM_STARTS).iterdir())) == 1
