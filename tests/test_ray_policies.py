"""One placement group per policy (rollout server + update worker) on a local CPU-only Ray cluster.

Marked `ray` (`.ci/run` installs Ray and runs them). The cluster is started here with 8 logical CPUs, so that two
policies (two bundles of one CPU each) fit on a 2-core machine; the trainer joins it and leaves it running.
"""

from pathlib import Path
from types import SimpleNamespace

import pytest

ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import args_for, metric_rows, run_interrupted  # noqa: E402

from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402
from pettingllms.trainers.policies.ray_actors import RayPolicy, RemoteBackend  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("letters_env")]


@pytest.fixture(scope="module", autouse=True)
def cluster():
    started = not ray.is_initialized()
    if started:
        tests = str(Path(__file__).parent)  # the actors unpickle the letters env from tests/letters.py
        ray.init(
            num_cpus=8,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": tests}},
        )
    yield
    if started:
        ray.shutdown()


def test_each_policy_gets_a_placement_group_with_its_server_and_worker(tiny_model, tmp_path):
    import os

    from ray.util import placement_group_table

    trainer = ATGRPOTrainer(
        args_for(tiny_model, tmp_path / "ray", "--distributed", "ray"), log=lambda _: None
    )
    placed = trainer.policies.placement
    try:
        assert set(placed.groups) == {"tool", "plan"}
        for name, group in placed.groups.items():
            entry = placement_group_table(group)
            assert entry["state"] == "CREATED" and entry["name"] == f"pettingllms-{name}"
            assert list(entry["bundles"].values()) == [{"CPU": 1.0}, {"CPU": 1.0}]
        pids = ray.get([a.pid.remote() for a in [*placed.servers.values(), *placed.workers.values()]])
        assert len(set(pids)) == 4 and os.getpid() not in pids  # four actors, none in the trainer's process
        assert all(isinstance(b, RemoteBackend) for b in trainer.policies.backends.values())
        assert all(isinstance(h, RayPolicy) for h in trainer.policies.handles.values())
        assert trainer.policies.updaters == {}  # the update workers live in the actors
        assert not list((tmp_path / "ray").rglob(".shared-folder-check-*"))  # every marker read and removed
        metrics = trainer.train_step()
        # every policy's worker trained on its own agent's samples only: instances x K each
        assert metrics["policy/tool/samples"] == metrics["policy/plan/samples"] == 2 * 4
    finally:
        trainer.close()
    assert placed.groups == {} and ray.is_initialized()  # its own actors and groups gone; the cluster stays


def test_actors_work_on_their_own_device_whatever_the_driver_sees(tiny_model, tmp_path):
    """The actors receive the driver's pickled config, whose n_gpu is the driver's GPU count (TRL refuses more
    than 1): each actor trains and generates on its bundle's device instead (the CPU here) with n_gpu 0, and the
    update workers write their optimizer states into the checkpoint themselves."""
    from unittest import mock

    from pettingllms.trainers.outputs import checkpoint

    with mock.patch("torch.cuda.device_count", return_value=8):
        args = args_for(tiny_model, tmp_path / "ray", "--distributed", "ray", "--use_cpu", "false")
        assert args.n_gpu == 8
    trainer = ATGRPOTrainer(args, log=lambda _: None)
    placed = trainer.policies.placement
    try:
        for name in ("tool", "plan"):
            assert ray.get(placed.workers[name].placement.remote()) == {"device": "cpu", "n_gpu": 0}
            assert ray.get(placed.servers[name].device.remote()) == "cpu"
        trainer.train_step()
        saved = checkpoint.save(trainer.run, trainer.policies.handles, trainer._loop_state())
        assert saved.optimizer("plan").is_file() and saved.scheduler("tool").is_file()
    finally:
        trainer.close()


def test_a_ray_run_matches_the_local_run_and_resumes_exactly(tiny_model, tmp_path):
    """Same seed: the first step (before any update) is identical to the in-process run; after updates in the
    workers the weights synced to the servers agree with the local run; a resumed Ray run equals an uninterrupted
    one."""
    # Ray gives each actor of one CPU one torch thread; matrix products can round differently with another thread
    # count, so the in-process run computes with one thread too
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        local = ATGRPOTrainer(args_for(tiny_model, tmp_path / "local"), log=lambda _: None)
        local.train()
    finally:
        torch.set_num_threads(threads)
    straight = ATGRPOTrainer(
        args_for(tiny_model, tmp_path / "straight", "--distributed", "ray"), log=lambda _: None
    )
    straight.train()
    for ray_row, local_row in zip(
        metric_rows(tmp_path / "straight")[:2], metric_rows(tmp_path / "local")[:2]
    ):
        # the evaluation at step 0 and step 1 (rollout before any update, then the update): identical
        assert {k: v for k, v in ray_row.items() if not k.startswith("pool/")} == local_row
    final_local, final_ray = metric_rows(tmp_path / "local")[-1], metric_rows(tmp_path / "straight")[-1]
    assert final_ray["train/reward"] == pytest.approx(final_local["train/reward"], abs=1e-6)

    flags = ("--distributed", "ray")
    run_interrupted(tiny_model, tmp_path / "resumed", *flags)
    assert metric_rows(tmp_path / "resumed")[-1] == metric_rows(tmp_path / "straight")[-1]


def test_placement_needs_a_layout_whose_policies_are_separate_models(tmp_path):
    from pettingllms.trainers.settings.arguments import parse

    with pytest.raises(ConfigError, match="lora_per_role"):
        parse(["--output_dir", str(tmp_path), "--distributed", "ray", "--policy_layout", "lora_per_role"])


def test_a_cluster_too_small_for_the_placement_groups_fails_clearly(tiny_model, tmp_path):
    from ray.util import placement_group_table

    from pettingllms.trainers.policies.ray_actors import PlacementError

    before = len(placement_group_table())
    flags = ("--distributed", "ray", "--ray_policy_resources", '{"CPU": 100}', "--ray_placement_timeout", "3")
    with pytest.raises(PlacementError, match="cannot place this run") as refused:
        ATGRPOTrainer(args_for(tiny_model, tmp_path, *flags), log=lambda _: None)
    # refused from the numbers, before any placement group: what is asked, what the node holds, what fits
    assert "ask {'CPU': 402.0}" in str(refused.value) and "hold {CPU: 8}" in str(refused.value)
    assert "--ray_policy_resources '{\"CPU\": 1.5}'" in str(refused.value)  # (8 - 2 env workers) / 4 bundles
    assert len(placement_group_table()) == before and ray.is_initialized()  # nothing placed, cluster left up


def test_a_lost_policy_stops_the_run_by_name_or_is_recovered_as_a_resume_from_its_checkpoint(
    tiny_model, tmp_path, monkeypatch
):
    """The plan policy's worker dies at the start of step 2 (the stand-in for its node leaving). Without recovery
    the run stops with one error naming the policy, its actor and node, the step and checkpoint 1, its actors,
    groups and folder lock released, and `--resume true` finishes it. With recovery the run waits for the cluster
    (here at once), resumes from checkpoint 1 within the run, says so in step 2's metrics, and ends where the
    resumed run ends."""
    from ray.util import placement_group_table

    from pettingllms.pools.ray_cluster import NodeLostError
    from pettingllms.trainers.recovery import train_with_recovery

    original_step, killed = ATGRPOTrainer.train_step, []

    def step(self):  # kills the plan policy's worker once, as step 2 starts
        if self.step == 1 and not killed:
            killed.append(self.policies.placement.nodes["plan"][1])
            ray.kill(self.policies.placement.workers["plan"])
        return original_step(self)

    monkeypatch.setattr(ATGRPOTrainer, "train_step", step)
    output, flags = tmp_path / "lost", ("--distributed", "ray")  # args_for saves every step
    trainer = ATGRPOTrainer(args_for(tiny_model, output, *flags, "--ray_recover_s", "0"), log=lambda _: None)
    placed = trainer.policies.placement
    with pytest.raises(NodeLostError) as lost:
        trainer.train()
    message = str(lost.value)
    assert f"policy 'plan' lost its update worker on node {killed[0]} (ActorDiedError" in message
    checkpoint = output / "checkpoints" / "step_1"
    assert f"the run stopped in step 2, its newest intact checkpoint is {checkpoint}" in message
    assert placed.groups == {} and not (output / "run.lock").exists()
    states = {g["name"]: g["state"] for g in placement_group_table().values()}
    assert all(state == "REMOVED" for name, state in states.items() if name.startswith("pettingllms-"))
    resumed = ATGRPOTrainer(args_for(tiny_model, output, *flags, "--resume", "true"), log=lambda _: None)
    assert resumed.step == 1
    resumed.train()

    killed.clear()
    messages = []
    recovering = args_for(tiny_model, tmp_path / "recovered", *flags, "--ray_recover_s", "60")
    train_with_recovery(recovering, log=messages.append)
    assert killed and any("policy 'plan' lost its update worker" in m and "resuming" in m for m in messages)
    recovered, reference = metric_rows(tmp_path / "recovered"), metric_rows(output)
    assert recovered[-1].pop("recovery/count") == 1 and recovered[-1].pop("recovery/from_step") == 1
    assert [row["step"] for row in recovered] == [row["step"] for row in reference] == [0, 1, 2]
    same = {k: v for k, v in recovered[-1].items() if not k.startswith("pool/")}
    assert same == {k: v for k, v in reference[-1].items() if not k.startswith("pool/")}


def test_the_cli_says_a_lost_policy_in_one_line_with_the_resume_command(monkeypatch, capsys, tmp_path):
    from pettingllms.trainers import cli
    from pettingllms.trainers.at_grpo import ATGRPOTrainer as Trainer
    from pettingllms.trainers.policies import model_source
    from pettingllms.trainers.policies.ray_actors import PolicyLostError

    def lose(self):
        raise PolicyLostError("policy 'plan' lost its update worker on node 127.0.0.3 (ActorDiedError: ...)")

    def start(self, args, **kwargs):
        self.policies = SimpleNamespace(agent_policy={"tool": "tool", "plan": "plan"})

    monkeypatch.setattr(Trainer, "__init__", start)
    monkeypatch.setattr(Trainer, "train", lose)
    monkeypatch.setattr(model_source, "prepare_starting_models", lambda args: None)
    argv = ["--output_dir", str(tmp_path / "run"), "--distributed", "ray", "--overwrite_output_dir", "true"]
    argv += ["--ray_recover_s", "0"]  # no recovery: the run stops with the message
    assert cli.main(argv) == cli.POLICY_LOST
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lost its update worker on node 127.0.0.3" in err[0]
    command = (
        f"pettingllms-train --output_dir {tmp_path / 'run'} --distributed ray --ray_recover_s 0 --resume true"
    )
    assert err[0].endswith(f"resume with: {command}")
    assert "Traceback" not in capsys.readouterr().err
