"""`ATGRPOConfig`: TRL's `GRPOConfig` plus the multi-agent fields of AT-GRPO.

From TRL (unchanged meaning): `num_generations` is K; `learning_rate`, `lr_scheduler_type`, `loss_type`,
`epsilon`/`epsilon_high` (clip), `beta` (KL; a resumed run keeps the reference model of its start),
`scale_rewards` ("group", "batch": one std for the step's whole batch, "none"), `temperature`/`top_p`/`top_k`/
`max_completion_length` (training sampling), `per_device_train_batch_size` (the update's micro-batch),
`max_steps`, `save_steps`, `seed`, `output_dir`, `report_to`, `max_grad_norm`, `activation_checkpointing`
(off by default here, unlike TRL's GRPO). `--config run.yaml` replaces
defaults and command-line flags override the YAML (TRL's `TrlParser`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from trl import GRPOConfig

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.rollout.engine import TEAM_CREDITS, parse_commit
from pettingllms.rollout.grouping import GROUPINGS, TREE_GROUPINGS
from pettingllms.trainers.advantages import SCALE_REWARDS

POLICY_LAYOUTS = ("shared", "per_role", "lora_per_role")
GENERATION_BACKENDS = ("hf", "vllm")


@dataclasses.dataclass
class ATGRPOConfig(GRPOConfig):
    """Configuration of an AT-GRPO run (see the module docstring for the fields inherited from TRL)."""

    env_id: str = dataclasses.field(default="plan-path-v0", metadata={"help": "Registered environment id."})
    env_kwargs: dict[str, Any] | str | None = dataclasses.field(
        default_factory=dict, metadata={"help": "Keyword arguments of pettingllms.make (size, dataset, ...)."}
    )
    workflow: str = dataclasses.field(
        default="mas", metadata={"help": "'mas' (the team) or 'single' (baseline)."}
    )
    alpha: float = dataclasses.field(
        default=1.0, metadata={"help": "Team-reward weight: alpha * team + local."}
    )
    max_turns: int | None = dataclasses.field(
        default=None, metadata={"help": "Turns per episode (env default)."}
    )
    grouping: str = dataclasses.field(
        default="agent_turn",
        metadata={
            "help": "'agent_turn' (AT-GRPO), 'trajectory' (GRPO baseline), or the ablations 'agent' / 'turn' "
            "(groups keyed by one of the two only)."
        },
    )
    commit: str = dataclasses.field(
        default="greedy",
        metadata={
            "help": "Candidate committed each step: 'greedy' (best), 'random', or per-role pairs such as "
            "'tool=random' (that role random, the others greedy)."
        },
    )
    team_credit: str = dataclasses.field(
        default="turn",
        metadata={
            "help": "'turn': a candidate's team reward is that of its turn, completed greedily by the later agents "
            "of the turn (the tool agent is credited with the outcome its proposal leads to); 'step' (ablation): "
            "its own step's only."
        },
    )
    activation_checkpointing: bool | None = dataclasses.field(
        default=None,
        metadata={
            "help": "Recompute activations in the backward pass to save memory, at the cost of a second forward. "
            "Off by default (TRL's GRPO turns it on): the models trained on CPU here gain nothing from it; turn "
            "it on where memory is the limit. gradient_checkpointing is its deprecated alias."
        },
    )
    gradient_checkpointing: bool | None = dataclasses.field(
        default=None, metadata={"help": "Deprecated alias of activation_checkpointing (transformers 5)."}
    )
    instances_per_step: int = dataclasses.field(default=8, metadata={"help": "Training instances per step."})
    env_workers: int = dataclasses.field(
        default=0,
        metadata={"help": "Worker processes that step the candidates' envs (0: in the trainer's process)."},
    )
    distributed: str = dataclasses.field(
        default="none",
        metadata={
            "help": "'none' (env workers are local processes) or 'ray' (env workers are Ray actors, on a "
            "cluster joined at ray_address or a local one)."
        },
    )
    ray_address: str | None = dataclasses.field(
        default=None,
        metadata={"help": "Ray cluster to join with distributed='ray' (None: start a local one)."},
    )
    ray_policy_resources: dict[str, float] | str | None = dataclasses.field(
        default_factory=lambda: {"CPU": 1},
        metadata={
            "help": "With distributed='ray': the resources of each of a policy's two placement-group bundles "
            "(rollout server, update worker), e.g. {GPU: 1} or {CPU: 4}."
        },
    )
    ray_placement_timeout: float = dataclasses.field(
        default=300.0,
        metadata={
            "help": "Seconds to wait for a policy's placement group before failing (cluster too small)."
        },
    )
    drop_zero_variance_groups: bool = dataclasses.field(
        default=False, metadata={"help": "Drop groups whose rewards are all equal (DAPO dynamic sampling)."}
    )
    policy_layout: str = dataclasses.field(
        default="per_role",
        metadata={
            "help": "'shared' (one model), 'per_role' (one model per agent), 'lora_per_role' (adapters)."
        },
    )
    model_name_or_path: str = dataclasses.field(
        default="tiny",
        metadata={"help": "'tiny' (built-in, warm-started), a Hugging Face id, or a local path."},
    )
    agent_policies: dict[str, str] | str | None = dataclasses.field(
        default_factory=dict,
        metadata={
            "help": "Which policy serves each agent for 'per_role' / 'lora_per_role': agent name or fnmatch "
            "pattern -> policy name, first match wins, e.g. {'tool_*': proposer, aggregator_0: aggregator}. "
            "Default: one policy per agent, named after it."
        },
    )
    agent_models: dict[str, str] | str | None = dataclasses.field(
        default_factory=dict,
        metadata={"help": "Per-policy model overrides for 'per_role' (policy name -> id or path)."},
    )
    generation_backend: str = dataclasses.field(
        default="hf",
        metadata={
            "help": "'hf' (in-process transformers sampling) or 'vllm' (one vLLM engine per policy, weights "
            "synced after every update; needs the 'vllm' extra)."
        },
    )
    vllm_engine_kwargs: dict[str, Any] | str | None = dataclasses.field(
        default_factory=dict,
        metadata={
            "help": "More vllm.LLM arguments, e.g. {gpu_memory_utilization: 0.3, max_model_len: 2048}."
        },
    )
    lora_r: int = dataclasses.field(default=8, metadata={"help": "LoRA rank for 'lora_per_role'."})
    lora_alpha: int = dataclasses.field(default=16, metadata={"help": "LoRA alpha for 'lora_per_role'."})
    stop_strings: list[str] | None = dataclasses.field(
        default=None, metadata={"help": "Generation stop strings (default: '</answer>' for the puzzles)."}
    )
    policy_sampling: dict[str, dict[str, Any]] | str | None = dataclasses.field(
        default_factory=dict,
        metadata={
            "help": "Per-policy training overrides of temperature/top_p/top_k/max_new_tokens/stop, e.g. "
            "{tool: {temperature: 1.2}} (policies are named after their agent, or 'shared')."
        },
    )
    policy_eval_sampling: dict[str, dict[str, Any]] | str | None = dataclasses.field(
        default_factory=dict,
        metadata={"help": "Per-policy evaluation overrides, same keys as policy_sampling."},
    )
    eval_temperature: float = dataclasses.field(
        default=0.0, metadata={"help": "Evaluation temperature (0: greedy)."}
    )
    eval_every: int = dataclasses.field(
        default=10, metadata={"help": "Evaluate every N steps (0: only at the ends)."}
    )
    eval_episodes: int = dataclasses.field(default=100, metadata={"help": "Episodes per evaluation."})
    eval_split: str = dataclasses.field(
        default="eval",
        metadata={
            "help": "Split of the periodic evaluations: 'eval' (pettingllms-eval's suite) or 'val' (the "
            "validation split, disjoint from it: for tuning a recipe without looking at the reported suite)."
        },
    )
    dump_rollouts: bool = dataclasses.field(
        default=False, metadata={"help": "Write every sample to rollouts/step_N.jsonl."}
    )
    resume: bool = dataclasses.field(
        default=False,
        metadata={
            "help": "Resume from the newest intact checkpoint in output_dir (a folder without checkpoints starts at "
            "step 0). Refused when settings that change the run differ from the saved ones (see "
            "resume_with_changes)."
        },
    )
    resume_with_changes: bool = dataclasses.field(
        default=False,
        metadata={
            "help": "With resume: continue even though settings that change the run (anything but run length, "
            "saving, env workers and logging) differ from the saved config.json; the changes are listed and the "
            "new settings saved."
        },
    )
    overwrite_output_dir: bool = dataclasses.field(
        default=False,
        metadata={
            "help": "Start a fresh run in an output_dir that holds an earlier run, deleting that run's files "
            "(checkpoints/, metrics.jsonl, rollouts/, learning_curve.png, config.json; nothing else). Without it "
            "(or resume) such a folder is refused. (transformers 5's TrainingArguments no longer has this field.)"
        },
    )
    max_steps: int = dataclasses.field(
        default=20, metadata={"help": "Number of AT-GRPO steps (rollout + update)."}
    )

    max_completions: int | None = dataclasses.field(
        default=None,
        metadata={
            "help": "Sample budget: stop after the step that brings the completions sampled (every candidate or "
            "trajectory step, all policies) to at least this many; max_steps still caps the run. None: no budget."
        },
    )

    def __post_init__(self) -> None:
        for name in (
            "env_kwargs",
            "agent_policies",
            "agent_models",
            "policy_sampling",
            "policy_eval_sampling",
            "vllm_engine_kwargs",
            "ray_policy_resources",
        ):
            value = getattr(self, name)
            if value is None:
                setattr(self, name, {})
            elif isinstance(value, str):  # from the command line: JSON text
                try:
                    setattr(self, name, json.loads(value))
                except json.JSONDecodeError as error:
                    raise ConfigError(f"{name}={value!r} is not valid JSON: {error}") from error
            if not isinstance(getattr(self, name), dict):
                raise ConfigError(f"{name} must be a mapping, got {type(getattr(self, name)).__name__}")
        if self.bf16 is None:
            self.bf16 = False
        self._check_choice("grouping", GROUPINGS)
        try:
            parse_commit(self.commit)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        self._check_choice("eval_split", ("val", "eval"))
        self._check_choice("team_credit", TEAM_CREDITS)
        self.scale_rewards = {True: "group", False: "none"}.get(self.scale_rewards, self.scale_rewards)
        self._check_choice("scale_rewards", SCALE_REWARDS)
        self._check_choice("policy_layout", POLICY_LAYOUTS)
        self._check_choice("distributed", ("none", "ray"))
        self._check_choice("generation_backend", GENERATION_BACKENDS)
        self._check_choice("workflow", ("mas", "single", "ensemble"))
        self._check_choice("env_id", tuple(sorted(pettingllms.registry)))
        for name in ("instances_per_step", "eval_episodes", "num_generations"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)} must be >= 1")
        if self.env_workers < 0:
            raise ConfigError(f"env_workers={self.env_workers} must be >= 0 (0: step envs in-process)")
        if self.eval_every < 0:
            raise ConfigError(f"eval_every={self.eval_every} must be >= 0")
        if self.grouping in TREE_GROUPINGS and self.num_generations < 2:
            raise ConfigError(
                f"num_generations (K) must be >= 2 for grouping={self.grouping!r}: a group needs candidates"
            )
        if self.policy_layout == "shared" and self.agent_policies:
            raise ConfigError(
                "agent_policies needs policy_layout='per_role' or 'lora_per_role' (the 'shared' layout has one "
                "policy)"
            )
        if self.policy_layout == "shared" and self.agent_models:
            raise ConfigError(
                "agent_models needs policy_layout='per_role' (the 'shared' layout has one model)"
            )
        if self.policy_layout == "lora_per_role" and self.beta != 0.0:
            raise ConfigError(
                "beta (KL) != 0 is not supported with policy_layout='lora_per_role'; use beta=0.0"
            )
        if self.distributed == "ray" and self.policy_layout == "lora_per_role":
            raise ConfigError(
                "policy_layout='lora_per_role' cannot use distributed='ray': its adapters share one base model "
                "in one process; use 'per_role' or 'shared'"
            )
        if self.distributed == "ray" and not self.ray_policy_resources:
            raise ConfigError("ray_policy_resources must name at least one resource, e.g. {CPU: 1}")
        if self.num_iterations != 1:
            raise ConfigError(
                f"num_iterations={self.num_iterations}: AT-GRPO updates on-policy once per step (1)"
            )
        for policy, overrides in {"": {"temperature": self.temperature}, **self.policy_sampling}.items():
            temperature = overrides.get("temperature", self.temperature)
            if not temperature > 0:
                where = f"policy_sampling[{policy!r}].temperature" if policy else "temperature"
                raise ConfigError(
                    f"{where}={temperature}: training samples need a temperature > 0 (at 0 the K candidates are "
                    "identical and the log-probabilities divide by zero); greedy decoding is for evaluation "
                    "(eval_temperature, policy_eval_sampling)"
                )
        if self.max_completions is not None and self.max_completions < 1:
            raise ConfigError(f"max_completions={self.max_completions} must be >= 1 (or None: no budget)")
        if self.resume and self.overwrite_output_dir:
            raise ConfigError(
                "resume=True and overwrite_output_dir=True contradict each other: resume continues the run in "
                "output_dir, overwrite_output_dir deletes it; choose one"
            )
        if self.max_steps is None or self.max_steps < 1:
            raise ConfigError(f"max_steps={self.max_steps} must be >= 1: the number of AT-GRPO steps")
        super().__post_init__()

    def _check_choice(self, name: str, allowed: tuple[str, ...]) -> None:
        if getattr(self, name) not in allowed:
            raise ConfigError(
                f"{name}={getattr(self, name)!r} is not supported; allowed values: {list(allowed)}"
            )

    def policy_temperature(self, policy: str) -> float:
        """The training sampling temperature of `policy` (its `policy_sampling` override, else `temperature`);
        its update computes log-probabilities at the same temperature."""
        return float(self.policy_sampling.get(policy, {}).get("temperature", self.temperature))

    @property
    def default_stop_strings(self) -> list[str]:
        if self.stop_strings is not None:
            return self.stop_strings
        return list(pettingllms.make(self.env_id).unwrapped.STOP_STRINGS)
