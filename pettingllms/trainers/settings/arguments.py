"""`parse`: the command line and YAML of `pettingllms-train` into an `ATGRPOConfig`.

With no `--config` the run is `configs/tiny/plan_path.yaml` (`DEFAULT_CONFIG`, shipped inside the package);
`--config` takes a YAML path or a shipped name (`tiny/sokoban`, `paper/qwen3-1.7b/code`) whose values replace the
field defaults; flags override the YAML, except that a YAML's settings of its env (`ENV_SETTINGS`: its
`env_kwargs` and `tiny_warm_start`) are dropped when `--env_id` names another env and the flag of that setting is
not given too (the default config's 7x7 grids mean nothing to `--env_id sokoban-v0`). A YAML may hold an `env:`
mapping of environment variables (TRL's convention). Every bad input is one `ConfigError` line naming the file, field or flag and what is allowed: a
missing or broken YAML, an unknown or misspelt field or flag (with the closest name), a value of the wrong type.
`--help` lists the AT-GRPO fields first, then the inherited fields AT-GRPO honours; the inherited fields it
refuses (`inherited_fields.REFUSED`) are parsed, so that setting one gets its explanation, but not listed.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import difflib
import os
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from transformers import HfArgumentParser
from trl import GRPOConfig

from pettingllms.core.errors import ConfigError
from pettingllms.trainers.settings.config import ATGRPOConfig
from pettingllms.trainers.settings.inherited_fields import HONOURED, HONOURED_THEMES, REFUSED

ENV_SETTINGS = ("env_kwargs", "tiny_warm_start")
"""A config's fields that belong to its `env_id` (see the module docstring)."""
CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
"""The shipped run configs (`configs/` at the repository root links here)."""
DEFAULT_CONFIG = "tiny/plan_path"
"""The run `pettingllms-train` makes with no arguments."""


def shipped_configs() -> list[str]:
    """The names `--config` accepts besides paths, e.g. 'tiny/plan_path'."""
    return sorted(str(path.relative_to(CONFIG_DIR).with_suffix("")) for path in CONFIG_DIR.rglob("*.yaml"))


def resolve_config(name_or_path: str) -> Path:
    """The YAML file of `--config`: an existing path, or a shipped name; else `ConfigError` listing the names."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = CONFIG_DIR / f"{name_or_path.removesuffix('.yaml')}.yaml"
    if shipped.is_file():
        return shipped
    raise ConfigError(
        f"--config {name_or_path}: no such file, and not a shipped config; shipped: {', '.join(shipped_configs())}"
    )


def load_yaml(path: Path) -> dict[str, Any]:
    """The mapping in YAML file `path`; `ConfigError` when it is unreadable, not YAML, or not a mapping."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"--config {path}: cannot read it ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"--config {path}: not UTF-8 text (byte {error.object[error.start]:#04x} at offset {error.start}); "
            "save the YAML as UTF-8"
        ) from None
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(f"--config {path}: not valid YAML{where}: {problem}") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"--config {path}: must be a mapping of field: value, got {type(loaded).__name__}")
    return loaded


OWN_THEMES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "the environment",
        ("env_id", "env_kwargs", "workflow", "turns", "alpha", "max_turns", "instances_per_step"),
    ),
    (
        "the rollout and its credit",
        (
            "grouping",
            "commit",
            "team_credit",
            "drop_zero_variance_groups",
            "per_agent_advantages",
            "group_baseline",
            "turn_baseline",
            "rollout_schedule",
            "off_policy_steps",
            "max_completions",
        ),
    ),  # fmt: skip
    (
        "policies and models",
        (
            "policy_layout",
            "model_name_or_path",
            "tiny_warm_start",
            "agent_policies",
            "agent_models",
            "lora_r",
            "lora_alpha",
        ),
    ),  # fmt: skip
    (
        "generation",
        (
            "generation_backend",
            "lora_generation",
            "vllm_engine_kwargs",
            "stop_strings",
            "policy_sampling",
            "policy_eval_sampling",
            "enable_thinking",
            "max_generation_rows",
            "plan_prompt_tokens",
        ),
    ),  # fmt: skip
    ("the update", ("micro_batching",)),
    (
        "devices, processes and clusters",
        (
            "policy_devices",
            "env_workers",
            "distributed",
            "ray_address",
            "ray_policy_resources",
            "ray_placement_timeout",
            "ray_recover_s",
        ),
    ),  # fmt: skip
    (
        "evaluation",
        ("eval_every", "eval_episodes", "eval_split", "eval_temperature", "eval_max_completion_length"),
    ),
    ("the run folder", ("dump_rollouts", "resume", "resume_with_changes", "overwrite_output_dir")),
)
"""AT-GRPO's own fields by theme (`--help` groups them so; every field is in one theme, `tests/test_cli.py`)."""


class ConfigParser(HfArgumentParser):
    """`HfArgumentParser` for `ATGRPOConfig` with grouped `--help` and one-line errors (module docstring)."""

    def __init__(self) -> None:
        super().__init__(
            (ATGRPOConfig,),
            prog="pettingllms-train",
            usage="pettingllms-train [--config YAML] [--FIELD VALUE ...]",
            description="AT-GRPO training. With no arguments: the tiny model on plan-path, per role "
            f"(configs/{DEFAULT_CONFIG}.yaml).",
            epilog="--plan [--plan_gpus N --plan_gpu_gib G [--plan_ranks R]]: print the memory plan of this config "
            "on this machine's GPUs (or on N GPUs of G GiB under R torchrun ranks) and exit: status 0 when every "
            "device fits, 1 when any does not, 2 for a bad config or flag (docs/scale.md). "
            f"{len(REFUSED)} further inherited TRL / transformers fields are not used by AT-GRPO and are "
            "refused when set (see pettingllms/trainers/settings/inherited_fields.py for what to use instead).",
        )
        self.add_argument(
            "--config",
            metavar="YAML",
            help=f"A YAML path or a shipped name ({', '.join(shipped_configs())}); flags override it.",
        )

    def _add_dataclass_arguments(self, dtype: type) -> None:
        themes = [(f"AT-GRPO: {theme}", names) for theme, names in OWN_THEMES]
        themes += [
            (f"inherited from TRL / transformers, honoured: {theme}", tuple(f))
            for theme, f in HONOURED_THEMES
        ]
        groups = {}
        for title, names in themes:
            group = self.add_argument_group(title)
            groups.update(dict.fromkeys(names, group))
        hints = typing.get_type_hints(dtype)
        inherited = {field.name for field in dataclasses.fields(GRPOConfig)}
        for field in dataclasses.fields(dtype):
            field = copy.copy(field)
            field.type = hints[field.name]
            if field.name in inherited and field.name in HONOURED:
                # described in AT-GRPO's terms (dtype's own help where it overrides)
                help_text = field.metadata.get("help") if field.name in vars(dtype) else HONOURED[field.name]
                field.metadata = MappingProxyType({**field.metadata, "help": help_text})
            elif field.name in inherited:  # refused: parsed so that setting it is explained, not listed
                field.metadata = MappingProxyType({**field.metadata, "help": argparse.SUPPRESS})
            self._parse_dataclass_field(groups.get(field.name, self), field)

    def error(self, message: str) -> typing.NoReturn:
        """argparse's errors (bad value, missing value) as one `ConfigError` line, without the usage dump."""
        raise ConfigError(message)

    def field_names(self) -> list[str]:
        return [action.dest for action in self._actions if action.dest not in ("help", "config")]

    def closest(self, name: str) -> str:
        """' (did you mean X?)' for the field name closest to `name`, or ''."""
        match = difflib.get_close_matches(name, self.field_names(), n=1, cutoff=0.6)
        return f" (did you mean {match[0]}?)" if match else ""

    def apply_yaml(self, values: dict[str, Any], source: Path) -> None:
        """Make `values` the defaults (flags still override them), after checking every name and type."""
        for key, value in values.items():
            actions = [action for action in self._actions if action.dest == key and action.option_strings]
            if key in ("help", "config") or not actions:
                raise ConfigError(f"--config {source}: unknown field {key!r}{self.closest(key)}")
            for action in actions:
                if not action.option_strings[0].startswith("--no_"):
                    _check_yaml_value(self, action, value, source)
                    action.default = value


def _check_yaml_value(parser: ConfigParser, action: argparse.Action, value: Any, source: Path) -> None:
    """`ConfigError` unless YAML `value` fits `action` (a string goes through the flag's own conversion)."""
    where = f"--config {source}: {action.dest}"
    if value is None:
        return
    if isinstance(value, str):
        try:
            parser._get_value(action, value)
        except argparse.ArgumentError as error:
            raise ConfigError(f"{where}: {error.message}") from None
        return
    expected = {int: (int,), float: (int, float)}.get(action.type)
    if action.nargs in ("+", "*"):
        expected = (list,)
    elif action.type is not None and getattr(action.type, "__name__", "") == "string_to_bool":
        expected = (bool,)
    if expected and (not isinstance(value, expected) or (bool not in expected and isinstance(value, bool))):
        raise ConfigError(
            f"{where}={value!r}: expected {' or '.join(kind.__name__ for kind in expected)}, "
            f"got {type(value).__name__}"
        )
    if (
        action.choices is not None
        and value not in action.choices
        and str(value) not in map(str, action.choices)
    ):
        raise ConfigError(f"{where}={value!r}: allowed values: {[str(choice) for choice in action.choices]}")


def parse(argv: Sequence[str] | None = None) -> ATGRPOConfig:
    """Parse `argv` (default: sys.argv[1:]) into an `ATGRPOConfig` (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = ConfigParser()
    if not {"-h", "--help"} & set(argv):  # --help shows the defaults; a run passes on only what was set
        for action in parser._actions:  # the YAML (below) or a flag: every other field keeps its default
            action.default = argparse.SUPPRESS
    config = DEFAULT_CONFIG
    if "--config" in argv:
        index = argv.index("--config")
        if index + 1 >= len(argv):
            raise ConfigError("--config needs a YAML path or a shipped name")
        config = argv[index + 1]
        del argv[index : index + 2]
    path = resolve_config(config)
    values = load_yaml(path)
    for key, value in dict(values.pop("env", None) or {}).items():
        os.environ[key] = str(value)
    parser.apply_yaml(values, path)
    namespace, unknown = parser.parse_known_args(argv)
    if unknown:
        flag = unknown[0]
        if not flag.startswith("-"):
            raise ConfigError(
                f"unexpected value {flag!r}: a flag takes one value (report_to takes 'tensorboard,wandb')"
            )
        raise ConfigError(f"unknown flag {flag}{parser.closest(flag.lstrip('-').replace('-', '_'))}")
    _drop_settings_of_the_configs_env(namespace, values.get("env_id"), argv)
    return ATGRPOConfig(**vars(namespace))


def _drop_settings_of_the_configs_env(
    namespace: argparse.Namespace, config_env: str | None, argv: list[str]
) -> None:
    """Forget the YAML's `ENV_SETTINGS` when the command line moved the run to another env without giving them."""
    if getattr(namespace, "env_id", config_env) == config_env:
        return
    for name in ENV_SETTINGS:
        given = any(arg == f"--{name}" or arg.startswith(f"--{name}=") for arg in argv)
        if not given and hasattr(namespace, name):
            delattr(namespace, name)
