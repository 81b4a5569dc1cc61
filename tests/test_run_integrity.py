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
from pettingllms.trainers.outputs.metrics_log import MetricsLogError  # noqa: E402

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


def _rewrite(checkpoint, change_config=None, entries=None):
    """Change a checkpoint as someone who also rewrites its manifest would (the manifest is no signature)."""
    from pettingllms.runs import manifest

    if change_config is not None:
        config = json.loads((checkpoint / "config.json").read_text())
        (checkpoint / "config.json").write_text(json.dumps(change_config(config)))
    manifest.write(checkpoint)
    if entries is not None:
        data = json.loads((checkpoint / "manifest.json").read_text())
        data["files"] = entries(data["files"])
        (checkpoint / "manifest.json").write_text(json.dumps(data))


def test_a_run_folder_cannot_steer_evaluation_outside_itself(run, tmp_path):
    from pettingllms.core.errors import ConfigError
    from pettingllms.eval.policy_specs import load_policies

    step_2 = run / "checkpoints" / "step_2"
    both = {"tool": str(step_2), "plan": str(step_2)}
    assert json.loads((step_2 / "config.json").read_text())["env_id"] == LETTERS_ENV  # kept, in the manifest
    hostname = {"sha256": "0" * 64, "bytes": 1}
    for entries, said in [
        (lambda files: {"/etc/hostname": hostname}, "names '/etc/hostname', not a path inside the folder"),
        (
            lambda files: {**files, "../../config.json": hostname},
            "names '../../config.json', not a path inside",
        ),
        (lambda files: {"state.json": files["state.json"]}, r"step_2/\S+ is not in the manifest"),
    ]:
        _rewrite(step_2, entries=entries)
        with pytest.raises(CheckpointError, match=said):
            load_policies(both, LETTERS_ENV)
    _rewrite(step_2, lambda config: {**config, "agent_policies": {"*": "../../../elsewhere"}})
    with pytest.raises(ConfigError, match=r"policy names \['../../../elsewhere'\] must match"):
        load_policies(both, LETTERS_ENV)
    lora = {"policy_layout": "lora_per_role", "model_name_or_path": str(run)}
    (step_2 / "peft" / "tool").mkdir(parents=True)
    (step_2 / "peft" / "tool" / "adapter_config.json").write_text("{}")
    _rewrite(step_2, lambda config: {**config, "agent_policies": None, **lora})
    with pytest.raises(ConfigError, match=r"names '.*run' as its base model_name_or_path, which is a run"):
        load_policies(both, LETTERS_ENV)  # it recursed before
    shutil.rmtree(step_2 / "peft")
    _rewrite(step_2, lambda config: {**config, "policy_layout": "per_role", "model_name_or_path": "tiny"})
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "agent_policies": {"*": "../../x"}}))
    assert load_policies(both, LETTERS_ENV).resolved  # the run's config.json is not what a checkpoint reads


def test_links_in_or_as_checkpoints_are_refused(run, tmp_path):
    from pettingllms.eval.policy_specs import load_policies

    outside = shutil.copytree(run / "checkpoints" / "step_2", tmp_path / "elsewhere")
    (run / "checkpoints" / "step_9").symlink_to(outside, target_is_directory=True)
    plan = run / "checkpoints" / "step_2" / "policy_plan"
    shutil.move(plan, tmp_path / "plan_outside")
    plan.symlink_to(tmp_path / "plan_outside", target_is_directory=True)
    said = []
    from pettingllms.runs.layout import open_run

    _, found = open_run(run, said.append)
    assert found.folder == run / "checkpoints" / "step_1"
    assert said == [
        f"skipping checkpoint {run / 'checkpoints' / 'step_9'}: {run / 'checkpoints' / 'step_9'} is a link (a "
        "checkpoint must be a folder of its own)",
        f"skipping checkpoint {run / 'checkpoints' / 'step_2'}: {plan} is a link (a checkpoint holds its own files)",
    ]
    assert "step_1" in next(iter(load_policies({"tool": str(run), "plan": str(run)}, LETTERS_ENV).resolved))
