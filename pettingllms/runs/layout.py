"""`RunLayout`: every path of a run folder, in one place; `CheckpointLayout`: every path of one checkpoint.

A run folder (`output_dir`):

    config.json            the run's settings (`ATGRPOConfig`, JSON-ready fields)
    metrics.jsonl          one JSON object per step
    learning_curve.png     success over steps
    run.lock               held while a trainer owns the folder (`pettingllms.runs.folder`)
    rollouts/step_N.jsonl  every sample of step N (`dump_rollouts`)
    checkpoints/step_N/    a checkpoint (written as `step_N.tmp`, renamed when complete)
    tensorboard/           TensorBoard event files (`report_to: [tensorboard]`)
    wandb/                 wandb's local run files (`report_to: [wandb]`, unless WANDB_DIR says otherwise)

A checkpoint folder:

    config.json            the run's config.json when the checkpoint was written (what its weights were trained under)
    policy_<name>/         policy <name>'s full model and tokenizer (layouts shared, per_role)
    peft/<name>/           policy <name>'s LoRA adapter (layout lora_per_role; the base model is the run's)
    optimizer_<name>.pt    scheduler_<name>.pt    generator_<name>.pt    (each policy's training state)
    state.json             the step, the completions sampled so far, the rollout engine's generator
    manifest.json          sha256 and size of every other file, written last (`pettingllms.runs.manifest`)

Training writes runs and evaluation reads them, both only through these two classes. Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pettingllms.core.errors import ConfigError, PettingLLMsError
from pettingllms.runs import manifest

_STEP = re.compile(r"^step_(\d+)$")
POLICY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""What a policy may be called: it names files and folders of a checkpoint, so no `/`, no leading `.`."""


class CheckpointError(PettingLLMsError):
    """A checkpoint that was asked for is missing or fails its manifest (the message names the file)."""


def map_agents(
    policy_layout: str, agent_policies: Mapping[str, str], agents: Sequence[str]
) -> dict[str, str]:
    """agent -> policy name: "shared" for every agent (layout `shared`), or `agent_policies` (first matching name
    or fnmatch pattern), or each agent's own name. An agent that no entry matches raises `ConfigError`, and so
    does a policy name that is not a `POLICY_NAME` (it names files in a checkpoint: `policy_<name>/`)."""
    if policy_layout == "shared":
        return dict.fromkeys(agents, "shared")
    bad = [name for name in [*(agent_policies or {}).values(), *agents] if not POLICY_NAME.match(str(name))]
    if bad:
        raise ConfigError(
            f"agent_policies {dict(agent_policies or {})}: policy names {bad} must match {POLICY_NAME.pattern} "
            "(each names a folder of a checkpoint)"
        )
    if not agent_policies:
        return {agent: agent for agent in agents}
    mapping, unmatched = {}, []
    for agent in agents:
        match = next(
            (p for pattern, p in agent_policies.items() if fnmatch.fnmatchcase(agent, pattern)), None
        )
        if match is None:
            unmatched.append(agent)
        else:
            mapping[agent] = str(match)
    if unmatched:
        raise ConfigError(
            f"agent_policies {dict(agent_policies)} maps no policy to agents {unmatched} (agents: {list(agents)})"
        )
    return mapping


def evaluation_settings(config: Mapping[str, Any], policy: str) -> dict[str, Any]:
    """How a run evaluates `policy`, from its settings (the trainer's config fields, or its saved config.json):
    `max_new_tokens` (its `policy_eval_sampling` entry, else `eval_max_completion_length`, else
    `max_completion_length`) and `enable_thinking` (likewise). The trainer and `pettingllms-eval --policy RUN`
    both read it here, so that they play a run's models alike."""
    own = (config.get("policy_eval_sampling") or {}).get(policy, {})
    return {
        "max_new_tokens": own.get("max_new_tokens")
        or config.get("eval_max_completion_length")
        or config.get("max_completion_length"),
        "enable_thinking": own.get("enable_thinking", config.get("enable_thinking")),
    }


@dataclasses.dataclass(frozen=True)
class CheckpointLayout:
    """The paths of one checkpoint folder (see the module docstring)."""

    folder: Path

    @property
    def run(self) -> RunLayout:
        return RunLayout(self.folder.parent.parent)

    @property
    def state(self) -> Path:
        return self.folder / "state.json"

    @property
    def config(self) -> Path:
        """The run's config.json as it was when this checkpoint was written (covered by the manifest)."""
        return self.folder / "config.json"

    def read_config(self, log: Callable[[str], None] = print) -> dict[str, Any]:
        """The settings this checkpoint was trained under: its own copy of config.json, or, for a checkpoint
        written before copies were kept, the run's config.json (said to `log`: nothing vouches for it)."""
        if self.config.is_file():
            return json.loads(self.config.read_text())
        log(
            f"checkpoint {self.folder} holds no config.json (an older version): using {self.run.config}, unverified"
        )
        return self.run.read_config()

    def inside(self, path: Path) -> Path:
        """`path`, when it lies inside this checkpoint's folder once links are followed; else `ConfigError`."""
        if not path.resolve().is_relative_to(self.folder.resolve()):
            raise ConfigError(f"{path} leads outside checkpoint {self.folder} (to {path.resolve()})")
        return path

    @property
    def adapters(self) -> Path:
        """The folder of the LoRA adapters (`peft/`), one sub-folder per policy."""
        return self.folder / "peft"

    def model(self, policy: str) -> Path:
        return self.folder / f"policy_{policy}"

    def adapter(self, policy: str) -> Path:
        return self.adapters / policy

    def optimizer(self, policy: str) -> Path:
        return self.folder / f"optimizer_{policy}.pt"

    def scheduler(self, policy: str) -> Path:
        return self.folder / f"scheduler_{policy}.pt"

    def generator(self, policy: str) -> Path:
        return self.folder / f"generator_{policy}.pt"

    def read_state(self) -> dict[str, Any]:
        return json.loads(self.state.read_text())

    def verify(self) -> None:
        """Raise `CheckpointError` naming the bad file unless this checkpoint is intact (its manifest holds)."""
        found = manifest.problem(self.folder)
        if found is not None:
            raise CheckpointError(
                f"checkpoint {self.folder} is not intact: {found}; use another checkpoint (or the run folder, "
                "which picks the newest intact one)"
            )


@dataclasses.dataclass(frozen=True)
class RunLayout:
    """The paths of one run folder (see the module docstring)."""

    root: Path

    RUN_FILES = (
        "checkpoints",
        "metrics.jsonl",
        "rollouts",
        "learning_curve.png",
        "config.json",
        "tensorboard",
        "wandb",
    )
    """What a run writes in its folder (`--overwrite_output_dir true` deletes these and nothing else)."""
    OLD_RUN_MARKERS = ("checkpoints", "metrics.jsonl", "rollouts")
    """Files whose presence means the folder holds a run (config.json alone is left by a run that failed to
    start)."""

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def learning_curve(self) -> Path:
        return self.root / "learning_curve.png"

    @property
    def tensorboard(self) -> Path:
        return self.root / "tensorboard"

    @property
    def wandb(self) -> Path:
        """The folder given to wandb as `WANDB_DIR` (wandb writes a `wandb/` folder inside it)."""
        return self.root

    @property
    def lock(self) -> Path:
        return self.root / "run.lock"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    def rollout_dump(self, step: int) -> Path:
        return self.root / "rollouts" / f"step_{step}.jsonl"

    def checkpoint(self, step: int) -> CheckpointLayout:
        return CheckpointLayout(self.checkpoints / f"step_{step}")

    def staging(self, step: int) -> CheckpointLayout:
        """Where checkpoint `step` is written before it is complete (renamed to `checkpoint(step)` then)."""
        return CheckpointLayout(self.checkpoints / f"step_{step}.tmp")

    def unfinished_checkpoints(self) -> list[Path]:
        """Checkpoint folders whose writing was killed (`step_N.tmp`)."""
        return sorted(self.checkpoints.glob("step_*.tmp")) if self.checkpoints.is_dir() else []

    def step_checkpoints(self) -> list[CheckpointLayout]:
        """Every `checkpoints/step_N` folder, newest first (intact or not)."""
        folder = self.checkpoints
        steps = (
            [(int(m[1]), p) for p in folder.iterdir() if (m := _STEP.match(p.name))]
            if folder.is_dir()
            else []
        )
        return [CheckpointLayout(path) for _, path in sorted(steps, reverse=True)]

    def latest_intact(self, log: Callable[[str], None] = print) -> CheckpointLayout | None:
        """The newest checkpoint that passes its manifest, or None when there is none; each newer one that fails
        is skipped with a message to `log` naming the folder and the bad file."""
        for checkpoint in self.step_checkpoints():
            found = manifest.problem(checkpoint.folder)
            if found is None:
                return checkpoint
            log(f"skipping checkpoint {checkpoint.folder}: {found}")
        return None

    def read_config(self) -> dict[str, Any]:
        return json.loads(self.config.read_text())


def open_run(path: Path, log: Callable[[str], None] = print) -> tuple[RunLayout, CheckpointLayout] | None:
    """A run folder (with `checkpoints/`) -> its newest intact checkpoint; a checkpoint folder of a run -> that
    checkpoint, verified; anything else -> None. Raises `ConfigError` for a run without an intact checkpoint and
    `CheckpointError` for a named checkpoint that fails its manifest. Skipped checkpoints are named to `log`."""
    run = RunLayout(path)
    if path.is_dir() and run.checkpoints.is_dir():
        found = run.latest_intact(log)
        if found is None and run.step_checkpoints():
            raise ConfigError(f"run folder {path} has no intact checkpoint (each was skipped, see above)")
        if found is None:
            raise ConfigError(f"run folder {path} has no checkpoint yet (checkpoints/step_N/)")
        return run, found
    checkpoint = CheckpointLayout(path)
    if path.is_dir() and checkpoint.state.is_file() and checkpoint.run.config.is_file():
        checkpoint.verify()
        return checkpoint.run, checkpoint
    return None
