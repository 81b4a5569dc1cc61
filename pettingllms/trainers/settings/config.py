"""`ATGRPOConfig`: TRL's `GRPOConfig` plus the multi-agent fields of AT-GRPO, validated in one place.

Every inherited TRL / transformers field is either honoured or refused (`inherited_fields`): `HONOURED` says
what each does here (`num_generations` is K; `learning_rate`, `lr_scheduler_type`, `loss_type`,
`epsilon`/`epsilon_high`, `beta` (KL against the run's start), `scale_rewards`, `temperature`/`top_p`/`top_k`/
`max_completion_length`, `per_device_train_batch_size` (the update's micro-batch), `report_to` ('tensorboard',
'wandb'), ...), and a refused field set away from its default raises `ConfigError` naming it and what to use
instead. Every check that needs only the settings is in `__post_init__` and raises `ConfigError`; TRL's and
transformers' own checks are re-raised as `ConfigError` too. The few that need the machine or the models are raised,
as `ConfigError` naming the field, where those become known: a policy's device (`devices`), the memory plan on GPUs
(`memory_plan`), a chat template without the thinking switch (`at_grpo`), a tracker that is not installed
(`trackers`), off-policy training with vLLM on a GPU (`policy_set`). `output_dir` may name other fields in braces, e.g.
`runs/tiny/plan_path_{policy_layout}`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from trl import GRPOConfig

import pettingllms
from pettingllms.backends.base import SamplingConfig
from pettingllms.core.errors import ConfigError, PettingLLMsError
from pettingllms.core.registration import TURNS
from pettingllms.parallel.devices import launched_world_size
from pettingllms.rollout.engine import TEAM_CREDITS, parse_commit
from pettingllms.rollout.grouping import GROUPINGS
from pettingllms.rollout.scheduler import SCHEDULES
from pettingllms.trainers.advantages import GROUP_BASELINES, SCALE_REWARDS, TURN_BASELINES
from pettingllms.trainers.outputs.trackers import TRACKERS, check_trackers
from pettingllms.trainers.settings.inherited_fields import refused_settings
from pettingllms.trainers.update.grpo_loss import IMPORTANCE_SAMPLING_LEVELS, LOSS_TYPES, SEQUENCE_MEAN_LOSSES
from pettingllms.trainers.update.micro_batches import MICRO_BATCHINGS

POLICY_LAYOUTS = ("shared", "per_role", "lora_per_role")
GENERATION_BACKENDS = ("hf", "vllm")
LORA_GENERATIONS = ("merged", "adapters")
SAVE_STRATEGIES = ("steps", "no")


FLOAT_RANGES: dict[str, tuple[str, Callable[[float], bool]]] = {
    "learning_rate": (">= 0", lambda value: value >= 0),
    "weight_decay": (">= 0", lambda value: value >= 0),
    "adam_beta1": ("in [0, 1)", lambda value: 0 <= value < 1),
    "adam_beta2": ("in [0, 1)", lambda value: 0 <= value < 1),
    "adam_epsilon": ("> 0", lambda value: value > 0),
    "max_grad_norm": ("> 0", lambda value: value > 0),
    "top_p": ("in (0, 1]", lambda value: 0 < value <= 1),
    "beta": (">= 0 (the KL weight)", lambda value: value >= 0),
    "epsilon": ("> 0 (the clip range)", lambda value: value > 0),
    "eval_temperature": (">= 0 (0: greedy)", lambda value: value >= 0),
    "entropy_coef": (">= 0", lambda value: value >= 0),
    "ray_placement_timeout": ("> 0 seconds", lambda value: value > 0),
    "ray_recover_s": (">= 0 seconds (0: no recovery)", lambda value: value >= 0),
}
"""The range of each numeric training setting that would pass a comparison and crash later (inside the
optimizer, the sampler, the loss) or train nothing; every float field must also be finite."""


class Problems:
    """The failures of a config's independent checks, so that one `ConfigError` names every bad field at once."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def add(self, message: str) -> None:
        self.messages.append(message)

    @contextlib.contextmanager
    def check(self) -> Iterator[None]:
        """Run the block; its `ConfigError` is recorded instead of raised."""
        try:
            yield
        except ConfigError as error:
            self.add(str(error))

    def raise_any(self) -> None:
        """Raise one `ConfigError` naming every recorded failure (none recorded: return)."""
        if len(self.messages) == 1:
            raise ConfigError(self.messages[0])
        if self.messages:
            raise ConfigError(f"{len(self.messages)} settings are wrong: " + "; ".join(self.messages))


@dataclasses.dataclass
class ATGRPOConfig(GRPOConfig):
    """Configuration of an AT-GRPO run (see the module docstring for the fields inherited from TRL)."""

    bf16: bool | None = dataclasses.field(
        default=False,
        metadata={
            "help": "bfloat16 compute: the update under autocast, generation on a bfloat16 copy of the weights; the "
            "trained weights and optimizer states stay float32. Default False, unlike TRL's None ('bf16 unless fp16'): "
            "the default run is the tiny model in float32 on CPU; pass --bf16 true on a GPU (the paper configs "
            "do). None resolves as in TRL."
        },
    )
    env_id: str = dataclasses.field(default="plan-path-v0", metadata={"help": "Registered environment id."})
    env_kwargs: dict[str, Any] | str | None = dataclasses.field(
        default_factory=dict, metadata={"help": "Keyword arguments of pettingllms.make (size, dataset, ...)."}
    )
    workflow: str = dataclasses.field(
        default="mas", metadata={"help": "'mas' (the team) or 'single' (baseline)."}
    )
    turns: str = dataclasses.field(
        default="aec",
        metadata={
            "help": "'aec' (the env's order) or 'joint' (each agent observes the env as its turn began, as "
            "CoMLRL's do); its evaluations play the same."
        },
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
            "help": "'agent_turn' (AT-GRPO), 'trajectory' (GRPO baseline), the ablations 'agent' / 'turn' "
            "(groups keyed by one of the two only), 'anchor_state' (GiGPO: candidates of equal states pooled) or "
            "'trajectory_turn' (MT-GRPO: K episodes grouped by turn index, returns-to-go)."
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
    rollout_schedule: str = dataclasses.field(
        default="async",
        metadata={
            "help": "When the rollout's generation requests are served: 'async' (each policy's generator takes "
            "requests as episodes make them, episodes advance as their own completions return, policies generate "
            "at the same time) or 'lockstep' (every episode waits for each round of calls, one policy at a time; "
            "the benchmark's anchor). Every request carries its own seed: the samples are the same either way."
        },
    )
    off_policy_steps: int = dataclasses.field(
        default=0,
        metadata={
            "help": "0: on-policy, each step's rollout with the weights it updates. 1: the next step's rollout runs "
            "during this step's update, on the weights before it (one update stale; not across an evaluation or a "
            "checkpoint, which wait for the update); its samples' sampling log-probabilities are the loss's old "
            "log-probabilities, so the clipped ratio corrects for the staleness. Needs a training temperature of "
            "1, the 'shared' or 'per_role' layout, no launcher or Ray, and a generator that stays awake during "
            "updates (the HF backend, or vLLM on CPU)."
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
    micro_batching: str = dataclasses.field(
        default="count",
        metadata={
            "help": "How an update cuts a policy's samples into micro-batches: 'count' (per_device_train_batch_size "
            "rows in sample order) or 'tokens' (sorted by length and packed within per_device_train_batch_size x "
            "(longest prompt + longest completion) padded tokens: never more padded tokens in a micro-batch or more "
            "micro-batches than 'count', fewer forward passes when lengths vary). The gradient is the same."
        },
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
    ray_recover_s: float = dataclasses.field(
        default=300.0,
        metadata={
            "help": "When a policy's actor dies (node lost): seconds to wait for the cluster to hold the run "
            "again, then resume from the last checkpoint within the run (0: stop with the resume command)."
        },
    )
    policy_devices: dict[str, str] | str | None = dataclasses.field(
        default_factory=dict,
        metadata={
            "help": "Device of each policy in one process, e.g. {tool: 'cuda:0', plan: 'cuda:1'} (policy name -> "
            "'cpu' or 'cuda:N'). Default: policies spread over the visible GPUs in order (the CPU without one). "
            "Not with torchrun (each rank uses its own device), distributed='ray' (ray_policy_resources) or "
            "lora_per_role (one shared base model)."
        },
    )
    drop_zero_variance_groups: bool = dataclasses.field(
        default=False, metadata={"help": "Drop groups whose rewards are all equal (DAPO dynamic sampling)."}
    )
    per_agent_advantages: bool = dataclasses.field(
        default=False,
        metadata={
            "help": "Dr. MAS: centre and scale each sample by its own agent's members of its group (and, with "
            "scale_rewards='batch', its agent's batch std); see pettingllms.trainers.advantages."
        },
    )
    group_baseline: str = dataclasses.field(
        default="mean",
        metadata={
            "help": "Centre a group's rewards on its 'mean', the others' mean ('rloo') or its best ('max')."
        },
    )
    turn_baseline: str = dataclasses.field(
        default="return_to_go",
        metadata={
            "help": "For grouping='trajectory_turn': 'return_to_go' (the baseline that stays unbiased when the "
            "policy decides the episode's length) or 'summed' (per-turn normalised rewards summed over the "
            "remaining turns: the biased construction of verl issue 7244, for comparison)."
        },
    )
    policy_layout: str = dataclasses.field(
        default="per_role",
        metadata={
            "help": "'shared' (one model), 'per_role' (one model per agent), 'lora_per_role' (adapters)."
        },
    )
    model_name_or_path: str = dataclasses.field(
        default="tiny",
        metadata={
            "help": "'tiny' (built-in, warm-started), 'qwen3-test' (built-in: Qwen3's tokenizer and geometry, random weights), 'smollm2' (SmolLM2-135M-Instruct, pretrained), a Hugging Face id, or a local path."
        },
    )
    tiny_warm_start: dict[str, Any] | str | None = dataclasses.field(
        default_factory=dict,
        metadata={
            "help": "How model_name_or_path='tiny' is warm-started: settings of pettingllms.warmstart.build "
            "(RECIPE_FIELDS), e.g. {tool_programs: 0.4, program_bugs: 0.4, sft_steps: 300}; {} is the env's "
            "default warm start. Each recipe is built once and cached in its own folder; policies that start "
            "from another model ignore it."
        },
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
    lora_generation: str = dataclasses.field(
        default="merged",
        metadata={
            "help": "'lora_per_role' sampling in process: 'merged' (a copy of the base per adapter, merged, synced "
            "after each update: faster) or 'adapters' (through PEFT: no copy)."
        },
    )
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
    enable_thinking: bool | None = dataclasses.field(
        default=None,
        metadata={
            "help": "Qwen3-style thinking switch of the chat template, for every policy in training and evaluation "
            "(per policy: the enable_thinking key of policy_sampling / policy_eval_sampling). None: the template's "
            "default (Qwen3: thinking on); only None for templates without the switch. The env receives the answer "
            "after the thinking block; the update trains on every generated token, thinking included."
        },
    )
    eval_max_completion_length: int | None = dataclasses.field(
        default=None,
        metadata={
            "help": "Completion budget (tokens) of an evaluation step; None: max_completion_length, the budget the "
            "policies were trained with (pettingllms-eval --policy RUN uses the same)."
        },
    )
    max_generation_rows: int | None = dataclasses.field(
        default=None,
        metadata={
            "help": "The most rows (prompts x K) in one batch of the in-process sampler (generation_backend 'hf'): "
            "a call with more is split between groups, bounding the KV cache to this many completions. None: one "
            "batch per call."
        },
    )
    plan_prompt_tokens: int = dataclasses.field(
        default=2048,
        metadata={
            "help": "Longest prompt (tokens, chat template and history included) the memory planner assumes per row; "
            "the run warns when a prompt is longer. On GPUs the planner sizes max_generation_rows and "
            "per_device_train_batch_size before anything loads, and refuses a run that cannot fit (--plan prints "
            "the plan)."
        },
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

    logging_steps: int = dataclasses.field(
        default=1,
        metadata={
            "help": "Send every N-th step's metrics to the report_to trackers (metrics.jsonl: every step)."
        },
    )

    def __post_init__(self) -> None:
        """Every check of a config (see the module docstring); each failure is a one-line `ConfigError`."""
        self._parse_mappings()
        problems = Problems()  # every bad choice and number at once, before any combination rule
        self._check_choices(problems)
        self._check_ranges(problems)
        problems.raise_any()
        self._check_combinations()
        self._check_tiny_warm_start()
        self._check_inherited()
        self._check_device()
        self.output_dir = self._expand_output_dir()
        try:
            super().__post_init__()
        except ValueError as error:  # TRL's and transformers' own checks
            raise ConfigError(str(error).splitlines()[0]) from error

    def _parse_mappings(self) -> None:
        """Mapping fields given as JSON text (command-line flags) become dicts; None becomes {}."""
        for name in (
            "env_kwargs",
            "tiny_warm_start",
            "agent_policies",
            "agent_models",
            "policy_sampling",
            "policy_eval_sampling",
            "vllm_engine_kwargs",
            "ray_policy_resources",
            "policy_devices",
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

    def _check_choices(self, problems: Problems) -> None:
        if (
            self.bf16 is None
        ):  # given explicitly: TRL's rule (`BaseConfig.__post_init__`), not this field's default
            self.bf16 = not self.fp16
        # the deprecated alias, resolved here as newer transformers resolve it (5.17 has no activation_checkpointing)
        if self.activation_checkpointing is None:
            self.activation_checkpointing = bool(self.gradient_checkpointing)
        self.gradient_checkpointing = self.activation_checkpointing
        for name, allowed in (
            ("grouping", tuple(GROUPINGS)),
            ("eval_split", ("val", "eval")),
            ("team_credit", TEAM_CREDITS),
            ("turns", TURNS),
            ("rollout_schedule", SCHEDULES),
            ("turn_baseline", TURN_BASELINES),
            ("group_baseline", GROUP_BASELINES),
        ):
            with problems.check():
                self._check_choice(name, allowed)
        with problems.check():
            try:
                parse_commit(self.commit)
            except ValueError as error:
                raise ConfigError(str(error)) from None
        # TRL's documented aliases (its `GRPOConfig.__post_init__` maps them the same way); the help says so
        self.scale_rewards = {True: "group", False: "none"}.get(self.scale_rewards, self.scale_rewards)
        for name, allowed in (
            ("scale_rewards", SCALE_REWARDS),
            ("loss_type", LOSS_TYPES),
            ("importance_sampling_level", IMPORTANCE_SAMPLING_LEVELS),
            ("policy_layout", POLICY_LAYOUTS),
            ("distributed", ("none", "ray")),
            ("generation_backend", GENERATION_BACKENDS),
            ("lora_generation", LORA_GENERATIONS),
            ("micro_batching", MICRO_BATCHINGS),
            ("workflow", ("mas", "single", "ensemble")),
            ("save_strategy", SAVE_STRATEGIES),
        ):
            with problems.check():
                self._check_choice(name, allowed)
        with problems.check():
            try:
                pettingllms.spec(self.env_id)  # a namespaced id (textarena/...) is resolved here
            except PettingLLMsError as error:
                raise ConfigError(f"env_id={self.env_id!r}: {error}") from None
        self.report_to = _tracker_list(self.report_to)  # a list, 'none' as [], as transformers holds it
        with problems.check():
            check_trackers(self.report_to)

    def _check_ranges(self, problems: Problems) -> None:
        """Every numeric field in its range (`problems` collects each failure)."""
        for name in (
            "instances_per_step",
            "eval_episodes",
            "num_generations",
            "save_steps",
            "logging_steps",
            "plan_prompt_tokens",
        ):
            if getattr(self, name) < 1:
                problems.add(f"{name}={getattr(self, name)} must be >= 1")
        if self.env_workers < 0:
            problems.add(f"env_workers={self.env_workers} must be >= 0 (0: step envs in-process)")
        if self.eval_every < 0:
            problems.add(f"eval_every={self.eval_every} must be >= 0")
        for name, value in vars(self).items():  # NaN and infinity pass every comparison below: refused first
            if isinstance(value, float) and not math.isfinite(value):
                problems.add(f"{name}={value} must be a finite number")
        for name, (rule, holds) in FLOAT_RANGES.items():
            value = getattr(self, name)
            if isinstance(value, (int, float)) and math.isfinite(value) and not holds(value):
                problems.add(f"{name}={value} must be {rule}")
        least = GROUPINGS[self.grouping].min_generations if self.grouping in GROUPINGS else 1
        if 1 <= self.num_generations < least:
            problems.add(
                f"num_generations (K) must be >= {least} for grouping={self.grouping!r}: a group needs candidates"
            )
        if self.num_iterations != 1:
            problems.add(f"num_iterations={self.num_iterations}: AT-GRPO updates on-policy once per step (1)")
        for policy, overrides in {"": {"temperature": self.temperature}, **self.policy_sampling}.items():
            temperature = (
                overrides.get("temperature", self.temperature) if isinstance(overrides, dict) else 1.0
            )
            if not temperature > 0:
                where = f"policy_sampling[{policy!r}].temperature" if policy else "temperature"
                problems.add(
                    f"{where}={temperature}: training samples need a temperature > 0 (at 0 the K candidates are "
                    "identical and the log-probabilities divide by zero); greedy decoding is for evaluation "
                    "(eval_temperature, policy_eval_sampling)"
                )
        for name in ("eval_max_completion_length", "max_generation_rows", "save_total_limit"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                problems.add(f"{name}={getattr(self, name)} must be >= 1 (or None)")
        with problems.check():
            self._check_sampling_keys()
        if self.max_completions is not None and self.max_completions < 1:
            problems.add(f"max_completions={self.max_completions} must be >= 1 (or None: no budget)")
        if self.max_steps is None or self.max_steps < 1:
            problems.add(f"max_steps={self.max_steps} must be >= 1: the number of AT-GRPO steps")

    def _check_sampling_keys(self) -> None:
        """Per-policy sampling overrides name only `SamplingConfig` fields."""
        allowed = [field.name for field in dataclasses.fields(SamplingConfig)]
        for name in ("policy_sampling", "policy_eval_sampling"):
            for policy, overrides in getattr(self, name).items():
                unknown = sorted(set(overrides) - set(allowed)) if isinstance(overrides, dict) else None
                if unknown is None or unknown:
                    raise ConfigError(
                        f"{name}[{policy!r}] = {overrides!r}: keys must be among {allowed}"
                        + (f" (unknown: {unknown})" if unknown else "")
                    )

    def _check_combinations(self) -> None:
        if (self.entropy_coef != 0.0 or self.use_adaptive_entropy) and self.loss_type in SEQUENCE_MEAN_LOSSES:
            raise ConfigError(
                f"entropy_coef with loss_type={self.loss_type!r}: the entropy bonus is a mean over tokens, which "
                "micro-batches weighted by their share of the sequences cannot keep exact; use a loss_type that "
                "averages over tokens (bnpo, dapo, cispo, vespo) or entropy_coef=0"
            )
        admitting = [
            name for name, grouping in GROUPINGS.items() if self.turn_baseline in grouping.turn_baselines
        ]
        if self.grouping not in admitting:
            raise ConfigError(
                f"turn_baseline={self.turn_baseline!r} needs grouping={' or '.join(map(repr, admitting))} (grouping="
                f"{self.grouping!r} admits {list(GROUPINGS[self.grouping].turn_baselines)}: the other groupings have "
                "no turn-indexed baseline)"
            )
        if self.turn_baseline == "summed" and self.group_baseline != "mean":
            raise ConfigError(
                f"group_baseline={self.group_baseline!r} is not defined for turn_baseline='summed' (its per-turn "
                "rewards are mean-centred); use 'return_to_go' or group_baseline='mean'"
            )
        if self.turn_baseline == "summed" and self.per_agent_advantages:
            raise ConfigError(
                "per_agent_advantages is not defined for turn_baseline='summed'; use 'return_to_go'"
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
        self._check_launcher()
        if self.policy_devices and (self.distributed == "ray" or self.policy_layout == "lora_per_role"):
            raise ConfigError(
                "policy_devices places policies in one process; with distributed='ray' use ray_policy_resources, "
                "and policy_layout='lora_per_role' keeps every adapter on its base model's device"
            )
        if self.distributed == "ray" and not self.ray_policy_resources:
            raise ConfigError("ray_policy_resources must name at least one resource, e.g. {CPU: 1}")
        self._check_off_policy()
        if self.resume and self.overwrite_output_dir:
            raise ConfigError(
                "resume=True and overwrite_output_dir=True contradict each other: resume continues the run in "
                "output_dir, overwrite_output_dir deletes it; choose one"
            )

    def _check_off_policy(self) -> None:
        if self.off_policy_steps not in (0, 1):
            raise ConfigError(
                f"off_policy_steps={self.off_policy_steps} is not supported; allowed values: [0, 1]"
            )
        if not self.off_policy_steps:
            return
        temperatures = {"temperature": self.temperature} | {
            f"policy_sampling[{policy!r}].temperature": overrides["temperature"]
            for policy, overrides in self.policy_sampling.items()
            if "temperature" in overrides
        }
        hot = {name: value for name, value in temperatures.items() if value != 1.0}
        if hot:
            raise ConfigError(
                f"off_policy_steps=1 needs training temperature 1 ({hot}): the generators return the model's raw "
                "log-probabilities, the sampling distribution's only at temperature 1"
            )
        if self.policy_layout == "lora_per_role" or self.distributed == "ray":
            raise ConfigError(
                "off_policy_steps=1 supports policy_layout 'shared' or 'per_role' without distributed='ray' (its "
                "rollout runs beside the update, on a copy of each policy's weights in this process)"
            )

    def _check_tiny_warm_start(self) -> None:
        """`tiny_warm_start` names known settings (it is used only by policies that start from `tiny`, so that a
        config's recipe does not stand in the way of `--model_name_or_path` given on the command line), and a
        policy starts from `tiny` only on an env with solver demonstrations to warm-start it."""
        from pettingllms.warmstart.build import recipe_tag
        from pettingllms.warmstart.demos import missing_demonstrations

        try:
            recipe_tag(self.tiny_warm_start)
        except ValueError as error:
            raise ConfigError(f"tiny_warm_start: {error}") from error
        starts_tiny = "tiny" in {self.model_name_or_path, *self.agent_models.values()}
        missing = missing_demonstrations(self.env_id, self.env_kwargs)
        if starts_tiny and missing is not None:
            raise ConfigError(
                f"model_name_or_path='tiny' on {self.env_id}: the built-in tiny model is warm-started from solver "
                f"demonstrations, and {missing}; start {self.env_id} from a pretrained model: "
                "--model_name_or_path smollm2 (built in) or a Hugging Face id"
            )

    def _check_launcher(self) -> None:
        """Under torchrun / accelerate launch, the settings that data parallelism does not cover are refused."""
        ranks = launched_world_size()
        if ranks == 1:
            return
        unsupported = {
            "policy_layout='lora_per_role'": self.policy_layout == "lora_per_role",
            "distributed='ray'": self.distributed == "ray",
            "off_policy_steps=1": self.off_policy_steps == 1,
        }
        if self.instances_per_step < ranks:
            raise ConfigError(
                f"instances_per_step={self.instances_per_step} under {ranks} ranks: each rank plays its share of a "
                f"step's instances, so give every rank one at least (instances_per_step >= {ranks})"
            )
        for setting, present in unsupported.items():
            if present:
                raise ConfigError(
                    f"{setting} cannot run under torchrun / accelerate launch ({ranks} ranks): the launched trainer "
                    "shards 'shared' and 'per_role' policies with FSDP2 over its ranks; start it without a launcher "
                    "for this setting"
                )

    def _check_inherited(self) -> None:
        """A refused inherited field set away from its default names itself and what to use instead."""
        refused = refused_settings(self, GRPOConfig)
        if refused:
            name, value, instead = refused[0]
            others = f" (also refused here: {', '.join(n for n, _, _ in refused[1:])})" if refused[1:] else ""
            raise ConfigError(f"{name}={value!r} is not used by AT-GRPO: {instead}{others}")

    def _check_device(self) -> None:
        """A GPU-only setting on a machine without a GPU is refused before anything is built."""
        import torch

        wanted = [name for name in ("bf16", "fp16") if getattr(self, name)]
        if self.distributed == "ray":
            wanted += ["ray_policy_resources.GPU"] * bool(self.ray_policy_resources.get("GPU"))
        if wanted and not self.use_cpu and not torch.cuda.is_available():
            raise ConfigError(
                f"{', '.join(wanted)} needs a GPU and none is visible (torch.cuda.is_available() is False); this "
                "config is written for a GPU: on CPU pass --bf16 false --use_cpu true, or start from "
                "configs/tiny/"
            )

    def _expand_output_dir(self) -> str:
        """`output_dir` with `{field}` names replaced by the fields' values (e.g. `{policy_layout}`)."""
        try:
            return str(self.output_dir).format_map(_FieldValues(self))
        except (KeyError, ValueError, IndexError) as error:
            raise ConfigError(
                f"output_dir={self.output_dir!r}: braces must name a field, e.g. runs/{{env_id}}_{{policy_layout}} "
                f"({error})"
            ) from None

    def _check_choice(self, name: str, allowed: tuple[str, ...]) -> None:
        if getattr(self, name) not in allowed:
            raise ConfigError(
                f"{name}={getattr(self, name)!r} is not supported; allowed values: {list(allowed)}"
            )

    def check_before_work(self) -> None:
        """What needs the env and the file system, checked before any folder, model or warm start is made: the
        run's env is built once from these settings (every `env_kwargs` key the env does not take and a value it
        refuses are named under `env_kwargs`), and `output_dir` must be a folder this process can write into (or
        make); every failure at once, in one `ConfigError`."""
        from pettingllms.core.outputs import check_writable_folder
        from pettingllms.core.registration import accepted_arguments

        problems = Problems()
        with problems.check():
            check_writable_folder(Path(self.output_dir), "output_dir")
        accepted = accepted_arguments(pettingllms.spec(self.env_id).load())
        unknown = sorted(set(self.env_kwargs) - accepted) if accepted is not None else []
        if unknown:
            problems.add(
                f"env_kwargs names {unknown}, which {self.env_id} does not take; its arguments: {sorted(accepted)}"
            )
        known = {key: value for key, value in self.env_kwargs.items() if key not in unknown}
        try:
            env = pettingllms.make(
                self.env_id,
                workflow=self.workflow,
                turns=self.turns,
                alpha=self.alpha,
                max_turns=self.max_turns,
                **known,
            )
            env.close()
        except (ConfigError, ValueError, TypeError) as error:
            problems.add(f"{self.env_id} with env_kwargs={known!r}: {error}")
        problems.raise_any()

    def policy_temperature(self, policy: str) -> float:
        """The training sampling temperature of `policy` (its `policy_sampling` override, else `temperature`);
        its update computes log-probabilities at the same temperature."""
        return float(self.policy_sampling.get(policy, {}).get("temperature", self.temperature))

    @property
    def compute_dtype(self):
        """The torch dtype the policies compute in: bfloat16 with `bf16`, float16 with `fp16`, else float32. The
        trained weights and their optimizer states stay float32 whatever it is (an AdamW step at lr 1e-6 rounds
        away on a bfloat16 weight): the update computes in this dtype under autocast, and generation runs on a
        copy of the weights in it (a frozen LoRA base is loaded in it)."""
        import torch

        return torch.bfloat16 if self.bf16 else torch.float16 if self.fp16 else torch.float32

    @functools.cached_property
    def default_stop_strings(self) -> list[str]:
        """`stop_strings`, or the env's own (`STOP_STRINGS`), read once: finding them builds the env, which for
        `code-v0` starts its sandbox, and every policy's sampling of every engine and evaluation asks."""
        if self.stop_strings is not None:
            return self.stop_strings
        return list(pettingllms.make(self.env_id).unwrapped.STOP_STRINGS)


def _tracker_list(report_to: str | list[str] | None) -> list[str]:
    """`report_to` (a list, or names separated by commas) as a list of `TRACKERS` ('none' and None: no tracker);
    anything else is a `ConfigError`."""
    if report_to is None:
        return []
    given = report_to.split(",") if isinstance(report_to, str) else list(report_to)
    names = [name.strip() for name in given if name.strip() not in ("", "none")]
    unknown = [name for name in names if name not in TRACKERS]
    if unknown:
        raise ConfigError(
            f"report_to={report_to!r}: {unknown[0]!r} is not supported; allowed values: {['none', *TRACKERS]}"
        )
    return names


class _FieldValues(dict):
    """`str.format_map` view of a config's fields (for `output_dir` templates)."""

    def __init__(self, config: ATGRPOConfig):
        super().__init__({field.name: getattr(config, field.name) for field in dataclasses.fields(config)})

    def __missing__(self, name: str):
        raise KeyError(f"{name!r} is not a field")
