"""A run folder belongs to one run; checkpoints are verified on load; a killed run's leftovers are named, not used.

Every test copies one finished 2-step letters run (checkpoints step_1 and step_2) and damages the copy.
"""

import json
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import LETTERS_ENV, args_for  # noqa: E402

from pettingllms.runs.folder import RunFolderError  # noqa: E402
from pettingllms.runs.layout import CheckpointError  # noqa: E402
from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402
from pettingllms.trainers.metrics_log import MetricsLogError  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")


@pytest.fixture(scope="module", autouse=True)
def one_thread(one_torch_thread):
    """Every test of this module computes with one torch thread (restored after the module)."""


@pytest.fixture(scope="module")
def finished_run(tiny_model, letters_env, tmp_path_factory):
    folder = tmp_path_factory.mktemp("finished") / "run"
    ATGRPOTrainer(args_for(tiny_model, folder), log=lambda _: None).train()
    return folder


@pytest.fixture
def run(finished_run, tmp_path):
    """A private copy of the finished run."""
    return shutil.copytree(finished_run, tmp_path / "run")


def start(tiny_model, folder, *flags):
    """A trainer on `folder` with `flags`, and the messages it logged."""
    messages = []
    trainer = ATGRPOTrainer(args_for(tiny_model, folder, *flags), log=messages.append)
    trainer.close()
    return trainer, "\n".join(messages)


# ------------------------------------------------------------------ one run per folder (finding 11)
def test_a_second_run_in_a_folder_in_use_refuses_and_a_dead_runs_lock_is_taken_over(tiny_model, tmp_path):
    folder = tmp_path / "run"
    first = ATGRPOTrainer(args_for(tiny_model, folder), log=lambda _: None)
    with pytest.raises(RunFolderError, match=r"in use by another run: this process .* holds .*run\.lock"):
        ATGRPOTrainer(args_for(tiny_model, folder), log=lambda _: None)
    first.close()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    lock = {"pid": other.pid, "host": __import__("socket").gethostname(), "id": "x"}
    (folder / "run.lock").write_text(json.dumps(lock))
    try:
        with pytest.raises(RunFolderError, match=f"process {other.pid} holds"):
            ATGRPOTrainer(args_for(tiny_model, folder), log=lambda _: None)
    finally:
        other.kill()
        other.wait()
    _, said = start(tiny_model, folder)
    assert f"the run of process {other.pid} that held it is gone" in said
    assert not (folder / "run.lock").exists()  # released by close()


def test_a_fresh_run_in_an_old_runs_folder_refuses_unless_overwrite_or_resume(tiny_model, run):
    with pytest.raises(
        RunFolderError, match=r"holds an earlier run \(checkpoints, metrics.jsonl\).*--resume true"
    ):
        ATGRPOTrainer(args_for(tiny_model, run), log=lambda _: None)
    resumed, _ = start(tiny_model, run, "--resume", "true", "--max_steps", "3")  # a longer run may resume
    assert resumed.step == 2
    fresh, said = start(tiny_model, run, "--overwrite_output_dir", "true")
    assert fresh.step == 0 and "removed the old run's checkpoints, metrics.jsonl" in said
    assert not (run / "checkpoints").exists() and not (run / "metrics.jsonl").exists()


def test_resuming_under_settings_that_change_the_run_names_them(tiny_model, run):
    with pytest.raises(RunFolderError, match=r"learning_rate: 0\.01 -> 0\.5.*--resume_with_changes true"):
        ATGRPOTrainer(
            args_for(tiny_model, run, "--resume", "true", "--learning_rate", "0.5"), log=lambda _: None
        )
    resumed, said = start(
        tiny_model, run, "--resume", "true", "--learning_rate", "0.5", "--resume_with_changes", "true"
    )
    assert resumed.step == 2 and "changed settings" in said and "learning_rate" in said


# ------------------------------------------------------------------ verified checkpoints (finding 12)
def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _empty(folder):
    shutil.rmtree(folder)
    folder.mkdir()


DAMAGE = {
    "safetensors": (lambda step: _truncate(step / "policy_plan" / "model.safetensors"), "model.safetensors"),
    "optimizer": (lambda step: _truncate(step / "optimizer_tool.pt"), "optimizer_tool.pt"),
    "state": (lambda step: (step / "state.json").write_text('{"step": 2, "compl'), "state.json"),
    "empty": (_empty, "manifest.json is missing"),
    "no manifest": (lambda step: (step / "manifest.json").unlink(), "manifest.json is missing"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_corrupt_checkpoint_is_skipped_by_name_and_the_newest_intact_one_used(tiny_model, run, damage):
    spoil, bad_file = DAMAGE[damage]
    spoil(run / "checkpoints" / "step_2")
    resumed, said = start(tiny_model, run, "--resume", "true")
    assert resumed.step == 1
    assert f"skipping checkpoint {run / 'checkpoints' / 'step_2'}: " in said and bad_file in said
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [0, 1]


def test_resume_without_an_intact_checkpoint_says_so(tiny_model, run):
    for step in ("step_1", "step_2"):
        _truncate(run / "checkpoints" / step / "state.json")
    with pytest.raises(
        RunFolderError, match=r"no intact checkpoint in .*step_2.*state\.json.*--overwrite_output_dir"
    ):
        ATGRPOTrainer(args_for(tiny_model, run, "--resume", "true"), log=lambda _: None)


def test_a_half_written_metrics_line_is_dropped_on_resume_and_other_bad_lines_are_named(tiny_model, run):
    metrics = run / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + '{"step": 3, "train/rew')
    resumed, said = start(tiny_model, run, "--resume", "true", "--max_steps", "3")
    assert resumed.step == 2 and "dropped a truncated last line (line 4" in said
    assert [json.loads(line)["step"] for line in metrics.read_text().splitlines()] == [0, 1, 2]
    lines = metrics.read_text().splitlines()
    metrics.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    with pytest.raises(MetricsLogError, match=rf"{metrics}, line 2: not valid JSON"):
        ATGRPOTrainer(args_for(tiny_model, run, "--resume", "true"), log=lambda _: None)


def test_a_checkpoint_killed_while_being_written_is_named_and_removed(tiny_model, run):
    staging = run / "checkpoints" / "step_3.tmp"
    shutil.copytree(run / "checkpoints" / "step_2", staging)
    (staging / "manifest.json").unlink()  # killed before the manifest was written
    resumed, said = start(tiny_model, run, "--resume", "true", "--max_steps", "3")
    assert (
        resumed.step == 2
        and f"{staging}: a checkpoint that was being written when the run was killed" in said
    )
    assert not staging.exists()


def test_evaluation_picks_the_newest_intact_checkpoint(run):
    from pettingllms.eval.policy_specs import load_policies

    _truncate(run / "checkpoints" / "step_2" / "policy_tool" / "model.safetensors")
    loaded = load_policies({"tool": str(run), "plan": str(run)}, LETTERS_ENV)
    assert set(loaded.resolved.values()) == {
        str(run / "checkpoints" / "step_1" / "policy_tool"),
        str(run / "checkpoints" / "step_1" / "policy_plan"),
    }
    step_2 = str(run / "checkpoints" / "step_2")
    with pytest.raises(
        CheckpointError, match=r"step_2 is not intact: .*policy_tool/model\.safetensors has \d+ bytes"
    ):
        load_policies(
            {"tool": step_2, "plan": step_2}, LETTERS_ENV
        )  # a checkpoint named directly is verified too
