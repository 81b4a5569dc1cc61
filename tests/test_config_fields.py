"""`ATGRPOConfig` owns only the fields it honours: every inherited TRL field is honoured or refused, `report_to`
feeds TensorBoard and wandb through transformers' callbacks, and `pettingllms-train` reports every bad input in
one line."""

import dataclasses
import json
import typing
from pathlib import Path

import pytest

pytest.importorskip("trl")

from letters import args_for  # noqa: E402
from trl import GRPOConfig  # noqa: E402

from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.trainers.settings.arguments import CONFIG_DIR, parse  # noqa: E402
from pettingllms.trainers.settings.config import ATGRPOConfig  # noqa: E402
from pettingllms.trainers.settings.inherited_fields import (  # noqa: E402
    HONOURED,
    NEWER_TRANSFORMERS_ONLY,
    REFUSED,
    field_default,
)

INHERITED = {field.name: field for field in dataclasses.fields(GRPOConfig)}


def test_every_inherited_field_is_either_honoured_or_refused():
    assert not set(HONOURED) & set(REFUSED)
    classified = set(HONOURED) | set(REFUSED)
    assert set(INHERITED) <= classified  # a TRL or transformers upgrade's new field fails here
    # transformers 5.17 (the [train,vllm] install) has the gradient_checkpointing* names only
    assert classified - set(INHERITED) <= set(NEWER_TRANSFORMERS_ONLY)


def _other_value(field: dataclasses.Field):
    """A value of `field`'s type that differs from its default."""
    default = field_default(field)
    hints = typing.get_type_hints(GRPOConfig)[field.name]
    kinds = set(typing.get_args(hints)) or {hints}
    if isinstance(default, bool) or bool in kinds:
        return not default
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return default + 3
    if dict in kinds or any(typing.get_origin(kind) is dict for kind in kinds):
        return {"x": 1}
    if list in kinds or any(typing.get_origin(kind) is list for kind in kinds):
        return ["x"]
    if int in kinds:
        return 7
    if float in kinds:
        return 0.5
    return "something-else"


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_refused_field_set_away_from_its_default_is_named_with_what_to_use_instead(name, tmp_path):
    value = _other_value(INHERITED[name])
    with pytest.raises(ConfigError) as raised:
        ATGRPOConfig(output_dir=str(tmp_path), **{name: value})
    message = str(raised.value)
    assert message.startswith(f"{name}={value!r} is not used by AT-GRPO: {REFUSED[name]}")
    assert "\n" not in message


def test_refused_fields_at_their_defaults_are_accepted(tmp_path):
    defaults = {name: field_default(INHERITED[name]) for name in REFUSED}
    config = ATGRPOConfig(output_dir=str(tmp_path), **defaults)
    assert config.gradient_accumulation_steps == 1 and config.use_vllm is False


def test_trl_and_transformers_checks_are_config_errors_too(tmp_path):
    with pytest.raises(ConfigError, match="At most one of fp16 and bf16"):
        ATGRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=True, fp16=True)


def test_bf16_defaults_to_false_as_its_help_says_and_none_resolves_as_in_trl(tmp_path):
    field = {f.name: f for f in dataclasses.fields(ATGRPOConfig)}["bf16"]
    assert field.default is False and "unlike TRL's None" in field.metadata["help"]
    assert ATGRPOConfig(output_dir=str(tmp_path), use_cpu=True).bf16 is False
    trl_resolved = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=None).bf16
    assert ATGRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=None).bf16 is trl_resolved is True


@pytest.mark.parametrize(
    ("name", "given"),
    [("scale_rewards", True), ("scale_rewards", False), ("report_to", "none"), ("report_to", ["none"])],
)
def test_aliases_are_held_as_trl_and_transformers_hold_them(name, given, tmp_path):
    ours = getattr(ATGRPOConfig(output_dir=str(tmp_path), use_cpu=True, **{name: given}), name)
    assert ours == getattr(GRPOConfig(output_dir=str(tmp_path), use_cpu=True, **{name: given}), name)
    assert name in HONOURED and ("alias" in HONOURED[name] or "as transformers holds it" in HONOURED[name])


def test_a_gpu_only_config_on_a_machine_without_gpu_is_one_line():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")
    with pytest.raises(ConfigError) as raised:
        parse(["--config", "paper/qwen3-1.7b/sokoban"])
    assert str(raised.value).startswith("bf16 needs a GPU and none is visible")
    assert (
        parse(["--config", "paper/qwen3-1.7b/sokoban", "--bf16", "false", "--use_cpu", "true"]).bf16 is False
    )


# ------------------------------------------------------------------ YAML, flags and the embedded default
def test_the_embedded_default_is_the_tiny_plan_path_yaml():
    default, from_file = parse([]), parse(["--config", str(CONFIG_DIR / "tiny" / "plan_path.yaml")])
    assert config_fields(default) == config_fields(from_file)
    assert default.env_id == "plan-path-v0" and default.model_name_or_path == "tiny"
    assert default.output_dir == "runs/tiny/plan_path_per_role"


def test_the_default_configs_env_settings_stay_with_its_env():
    """The default config trains 7x7 grids with a warm-start recipe; `--env_id` elsewhere starts from the field
    defaults of both unless they are given too, and its own env keeps them."""
    default = parse([])
    assert default.env_kwargs == {"size": 7} and default.tiny_warm_start["tool_programs"] == 0.4
    elsewhere = parse(["--env_id", "sokoban-v0"])
    assert elsewhere.env_kwargs == {} and elsewhere.tiny_warm_start == {}
    assert elsewhere.max_completion_length == default.max_completion_length  # not an env setting: kept
    given = parse(
        ["--env_id", "sokoban-v0", "--env_kwargs", '{"width": 6}', '--tiny_warm_start={"sft_steps": 9}']
    )
    assert given.env_kwargs == {"width": 6} and given.tiny_warm_start == {"sft_steps": 9}
    assert parse(["--env_id", "plan-path-v0"]).env_kwargs == {"size": 7}


def config_fields(config: ATGRPOConfig) -> dict:
    return {field.name: getattr(config, field.name) for field in dataclasses.fields(config)}


def test_one_yaml_per_env_and_scale_with_the_layout_as_a_flag():
    names = sorted(str(path.relative_to(CONFIG_DIR).with_suffix("")) for path in CONFIG_DIR.rglob("*.yaml"))
    envs = ["code", "math", "plan_path", "sokoban", "sudoku"]
    scales = ["paper/qwen3-1.7b", "paper/qwen3-8b", "tiny"]
    assert names == [f"{scale}/{env}" for scale in scales for env in envs]
    for layout in ("shared", "per_role", "lora_per_role"):
        args = parse(["--config", "tiny/sokoban", "--policy_layout", layout])
        assert args.policy_layout == layout and args.output_dir == f"runs/tiny/sokoban_{layout}"
    assert (
        Path(__file__).parent.parent / "configs" / "tiny" / "sokoban.yaml"
    ).is_file()  # the repository's path


@pytest.mark.parametrize("env_id, agent", [("code-v0", "tester"), ("bargain-v0", "buyer")])
def test_the_tiny_model_on_an_env_without_demonstrations_is_refused_before_anything_is_built(env_id, agent):
    """The tiny model's warm start plays solver demonstrations; these envs have none (it failed in the build)."""
    with pytest.raises(
        ConfigError, match=f"model_name_or_path='tiny' on {env_id}: .*--model_name_or_path smollm2"
    ):
        parse(["--env_id", env_id, "--model_name_or_path", "tiny"])
    with pytest.raises(ConfigError, match="solver demonstrations"):  # also when only one agent starts from it
        parse(
            [
                "--env_id",
                env_id,
                "--model_name_or_path",
                "smollm2",
                "--agent_models",
                json.dumps({agent: "tiny"}),
            ]
        )
    assert parse(["--config", "tiny/code"]).model_name_or_path == "smollm2"


def test_the_tiny_model_on_generated_code_problems_is_accepted_and_on_their_datasets_refused_naming_it():
    """code-v0 has demonstrations for its generated problems (reference programs and near misses) only."""
    generated = json.dumps({"dataset": "generated", "difficulty": 2})
    assert (
        parse(["--env_id", "code-v0", "--env_kwargs", generated, "--model_name_or_path", "tiny"]).env_id
        == "code-v0"
    )
    with pytest.raises(
        ConfigError, match="no solver demonstrations for dataset='humaneval' .*dataset='generated'"
    ):
        parse(
            [
                "--env_id",
                "code-v0",
                "--env_kwargs",
                '{"dataset": "humaneval"}',
                "--model_name_or_path",
                "tiny",
            ]
        )


def test_flags_override_the_yaml_and_the_yaml_overrides_the_defaults(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(
        "max_steps: 7\nlearning_rate: 3.0e-4\nenv_id: sokoban-v0\nenv: {PETTINGLLMS_TEST_VAR: on}\n"
    )
    args = parse(["--config", str(path), "--max_steps", "9"])
    assert (args.max_steps, args.learning_rate, args.env_id) == (9, 3e-4, "sokoban-v0")
    assert args.instances_per_step == ATGRPOConfig.instances_per_step  # not from the embedded default


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        (
            "max_steps: 3\nlerning_rate: 1\n",
            r": unknown field 'lerning_rate' \(did you mean learning_rate\?\)$",
        ),
        ("max_steps: [3\n", r": not valid YAML at line 2, column 1: expected ',' or ']'"),
        ("max_steps: three\n", r": max_steps: invalid int value: 'three'$"),
        ("max_steps: 2.5\n", r": max_steps=2.5: expected int, got float$"),
        ("use_cpu: 1\n", r": use_cpu=1: expected bool, got int$"),
        ("- max_steps\n", r": must be a mapping of field: value, got list$"),
    ],
)
def test_a_bad_yaml_is_one_line_naming_the_file(tmp_path, capsys, yaml_text, message):
    from pettingllms.trainers.cli import main

    path = tmp_path / "run.yaml"
    path.write_text(yaml_text)
    assert main(["--config", str(path), "--output_dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"pettingllms-train: error: --config {path}")
    assert __import__("re").search(message, err.strip())
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--config", "tiny/nope"], "--config tiny/nope: no such file, and not a shipped config; shipped: "),
        (["--lerning_rate", "1"], "unknown flag --lerning_rate (did you mean learning_rate?)"),
        (["--learning_rate", "abc"], "argument --learning_rate/--learning-rate: invalid float value: 'abc'"),
        (["--max_steps"], "argument --max_steps/--max-steps: expected one argument"),
        (["--report_to", "tensorboard", "wandb"], "unexpected value 'wandb': a flag takes one value"),
        (["--report_to", "mlflow"], "report_to='mlflow': 'mlflow' is not supported"),
        (["--use_vllm", "true"], "use_vllm=True is not used by AT-GRPO: use generation_backend='vllm'"),
        (["--output_dir", "runs/{nope}"], "output_dir='runs/{nope}': braces must name a field"),
    ],
)
def test_a_bad_flag_is_one_line_without_a_usage_dump(capsys, argv, expected):
    from pettingllms.trainers.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"pettingllms-train: error: {expected}")


def test_help_groups_the_at_grpo_fields_then_the_honoured_ones_by_theme_and_hides_the_refused_ones(capsys):
    from pettingllms.trainers.cli import main
    from pettingllms.trainers.settings.arguments import OWN_THEMES
    from pettingllms.trainers.settings.inherited_fields import HONOURED, HONOURED_THEMES

    inherited = {field.name for field in dataclasses.fields(GRPOConfig)}
    own = [field.name for field in dataclasses.fields(ATGRPOConfig) if field.name not in inherited]
    themed = [name for _, names in OWN_THEMES for name in names]
    assert len(themed) == len(set(themed)) and set(themed) <= set(own)  # every theme's field, once
    # every AT-GRPO field is in a theme, but one that AT-GRPO adds where an older transformers lacks it
    # (activation_checkpointing before 5.25), which its help groups with the honoured fields it becomes
    assert set(own) - set(themed) <= set(HONOURED)
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    titles = [f"\nAT-GRPO: {theme}:\n" for theme, _ in OWN_THEMES]
    titles += [f"\ninherited from TRL / transformers, honoured: {theme}:\n" for theme, _ in HONOURED_THEMES]
    positions = [text.index(title) for title in titles]
    assert positions == sorted(positions)
    for (theme, names), start, end in zip(OWN_THEMES, positions, positions[1:], strict=False):
        assert all(start < text.index(f"--{name} ") < end for name in names), theme
    assert positions[-2] < text.index("--temperature ") < positions[-1] < text.index("--learning_rate ")
    assert "--use_vllm" not in text and "--gradient_accumulation_steps" not in text
    assert f"{len(REFUSED)} further inherited" in text
    assert len(text.splitlines()) < 434  # 430 with group_baseline, ray_recover_s and turns (issues 62, 66)


# ------------------------------------------------------------------ honoured fields, observed
@pytest.mark.usefixtures("letters_env")
def test_report_to_feeds_tensorboard_and_offline_wandb_through_transformers_callbacks(
    tiny_model, tmp_path, monkeypatch
):
    pytest.importorskip("tensorboard")
    wandb = pytest.importorskip("wandb")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from pettingllms.trainers.at_grpo import ATGRPOTrainer

    monkeypatch.setenv("WANDB_MODE", "offline")
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_DIR", "placeholder")
    monkeypatch.delenv("WANDB_DIR")  # the run folder is the default
    run = tmp_path / "run"
    args = args_for(tiny_model, run, "--report_to", "tensorboard,wandb", "--run_name", "letters-test")
    ATGRPOTrainer(args, log=lambda _: None).train()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]

    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    logged = [(event.step, event.value) for event in events.Scalars("eval/success_rate")]
    assert logged == [
        (row["step"], pytest.approx(row["eval/success_rate"])) for row in rows if "eval/success_rate" in row
    ]
    loss = [(event.step, event.value) for event in events.Scalars("train/policy/tool/loss")]
    assert loss == [(row["step"], pytest.approx(row["policy/tool/loss"])) for row in rows[1:]]

    assert wandb.run is not None and wandb.run.name == "letters-test"
    assert wandb.run.summary["eval/success_rate"] == pytest.approx(rows[-1]["eval/success_rate"])
    assert wandb.run.summary["train/global_step"] == rows[-1]["step"]
    wandb.finish()
    assert list((run / "wandb").glob("offline-run-*/run-*.wandb"))


@pytest.mark.usefixtures("letters_env")
def test_save_strategy_no_keeps_only_the_final_checkpoint_and_logging_steps_thins_the_trackers(
    tiny_model, tmp_path
):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from pettingllms.trainers.at_grpo import ATGRPOTrainer

    run = tmp_path / "run"
    flags = (
        "--max_steps",
        "3",
        "--save_strategy",
        "no",
        "--report_to",
        "tensorboard",
        "--logging_steps",
        "2",
    )
    ATGRPOTrainer(args_for(tiny_model, run, *flags), log=lambda _: None).train()
    assert sorted(path.name for path in (run / "checkpoints").iterdir()) == ["step_3"]
    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    # every 2nd step, and every row that holds an evaluation (step 3 holds the final one)
    assert [event.step for event in events.Scalars("train/success_rate")] == [2, 3]
    assert [event.step for event in events.Scalars("eval/success_rate")] == [0, 3]


def test_the_envs_stop_strings_are_found_once_however_often_they_are_asked_for(tmp_path):
    """Finding them builds the env (code-v0 starts its sandbox): every policy of every engine asks."""
    from unittest import mock

    import pettingllms

    args = parse(["--output_dir", str(tmp_path), "--env_id", "sokoban-v0"])
    with mock.patch.object(pettingllms, "make", wraps=pettingllms.make) as make:
        assert args.default_stop_strings == args.default_stop_strings == ["</answer>"]
    assert make.call_count == 1
