"""`save_total_limit` (TRL's meaning): only the newest checkpoints stay, and a resume still finds the newest.
A paper run writes ~20-100 GB a policy per checkpoint; keeping every one fills a disk within a run."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import args_for  # noqa: E402

from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.runs.layout import RunLayout  # noqa: E402
from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402
from pettingllms.trainers.outputs.checkpoint import prune  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")


def steps_on_disk(root) -> list[int]:
    return sorted(int(c.folder.name.split("_")[1]) for c in RunLayout(root).step_checkpoints())


def test_only_the_newest_checkpoints_stay_and_the_run_resumes_from_the_newest(tiny_model, tmp_path):
    flags = ("--max_steps", "3", "--save_total_limit", "2")
    ATGRPOTrainer(args_for(tiny_model, tmp_path, *flags), log=lambda _: None).train()
    assert steps_on_disk(tmp_path) == [2, 3]
    assert RunLayout(tmp_path).latest_intact().folder.name == "step_3"
    more = (*flags, "--max_steps", "4", "--resume", "true")
    resumed = ATGRPOTrainer(args_for(tiny_model, tmp_path, *more), log=lambda _: None)
    assert resumed.step == 3
    resumed.train()
    assert steps_on_disk(tmp_path) == [3, 4]


def test_without_a_limit_every_checkpoint_stays(tiny_model, tmp_path):
    ATGRPOTrainer(args_for(tiny_model, tmp_path, "--max_steps", "3"), log=lambda _: None).train()
    assert steps_on_disk(tmp_path) == [1, 2, 3]
    with pytest.raises(ValueError, match="at least the newest"):
        prune(RunLayout(tmp_path), 0)
    assert [c.folder.name for c in prune(RunLayout(tmp_path), 1)] == ["step_2", "step_1"]
    assert steps_on_disk(tmp_path) == [3]


def test_a_limit_below_one_names_the_field(tiny_model, tmp_path):
    with pytest.raises(ConfigError, match="save_total_limit=0 must be >= 1"):
        args_for(tiny_model, tmp_path, "--save_total_limit", "0")
