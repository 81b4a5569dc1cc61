"""The built-in warm-started tiny model: built once from solver demonstrations, then cached.

`ensure_tiny_model(env_id, workflow=...)` returns `<home>/models/tiny-<env_id>-<workflow>-v2/` (home from
`pettingllms.models.home`; with `sft_steps=0`, the untrained baseline, `...-v2-untrained/`; with `tag="name"`,
`tiny-<env_id>-<workflow>-name-v2/`, a variant built with other settings beside the default one), a folder loadable
with `HFPolicy.from_pretrained` or transformers' `from_pretrained`: `config.json`, `model.safetensors`,
`generation_config.json`, the tokenizer files and `warmstart.json` (settings, seeds, token counts, wall times,
SFT losses, greedy success before/after).

If the folder holds `warmstart.json` it is returned as is, even if it was built with other settings (a warning
names the differences; pass `rebuild=True` to rebuild). Otherwise it is built:

1. demonstrations on training seeds `0 .. demo_episodes-1`, or from seed 0 on until every role has
   `demos_per_role` of them (`pettingllms.warmstart.demos`; `tool_programs`, `program_bugs`: the tool agent's
   share of programs and of imperfect ones among them);
2. a byte-level BPE tokenizer trained on their prompts and targets (`pettingllms.models.tokenizer`);
3. the tiny Qwen3 initialised from `seed` (`pettingllms.models.tiny`);
4. supervised fine-tuning with TRL's `SFTTrainer`, loss on the assistant turn only
   (`pettingllms.warmstart.sft`);
5. greedy success of the untrained and of the trained model, one episode on each of `eval_episodes`
   evaluation-split seeds (`RolloutEngine.evaluate`; skipped when `eval_episodes == 0`).

The build writes only into a temporary folder beside the target, renamed into place when complete (a half-built
model is never returned), and a temporary trainer folder; no global RNG state survives it. The default
`sft_steps` (`DEFAULT_SFT_STEPS`) puts plan-path on 5x5 grids between "never" and "always" (measured: 0.0 before,
~0.37 after on 200 evaluation episodes), leaving room for RL.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import itertools
import json
import os
import shutil
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pettingllms.models import home
from pettingllms.warmstart.demos import PLAN_NOISE, TOOL_NOISE, collect_demonstrations
from pettingllms.warmstart.sft import library_versions, prompt_token_stats, supervised_fine_tune

FORMAT_VERSION = 2
DEFAULT_SFT_STEPS = 250
MANIFEST = "warmstart.json"


@dataclasses.dataclass(frozen=True)
class WarmStartSettings:
    """What a build depends on (recorded in `warmstart.json` under "settings")."""

    env_id: str = "plan-path-v0"
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    workflow: str = "mas"
    sft_steps: int = DEFAULT_SFT_STEPS  # optimizer steps (0: save the untrained model)
    seed: int = 0  # model init, demonstration noise, trainer
    demo_episodes: int | None = None  # default: sft_steps * batch_size / 2, about one pass over the examples
    demos_per_role: int | None = None  # instead of demo_episodes: play until each role has this many
    tool_programs: float = 0.0  # share of the tool agent's demonstrations that are programs (demos module)
    program_bugs: float = 0.0  # share of those programs that are imperfect variants
    plan_noise: float = (
        PLAN_NOISE  # share of the other agents' executed answers that are perturbed (demos module)
    )
    eval_episodes: int = 200  # evaluation-split episodes for the before/after success (0: skip)
    batch_size: int = 32
    learning_rate: float = 1e-3

    def __post_init__(self) -> None:
        if self.sft_steps < 0 or self.eval_episodes < 0 or self.batch_size < 1:
            raise ValueError(
                f"sft_steps={self.sft_steps} and eval_episodes={self.eval_episodes} must be >= 0, "
                f"batch_size={self.batch_size} >= 1"
            )

    @property
    def episodes(self) -> int:
        """Demonstration episodes actually played."""
        if self.demo_episodes is not None:
            return self.demo_episodes
        return max(64, self.sft_steps * self.batch_size // 2)

    def to_json(self) -> dict[str, Any]:
        return json.loads(json.dumps({**dataclasses.asdict(self), "env_kwargs": dict(self.env_kwargs)}))


RECIPE_FIELDS = (
    "sft_steps",
    "seed",
    "demo_episodes",
    "demos_per_role",
    "tool_programs",
    "program_bugs",
    "plan_noise",
    "batch_size",
    "learning_rate",
)
"""The `WarmStartSettings` a recipe may set (a run's `tiny_warm_start`); the env, its setting and the workflow
come from the run, and the run evaluates the model itself."""


def recipe_tag(recipe: Mapping[str, Any], env_kwargs: Mapping[str, Any] | None = None) -> str | None:
    """The cache tag of a warm-start recipe (`RECIPE_FIELDS` -> values) for the env setting `env_kwargs`: None for
    {} (the default model), else `recipe_` and a digest of both, so that each recipe and setting is built once
    into its own folder."""
    unknown = sorted(set(recipe) - set(RECIPE_FIELDS))
    if unknown:
        raise ValueError(f"unknown warm-start setting(s) {unknown}; allowed: {list(RECIPE_FIELDS)}")
    if not recipe:
        return None
    setting = {k: v for k, v in (env_kwargs or {}).items() if k != "reward"}  # demonstrations ignore it
    key = {"recipe": dict(recipe), "env_kwargs": setting}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()
    return f"recipe_{digest[:12]}"


def tiny_model_dir(
    env_id: str = "plan-path-v0", workflow: str = "mas", *, untrained: bool = False, tag: str | None = None
) -> Path:
    """The cache folder of the tiny model for `env_id` and `workflow` (it may not exist yet); `untrained`: the
    folder of the same model saved before fine-tuning (`sft_steps=0`), a baseline; `tag`: a named variant."""
    variant = f"-{tag}" if tag else ""
    return home.models_dir() / (
        f"tiny-{env_id}-{workflow}{variant}-v{FORMAT_VERSION}{'-untrained' if untrained else ''}"
    )


def is_built(env_id: str = "plan-path-v0", workflow: str = "mas", *, tag: str | None = None) -> bool:
    """Whether the warm-started tiny model for `env_id` and `workflow` is in the cache."""
    return (tiny_model_dir(env_id, workflow, tag=tag) / MANIFEST).is_file()


def ensure_tiny_model(
    env_id: str = "plan-path-v0",
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    workflow: str = "mas",
    rebuild: bool = False,
    sft_steps: int = DEFAULT_SFT_STEPS,
    seed: int = 0,
    tag: str | None = None,
    log: Callable[[str], None] | None = None,
    **options: Any,
) -> Path:
    """Return the cached tiny model folder for `env_id`/`workflow`, building it first if needed (module docs).

    `options` are the other `WarmStartSettings` fields: `demo_episodes`, `demos_per_role`, `tool_programs`,
    `program_bugs`, `plan_noise`, `eval_episodes`, `batch_size`, `learning_rate`; `tag` names a variant's folder
    (`tiny_model_dir`), so that a build with other settings does not replace the default one. `workflow` may
    join several workflows with "+" (e.g. "mas+single"): one model whose
    demonstrations alternate between them (episode i plays workflow i mod n), evaluated on the first; the
    comparisons of single agents with teams start from it. For the "ensemble" workflow `num_agents` is ignored: the demonstrations cycle through the
    team sizes of `pettingllms.warmstart.demos.ENSEMBLE_DEMO_SIZES`, so one model serves every size; `reward` is
    ignored too (it does not change the solver's demonstrations). With the defaults a build takes ~5 minutes on one CPU thread (SFT ~4, evaluation ~1).
    `log` receives a line as each phase of a build starts and ends, and fine-tuning shows a progress bar (None:
    silent).
    """
    settings = build_settings(
        env_id, env_kwargs=env_kwargs, workflow=workflow, sft_steps=sft_steps, seed=seed, **options
    )
    if tag is not None and not tag.replace("_", "").isalnum():
        raise ValueError(f"tag={tag!r} must be letters, digits and underscores")
    target = tiny_model_dir(env_id, workflow, untrained=sft_steps == 0, tag=tag)
    if (target / MANIFEST).is_file() and not rebuild:
        warn_if_different(target, settings)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        manifest = build_into(staging, settings, log or (lambda message: None), progress=log is not None)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        _install(staging, target, replace=rebuild)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target


def build_settings(
    env_id: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    workflow: str = "mas",
    sft_steps: int = DEFAULT_SFT_STEPS,
    seed: int = 0,
    **options: Any,
) -> WarmStartSettings:
    """The `WarmStartSettings` of `ensure_tiny_model`'s keywords: the env setting without what does not change the
    demonstrations (`reward`; for the "ensemble" workflow, `num_agents`)."""
    kwargs = dict(env_kwargs or {})
    kwargs.pop("reward", None)  # demonstrations are solver answers: the reward mode does not change them
    if workflow == "ensemble":
        kwargs.pop("num_agents", None)  # one warm start covers every team size (ENSEMBLE_DEMO_SIZES)
    return WarmStartSettings(
        env_id=env_id, env_kwargs=kwargs, workflow=workflow, sft_steps=sft_steps, seed=seed, **options
    )


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The `warmstart.json` of a tiny model folder."""
    return json.loads((Path(folder) / MANIFEST).read_text())


def evaluation_success(
    policy, env_id: str, episodes: int, sampling, *, workflow: str, env_kwargs: Mapping[str, Any]
) -> float:
    """Success of `policy` serving every agent, one episode per evaluation-split seed 0..episodes-1."""
    import pettingllms
    from pettingllms.rollout.engine import RolloutEngine

    env_fn = functools.partial(pettingllms.make, env_id, workflow=workflow, **dict(env_kwargs))
    agents = env_fn().possible_agents
    engine = RolloutEngine(
        env_fn, {"policy": policy}, dict.fromkeys(agents, "policy"), {"policy": sampling}, num_generations=1
    )
    return engine.evaluate(range(episodes), {"split": "eval"}).success_rate


def build_into(
    folder: Path,
    settings: WarmStartSettings,
    log: Callable[[str], None] = lambda message: None,
    *,
    progress: bool = False,
) -> dict[str, Any]:
    """Build the warm-started model and tokenizer into `folder` (saved with `save_pretrained`); return the
    manifest (not written). `log` gets a line per phase; `progress` shows a bar over the fine-tuning steps."""
    from pettingllms.backends.base import SamplingConfig
    from pettingllms.models.tiny import build_model, config_for_tokenizer
    from pettingllms.models.tokenizer import train_tokenizer

    s, timings = settings, {}
    started = mark = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal mark
        timings[name] = round(time.perf_counter() - mark, 2)
        mark = time.perf_counter()
        log(f"  tiny model: {name.removesuffix('_s').replace('_', ' ')} done in {timings[name]:.0f} s")

    demos = _demonstrations(s, s.workflow.split("+"))
    lap("demonstrations_s")
    tokenizer = train_tokenizer(text for demo in demos for text in (demo.prompt, demo.target))
    model = build_model(config_for_tokenizer(tokenizer), s.seed)
    lap("tokenizer_and_model_s")

    # greedy, with room for the longest demonstrated answer and a little more
    longest = max((len(tokenizer(demo.target)["input_ids"]) for demo in demos), default=16)
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=longest + 8, stop=("</answer>",))
    success_before = _greedy_success(model, tokenizer, s, sampling)
    lap("eval_before_s")
    log(f"  tiny model: supervised fine-tuning, {s.sft_steps} steps on {len(demos)} demonstrations")
    sft = supervised_fine_tune(
        model,
        tokenizer,
        [demo.messages() for demo in demos],
        steps=s.sft_steps,
        batch_size=s.batch_size,
        learning_rate=s.learning_rate,
        seed=s.seed,
        progress=progress,
    )
    lap("sft_s")
    success_after = _greedy_success(model, tokenizer, s, sampling)
    lap("eval_after_s")
    with _quiet_transformers():
        model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    timings["total_s"] = round(time.perf_counter() - started, 2)
    evaluation = {
        "split": "eval",
        "seeds": [0, s.eval_episodes],
        "decoding": f"greedy, one episode per seed, max_new_tokens={sampling.max_new_tokens}",
        "success_before": success_before,
        "success_after": success_after,
    }
    return _manifest(s, demos, tokenizer, model, sft, evaluation, timings)


def _greedy_success(model, tokenizer, s: WarmStartSettings, sampling) -> float | None:
    """The build's evaluation of `model` on the first workflow (None when `eval_episodes == 0`)."""
    from pettingllms.backends.hf import HFPolicy

    if s.eval_episodes == 0:
        return None
    policy = HFPolicy(model, tokenizer, seed=s.seed, max_batch_rows=64)
    workflow = s.workflow.split("+")[0]
    return evaluation_success(
        policy, s.env_id, s.eval_episodes, sampling, workflow=workflow, env_kwargs=s.env_kwargs
    )


def _demonstrations(s: WarmStartSettings, workflows: list[str]) -> list:
    """The build's solver demonstrations: episode i plays workflow i mod len(workflows)."""
    rng = np.random.default_rng(s.seed)
    demos = []
    for index, workflow in enumerate(workflows):
        if s.demos_per_role is None:
            seeds = range(index, s.episodes, len(workflows))
        else:
            seeds = itertools.count(index, len(workflows))
        demos += collect_demonstrations(
            s.env_id,
            seeds,
            rng,
            workflow=workflow,
            env_kwargs=s.env_kwargs,
            tool_programs=s.tool_programs,
            program_bugs=s.program_bugs,
            plan_noise=s.plan_noise,
            per_role=s.demos_per_role,
        )
    return demos


def _manifest(s: WarmStartSettings, demos, tokenizer, model, sft, evaluation, timings) -> dict[str, Any]:
    """The build's `warmstart.json`: settings, demonstrations, model, fine-tuning, evaluation, wall times."""
    from pettingllms.models.tiny import count_parameters

    return {
        "format_version": FORMAT_VERSION,
        "settings": s.to_json(),
        "demonstrations": {
            "train_seeds": [0, s.episodes] if s.demos_per_role is None else "from 0 until demos_per_role",
            "examples": len(demos),
            "examples_per_agent": dict(Counter(demo.agent for demo in demos)),
            "tool_programs": s.tool_programs,
            "program_bugs": s.program_bugs,
            "tool_noise": TOOL_NOISE,
            "plan_noise": s.plan_noise,
            "prompt_tokens": prompt_token_stats(tokenizer, demos),
        },
        "model": {"parameters": count_parameters(model), "vocab_size": len(tokenizer)},
        "sft": {"lr_scheduler": "warmup_stable_decay (no warm-up, cosine decay over the last 20%)", **sft},
        "evaluation": evaluation,
        "wall_time": timings,
        "versions": library_versions(),
    }


REPORT_ONLY_SETTINGS = ("eval_episodes",)
"""Settings that change what a build reports (its before/after evaluation), not its weights."""


_DEFAULT_SETTINGS = WarmStartSettings().to_json()
"""What a manifest written before a settings field existed was built with, for that field (its default)."""


def warn_if_different(folder: Path, settings: WarmStartSettings) -> None:
    """Warn when the warm start in `folder` (a cached build, or a study's kept copy) was built with other settings
    than the requested ones (it is used anyway); `REPORT_ONLY_SETTINGS` do not change the weights and are not
    compared."""
    built = {**_DEFAULT_SETTINGS, **read_manifest(folder).get("settings", {})}  # a newer field: its default
    wanted = {key: value for key, value in settings.to_json().items() if key not in REPORT_ONLY_SETTINGS}
    differences = {key: (built.get(key), value) for key, value in wanted.items() if built.get(key) != value}
    if differences:
        shown = ", ".join(f"{key}={new!r} (built: {old!r})" for key, (old, new) in differences.items())
        warnings.warn(
            f"using the tiny model {folder}, built with other settings: {shown}; pass rebuild=True to rebuild a "
            "cached one, or give the new settings their own tag (a study's kept copy is never rebuilt)",
            stacklevel=3,
        )


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Hide transformers' progress bars (e.g. "Writing model shards") for the duration, then restore them."""
    from transformers.utils import logging

    enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            logging.enable_progress_bar()


def _install(staging: Path, target: Path, *, replace: bool) -> None:
    """Move the complete `staging` folder to `target`; with `replace`, an existing `target` is removed first.

    If another process installed `target` meanwhile (and `replace` is off), its copy is kept and ours dropped.
    """
    if target.exists() and (replace or not (target / MANIFEST).is_file()):
        shutil.rmtree(target)
    try:
        os.rename(staging, target)
    except OSError:
        if not (target / MANIFEST).is_file():
            raise
