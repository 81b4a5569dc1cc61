"""The AT-GRPO trainer on CPU with a tiny model: routing, layouts, checkpoints that resume exactly, configs.

The environment here rewards any text by its share of the letter "e", so that even an untrained model's
samples carry signal; the group and commit invariants on the real environments are in test_rollout.py.
"""

import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import LETTERS_ENV, args_for, metric_rows  # noqa: E402

import pettingllms  # noqa: E402
from pettingllms.backends.shared_prefix import uses_activation_checkpointing  # noqa: E402
from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402
from pettingllms.trainers.settings.arguments import parse  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")


@pytest.fixture(scope="module", autouse=True)
def one_thread(one_torch_thread):
    """Every test of this module computes with one torch thread (restored after the module)."""


def parameters(model):
    return {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}


def test_per_role_routes_each_agents_samples_to_its_policy_and_every_parameter_changes(tiny_model, tmp_path):
    trainer = ATGRPOTrainer(args_for(tiny_model, tmp_path), log=lambda _: None)
    assert set(trainer.policies.updaters) == {"tool", "plan"}
    seen = {}
    for name, updater in trainer.policies.updaters.items():
        original = updater.update
        seen[name] = []

        def record(samples, name=name, original=original):
            seen[name].extend(s.agent for s in samples)
            return original(samples)

        updater.update = record
    before = {name: parameters(u.model) for name, u in trainer.policies.updaters.items()}
    metrics = trainer.train_step()
    assert set(seen["tool"]) == {"tool"} and set(seen["plan"]) == {"plan"}
    assert metrics["train/groups_with_signal"] > 0
    for name, updater in trainer.policies.updaters.items():
        after = parameters(updater.model)
        unchanged = [key for key in before[name] if torch.equal(before[name][key], after[key])]
        assert not unchanged, f"policy {name}: parameters that did not change: {unchanged[:5]}"


def test_shared_layout_trains_one_policy_on_every_sample(tiny_model, tmp_path):
    trainer = ATGRPOTrainer(args_for(tiny_model, tmp_path, "--policy_layout", "shared"), log=lambda _: None)
    assert list(trainer.policies.updaters) == ["shared"]
    metrics = trainer.train_step()
    assert metrics["policy/shared/samples"] == 2 * 2 * 4  # instances x agents x K


def test_lora_per_role_changes_only_the_acting_roles_adapter(tiny_model, tmp_path):
    trainer = ATGRPOTrainer(
        args_for(tiny_model, tmp_path, "--policy_layout", "lora_per_role"), log=lambda _: None
    )
    model = trainer.policies.updaters["tool"].model
    snapshot = {name: p.detach().clone() for name, p in model.named_parameters()}
    rollout_samples = trainer.engine.collect([0, 1], {"split": "train"}).samples
    from pettingllms.trainers.advantages import compute_advantages

    compute_advantages(rollout_samples)
    trainer.policies.updaters["tool"].update([s for s in rollout_samples if s.agent == "tool"])
    changed = {name for name, p in model.named_parameters() if not torch.equal(snapshot[name], p.detach())}
    assert changed and all("lora_" in name and ".tool." in name for name in changed)
    # LoRA's B starts at zero, so a first step moves every B of the tool adapter (A follows from the next step)
    assert {name for name in snapshot if "lora_B.tool." in name} <= changed


def test_the_same_seed_gives_the_same_lora_adapters_and_another_seed_others(tiny_model, tmp_path):
    """PEFT initialises adapters from torch's global RNG; the trainer seeds it from the run's seed."""

    def adapters(folder, *flags):
        trainer = ATGRPOTrainer(
            args_for(tiny_model, tmp_path / folder, "--policy_layout", "lora_per_role", *flags),
            log=lambda _: None,
        )
        model = trainer.policies.updaters["tool"].model
        weights = {name: p.detach().clone() for name, p in model.named_parameters() if "lora_A" in name}
        trainer.close()
        return weights

    torch.manual_seed(123)  # the global state must not matter
    first = adapters("a")
    torch.manual_seed(456)
    again, other = adapters("b"), adapters("c", "--seed", "1")
    assert first.keys() == again.keys() and all(torch.equal(first[k], again[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


def test_a_resumed_run_equals_an_uninterrupted_one(tiny_model, tmp_path):
    straight = ATGRPOTrainer(args_for(tiny_model, tmp_path / "straight"), log=lambda _: None)
    straight.train()
    first = ATGRPOTrainer(args_for(tiny_model, tmp_path / "resumed", "--max_steps", "1"), log=lambda _: None)
    first.train()
    resumed = ATGRPOTrainer(
        args_for(tiny_model, tmp_path / "resumed", "--resume", "true"), log=lambda _: None
    )
    assert resumed.step == 1
    resumed.train()
    for name in straight.policies.updaters:
        a, b = (
            parameters(straight.policies.updaters[name].model),
            parameters(resumed.policies.updaters[name].model),
        )
        assert all(torch.equal(a[key], b[key]) for key in a), f"policy {name} differs after resuming"

    assert metric_rows(tmp_path / "straight")[-1] == metric_rows(tmp_path / "resumed")[-1]
    assert [r["step"] for r in metric_rows(tmp_path / "resumed")] == [0, 1, 2]


@pytest.mark.parametrize(
    "flags",
    [
        ("--policy_layout", "shared"),
        ("--policy_layout", "lora_per_role"),
        # with a KL term the resumed run's reference model must be the run's starting weights, not the checkpoint
        ("--beta", "0.5"),
    ],
)
def test_resuming_other_layouts_equals_an_uninterrupted_run(tiny_model, tmp_path, flags):
    straight = ATGRPOTrainer(args_for(tiny_model, tmp_path / "straight", *flags), log=lambda _: None)
    straight.train()
    ATGRPOTrainer(
        args_for(tiny_model, tmp_path / "resumed", *flags, "--max_steps", "1"), log=lambda _: None
    ).train()
    resumed = ATGRPOTrainer(
        args_for(tiny_model, tmp_path / "resumed", *flags, "--resume", "true"), log=lambda _: None
    )
    resumed.train()
    a = dict(next(iter(straight.policies.updaters.values())).model.named_parameters())
    b = dict(next(iter(resumed.policies.updaters.values())).model.named_parameters())
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_activation_checkpointing_is_off_unless_asked_for(tiny_model, tmp_path):
    default = ATGRPOTrainer(args_for(tiny_model, tmp_path / "default"), log=lambda _: None)
    assert not any(uses_activation_checkpointing(u.model) for u in default.policies.updaters.values())
    asked = ATGRPOTrainer(
        args_for(tiny_model, tmp_path / "asked", "--activation_checkpointing", "true"), log=lambda _: None
    )
    assert all(uses_activation_checkpointing(u.model) for u in asked.policies.updaters.values())


def test_run_outputs_metrics_curve_checkpoints_and_rollout_dumps(tiny_model, tmp_path):
    ATGRPOTrainer(args_for(tiny_model, tmp_path, "--dump_rollouts", "true"), log=lambda _: None).train()
    metrics = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {
        "train/reward",
        "train/success_rate",
        "eval/success_rate",
        "timing/rollout_s",
        "timing/env_s",
        "timing/update_s",
        "timing/sync_s",
        "policy/tool/loss",
        "train/reward/plan",
    } <= set().union(*metrics)
    # team credit: each of the 2 x K tool candidates of a step had its turn completed by one greedy plan answer
    assert [row["train/probe_completions"] for row in metrics if "train/reward" in row] == [2 * 4, 2 * 4]
    assert (tmp_path / "learning_curve.png").stat().st_size > 1000
    assert (tmp_path / "checkpoints" / "step_2" / "policy_plan" / "model.safetensors").exists()
    row = json.loads((tmp_path / "rollouts" / "step_1.jsonl").read_text().splitlines()[0])
    assert (
        set(row)
        == {
            "step",
            "group_id",
            "instance",
            "episode",  # the episode's index in the rollout (trajectory grouping), else null
            "turn",
            "agent",
            "policy",
            "prompt",
            "completion",
            "reward",
            "reward_team",
            "reward_local",
            "advantage",
            "error",  # why the completion could not be used (fully or partly), else null
            "parse_error",  # nothing in it was usable
            "program",  # what a tool agent's program did, where the env reports it (the letters env does not: null)
            "committed",  # the candidate the episode went on with
            "episode_success",  # whether that episode solved its instance
        }
    )


@pytest.mark.parametrize("turns", ["aec", "joint"])
def test_joint_turns_train_and_evaluate_with_each_agent_observing_the_turn_as_it_began(
    turns, tiny_model, tmp_path
):
    flags = ("--env_id", "plan-path-v0", "--turns", turns, "--max_steps", "1", "--dump_rollouts", "true")
    trainer = ATGRPOTrainer(args_for(tiny_model, tmp_path, *flags), log=lambda _: None)
    assert isinstance(trainer.env_fn(), pettingllms.JointTurns) == (turns == "joint")
    trainer.train()
    rows = [json.loads(line) for line in (tmp_path / "rollouts" / "step_1.jsonl").read_text().splitlines()]
    plan = [row["prompt"] for row in rows if row["agent"] == "plan"]
    shown = ["The tool agent's proposal this turn" in prompt for prompt in plan]
    # in the AEC order every plan prompt shows the tool's committed proposal; with joint turns none does
    assert plan and (all(shown) if turns == "aec" else not any(shown))
    assert "eval/success_rate" in metric_rows(tmp_path)[-1]  # its evaluation played the same turns


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--grouping", "episode"], "grouping"),
        (["--policy_layout", "mixed"], "policy_layout"),
        (["--generation_backend", "sglang"], "generation_backend"),
        (["--env_id", "chess-v0"], "env_id"),
        (["--num_generations", "1"], "num_generations"),
        (["--env_kwargs", "{size: 4"], "env_kwargs"),
        (["--policy_layout", "shared", "--agent_models", '{"tool": "x"}'], "agent_models"),
        (["--scale_rewards", "policy"], "scale_rewards"),
        (["--team_credit", "episode"], "team_credit"),
        (["--turns", "parallel"], "turns='parallel' is not supported; allowed values: \\['aec', 'joint'\\]"),
        (["--temperature", "0"], "temperature"),
        (["--policy_sampling", '{"tool": {"temperature": 0.0}}'], "policy_sampling\\['tool'\\].temperature"),
    ],
)
def test_bad_configs_name_the_field(flags, field, tmp_path):
    with pytest.raises(ConfigError, match=field):
        parse(["--output_dir", str(tmp_path), *flags])


def test_the_vllm_backend_without_vllm_names_the_extra(tiny_model, tmp_path):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here (tests/test_vllm.py covers the backend)")
    with pytest.raises(ImportError, match=r"pettingllms\[vllm\]"):
        ATGRPOTrainer(args_for(tiny_model, tmp_path, "--generation_backend", "vllm"), log=lambda _: None)


@pytest.mark.parametrize(
    "path", sorted(str(p) for p in (Path(__file__).parent.parent / "configs").rglob("*.yaml"))
)
def test_every_shipped_config_parses(path):
    overrides = ["--bf16", "false", "--use_cpu", "true", "--report_to", "none"] if "/paper/" in path else []
    args = parse(["--config", path, *overrides])
    assert args.env_id in pettingllms.registry and args.max_steps >= 1


def test_the_command_reports_a_bad_config_in_one_line(capsys):
    from pettingllms.trainers.cli import main

    assert main(["--grouping", "instance"]) == 2
    assert capsys.readouterr().err.strip() == (
        "pettingllms-train: error: grouping='instance' is not supported; allowed values: ['agent_turn', 'agent', 'turn', 'trajectory', 'anchor_state', 'trajectory_turn']"
    )


def test_group_invariants_hold_on_a_rollout_of_the_tiny_model(tiny_model):
    """K samples per (instance, turn, agent) group with one prompt, from a real model on a real environment."""
    import functools
    from collections import defaultdict

    from pettingllms.backends import SamplingConfig
    from pettingllms.backends.hf import HFPolicy
    from pettingllms.rollout.engine import RolloutEngine

    policy = HFPolicy.from_pretrained(tiny_model, seed=0)
    engine = RolloutEngine(
        functools.partial(pettingllms.make, "plan-path-v0", max_turns=2),
        {"shared": policy},
        {"tool": "shared", "plan": "shared"},
        {"shared": SamplingConfig(max_new_tokens=6)},
        num_generations=3,
    )
    rollout = engine.collect([0, 1])
    groups = defaultdict(list)
    for sample in rollout.samples:
        groups[sample.group_id].append(sample)
    assert len(groups) == 2 * 2 * 2  # instances x turns x agents (nothing solves it)
    for members in groups.values():
        assert (
            len(members) == 3
            and len({m.prompt for m in members}) == 1
            and sum(m.committed for m in members) == 1
        )
        assert all(m.generation.completion_ids and m.generation.prompt_ids for m in members)
        assert len({m.generation.prompt_ids for m in members}) == 1


@pytest.mark.parametrize(
    ("num_agents", "layout", "agent_policies", "policies"),
    [
        (1, "per_role", '{"tool_*": "proposer", "aggregator_0": "aggregator"}', {"aggregator"}),
        (3, "per_role", "{}", {"tool_0", "tool_1", "aggregator_0"}),
        (
            3,
            "lora_per_role",
            '{"tool_*": "proposer", "aggregator_0": "aggregator"}',
            {"proposer", "aggregator"},
        ),
        (7, "per_role", '{"tool_*": "proposer", "aggregator_0": "aggregator"}', {"proposer", "aggregator"}),
        (7, "shared", "{}", {"shared"}),
    ],
)
def test_ensembles_of_any_size_train_end_to_end(
    tiny_model, tmp_path, num_agents, layout, agent_policies, policies
):
    extra = [
        "--env_id",
        "plan-path-v0",
        "--workflow",
        "ensemble",
        "--env_kwargs",
        json.dumps({"num_agents": num_agents}),
    ]
    extra += ["--policy_layout", layout, "--agent_policies", agent_policies, "--max_turns", "1"]
    extra += [
        "--instances_per_step",
        "1",
        "--num_generations",
        "2",
        "--max_steps",
        "1",
        "--dump_rollouts",
        "true",
    ]
    trainer = ATGRPOTrainer(args_for(tiny_model, tmp_path, *extra), log=lambda _: None)
    assert set(trainer.policies.updaters) == policies
    routed = {name: [] for name in policies}
    for name, updater in trainer.policies.updaters.items():
        original = updater.update

        def record(samples, name=name, original=original):
            routed[name].extend(samples)
            return original(samples)

        updater.update = record
    summary = trainer.train()
    assert "eval/success_rate_after" in summary
    rows = [json.loads(line) for line in (tmp_path / "rollouts" / "step_1.jsonl").read_text().splitlines()]
    agents = pettingllms.make("plan-path-v0", workflow="ensemble", num_agents=num_agents).possible_agents
    assert {row["agent"] for row in rows} == set(agents)
    groups = {}
    for row in rows:
        groups.setdefault(row["group_id"], []).append(row)
    assert all(len(members) == 2 and len({m["prompt"] for m in members}) == 1 for members in groups.values())
    assert {row["group_id"] for row in rows} == {f"0/0/{agent}" for agent in agents}
    for name, samples in routed.items():
        assert samples, f"policy {name} got no samples"
        assert {s.policy for s in samples} == {name}
        expected = {a for a in agents if trainer.policies.agent_policy[a] == name}
        assert {s.agent for s in samples} == expected


def test_agent_policies_must_cover_every_agent(tiny_model, tmp_path):
    extra = ["--env_id", "plan-path-v0", "--workflow", "ensemble", "--env_kwargs", '{"num_agents": 3}']
    extra += ["--agent_policies", '{"tool_*": "proposer"}']
    with pytest.raises(ConfigError, match="maps no policy to agents \\['aggregator_0'\\]"):
        ATGRPOTrainer(args_for(tiny_model, tmp_path, *extra), log=lambda _: None)
    with pytest.raises(ConfigError, match="agent_policies needs policy_layout"):
        args_for(tiny_model, tmp_path, "--policy_layout", "shared", "--agent_policies", '{"plan": "p"}')


def test_env_workers_step_candidates_in_a_pool_with_the_same_results(tiny_model, tmp_path):
    serial = ATGRPOTrainer(args_for(tiny_model, tmp_path / "serial", "--max_steps", "1"), log=lambda _: None)
    pooled = ATGRPOTrainer(
        args_for(tiny_model, tmp_path / "pooled", "--max_steps", "1", "--env_workers", "2"),
        log=lambda _: None,
    )
    first, second = serial.train_step(), pooled.train_step()
    assert pooled.pool is not None and pooled.pool.size == 2 and second["pool/restarts"] == 0
    assert first["train/reward"] == second["train/reward"] and first["train/groups"] == second["train/groups"]
    pooled.pool.close()
    with pytest.raises(ConfigError, match="env_workers=-1 must be >= 0"):
        args_for(tiny_model, tmp_path, "--env_workers", "-1")


def test_a_sample_budget_ends_the_run_after_the_step_that_reaches_it(tiny_model, tmp_path):
    """2 instances x 2 agents x K=4 = 16 completions per step: a budget of 20 ends the run after step 2."""
    args = args_for(tiny_model, tmp_path, "--max_steps", "10", "--max_completions", "20")
    ATGRPOTrainer(args, log=lambda _: None).train()
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert [r["train/completions_total"] for r in rows[1:]] == [16, 32] and "eval/success_rate" in rows[-1]
    resumed = ATGRPOTrainer(args_for(tiny_model, tmp_path, "--max_steps", "10", "--max_completions", "20",
                                     "--resume", "true"), log=lambda _: None)  # fmt: skip
    assert resumed.step == 2 and resumed.completions == 32 and resumed.finished


def test_the_trainers_evaluation_is_what_pettingllms_eval_reports_for_the_same_weights(tiny_model, tmp_path):
    from letters import LETTERS_ENV

    from pettingllms.eval.cli import main as eval_main

    run = tmp_path / "run"
    flags = ("--max_steps", "1", "--eval_episodes", "5", "--eval_every", "0", "--temperature", "1.3")
    trainer = ATGRPOTrainer(args_for(tiny_model, run, *flags), log=lambda _: None)
    trainer.train()
    generator = trainer.policies.backends["tool"].generator.get_state()
    ours = trainer.evaluate()
    # evaluating leaves the training generators as they were
    assert torch.equal(trainer.policies.backends["tool"].generator.get_state(), generator)
    output = tmp_path / "eval.json"
    argv = [
        "--env",
        LETTERS_ENV,
        "--policy",
        str(run),
        "--output",
        str(output),
        "--no_progress",
    ]  # no --episodes: the run's own eval_episodes (5)
    assert eval_main(argv) == 0
    rows = [json.loads(line) for line in (tmp_path / "eval.json.episodes.jsonl").read_text().splitlines()]
    assert [row["key"] for row in rows] == [
        f"seed/{i}" for i in range(5)
    ]  # the suite: eval split, seeds 0..4
    for agent in ("tool", "plan"):
        steps = sum(row["steps"][agent] for row in rows)
        assert ours[f"eval/reward/{agent}"] == pytest.approx(
            sum(row["returns"][agent] for row in rows) / steps
        )
    report = json.loads(output.read_text())["results"][LETTERS_ENV]
    assert ours["eval/success_rate"] == report["success_rate"]


def test_periodic_evaluations_can_use_the_validation_split(tiny_model, tmp_path, monkeypatch):
    from pettingllms.trainers import at_grpo

    splits = []
    real = at_grpo.build_suite

    def recording(*args, **kwargs):
        suite = real(*args, **kwargs)
        splits.append(suite.split)
        return suite

    monkeypatch.setattr(at_grpo, "build_suite", recording)
    flags = ("--max_steps", "1", "--eval_episodes", "2", "--eval_every", "0", "--eval_split", "val")
    ATGRPOTrainer(args_for(tiny_model, tmp_path, *flags), log=lambda _: None).train()
    assert splits and set(splits) == {"val"}
    with pytest.raises(
        ConfigError, match="eval_split='test' is not supported; allowed values: \\['val', 'eval'\\]"
    ):
        args_for(tiny_model, tmp_path, "--eval_split", "test")


def test_training_seeds_never_meet_the_warm_starts_demonstration_seeds():
    from pettingllms.trainers.at_grpo import TRAIN_SEED_BASE, training_seeds
    from pettingllms.warmstart.build import WarmStartSettings

    default = parse([])  # the embedded default run, on its recipe's warm start
    # demonstration episodes: seeds 0 .. episodes - 1, or, until each role has demos_per_role, at most that many
    # (every episode demonstrates each role at least once)
    played = WarmStartSettings(**default.tiny_warm_start).episodes
    demos = set(range(max(played, default.tiny_warm_start.get("demos_per_role", 0))))
    seen = [seed for step in range(default.max_steps) for seed in training_seeds(default, step)]
    assert len(seen) == len(set(seen)) == default.max_steps * default.instances_per_step  # no instance twice
    assert min(seen) >= TRAIN_SEED_BASE and not demos & set(seen)
    other = parse(["--seed", "3"])
    assert not set(training_seeds(other, 0)) & set(seen)  # another run seed, other instances


def test_evaluations_say_what_they_play_and_what_they_found(tiny_model, tmp_path):
    messages = []
    trainer = ATGRPOTrainer(args_for(tiny_model, tmp_path), log=messages.append)
    metrics = trainer.evaluate()
    trainer.close()
    assert messages[-2] == f"step 0: evaluating on 2 eval episodes of {LETTERS_ENV}"
    assert messages[-1].startswith(f"step 0: success {metrics['eval/success_rate']:.3f} (")


def test_an_evaluation_shows_its_progress_unless_tqdm_is_disabled(tiny_model, tmp_path, capfd):
    for flags, shown in (((), True), (("--disable_tqdm", "true"), False)):
        trainer = ATGRPOTrainer(args_for(tiny_model, tmp_path / str(shown), *flags), log=lambda _: None)
        trainer.evaluate()
        trainer.close()
        err = capfd.readouterr().err
        assert ("evaluation, step 0" in err and "2/2" in err) is shown


@pytest.mark.parametrize(
    "flags",
    [
        ("--grouping", "trajectory_turn", "--turn_baseline", "summed"),
        ("--grouping", "trajectory_turn", "--drop_zero_variance_groups", "true"),
        (
            "--grouping",
            "anchor_state",
            "--per_agent_advantages",
            "true",
            "--drop_zero_variance_groups",
            "true",
        ),
        ("--grouping", "turn", "--per_agent_advantages", "true", "--scale_rewards", "batch"),
    ],
)
def test_the_credit_assignment_options_train_a_step(tiny_model, tmp_path, flags):
    trainer = ATGRPOTrainer(args_for(tiny_model, tmp_path, "--max_steps", "1", *flags), log=lambda _: None)
    trainer.train()
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    trained = [row for row in rows if "train/groups" in row]
    assert trainer.step == 1 and trained and trained[-1]["train/groups"] > 0
    assert (
        trained[-1]["train/groups_with_signal"] > 0
    )  # the letters env's rewards vary: every option sees signal
