"""The built-in warm-started tiny model: built once from solver demonstrations, then cached.

`ensure_tiny_model(env_id, workflow=...)` returns `<home>/models/tiny-<env_id>-<workflow>-v1/` (home from
`pettingllms.models.home`), a folder loadable with `HFPolicy.from_pretrained` / `from_pretrained`:
`config.json`, `model.safetensors`, `generation_config.json`, the tokenizer files and `warmstart.json` (the
settings, seeds, wall times, SFT losses and greedy success before/after). If the folder exists and holds
`warmstart.json` it is returned as is (whatever settings it was built with, unless `rebuild=True`); otherwise
it is built:

1. demonstrations on training seeds `0 .. demo_episodes-1` (`pettingllms.models.demos`);
2. a byte-level BPE tokenizer trained on their prompts and targets (`pettingllms.models.tokenizer`);
3. the tiny Qwen3 initialised from `seed` (`pettingllms.models.tiny`);
4. supervised fine-tuning with TRL's `SFTTrainer` on the conversational examples, loss on the assistant turn only
   (its content and `<|im_end|>`), AdamW, seeded by `seed`;
5. greedy success of the untrained and the trained model on `eval_episodes` evaluation-split seeds, one episode
   each (`pettingllms.models.evaluate`; skipped when `eval_episodes == 0`).

The build writes only into a temporary folder beside the target (renamed into place when complete, so a
half-built model is never returned) and a temporary trainer folder; no global RNG state survives it (TRL seeds
the global generators; they are restored afterwards). The default `sft_steps` is chosen so that plan-path on
5x5 grids lands between "never" and "always" (see `DEFAULT_SFT_STEPS`), leaving room for RL.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pettingllms.models import home, training
from pettingllms.models.demos import PLAN_NOISE, TOOL_NOISE, collect_demonstrations

FORMAT_VERSION = 1
DEFAULT_SFT_STEPS = 150
MANIFEST = "warmstart.json"


def tiny_model_dir(env_id: str = "plan-path-v0", workflow: str = "mas") -> Path:
    """The cache folder of the tiny model for `env_id` and `workflow` (it may not exist yet)."""
    return home.models_dir() / f"tiny-{env_id}-{workflow}-v{FORMAT_VERSION}"


def ensure_tiny_model(
    env_id: str = "plan-path-v0",
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    workflow: str = "mas",
    rebuild: bool = False,
    sft_steps: int = DEFAULT_SFT_STEPS,
    seed: int = 0,
    demo_episodes: int | None = None,
    eval_episodes: int = 200,
    batch_size: int = 32,
    learning_rate: float = 1e-3,
) -> Path:
    """Return the cached tiny model folder for `env_id`/`workflow`, building it first if needed (module docs).

    Args:
        env_id, env_kwargs, workflow: the environment the demonstrations and the evaluation come from.
        rebuild: build even if the cache exists (the old folder is replaced once the new one is complete).
        sft_steps: optimizer steps of the warm start (0: save the untrained model).
        seed: seeds the model's initialisation, the noise of the demonstrations and the trainer.
        demo_episodes: training episodes played for demonstrations (default: enough for one pass over
            `sft_steps * batch_size` examples).
        eval_episodes: evaluation-split episodes for the before/after success (0: skip the evaluation).
        batch_size, learning_rate: of the SFT.
    """
    target = tiny_model_dir(env_id, workflow)
    if (target / MANIFEST).is_file() and not rebuild:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        manifest = _build(
            staging,
            env_id=env_id,
            env_kwargs=dict(env_kwargs or {}),
            workflow=workflow,
            sft_steps=sft_steps,
            seed=seed,
            demo_episodes=demo_episodes,
            eval_episodes=eval_episodes,
            batch_size=batch_size,
            learning_rate=learning_rate,
        )
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        _install(staging, target, replace=rebuild)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The `warmstart.json` of a tiny model folder."""
    return json.loads((Path(folder) / MANIFEST).read_text())


def _build(
    folder: Path,
    *,
    env_id: str,
    env_kwargs: dict[str, Any],
    workflow: str,
    sft_steps: int,
    seed: int,
    demo_episodes: int | None,
    eval_episodes: int,
    batch_size: int,
    learning_rate: float,
) -> dict[str, Any]:
    """Build the model into `folder`; return the manifest."""
    from pettingllms.models.evaluate import success_rate
    from pettingllms.models.tiny import build_model, config_for_tokenizer, count_parameters
    from pettingllms.models.tokenizer import train_tokenizer
    from pettingllms.policies.base import SamplingConfig
    from pettingllms.policies.hf import HFPolicy

    if sft_steps < 0 or eval_episodes < 0 or batch_size < 1:
        raise ValueError(
            f"sft_steps={sft_steps}, eval_episodes={eval_episodes} must be >= 0, batch_size >= 1"
        )
    started = time.perf_counter()
    timings: dict[str, float] = {}
    episodes = demo_episodes if demo_episodes is not None else max(64, (sft_steps * batch_size + 1) // 2)
    rng = np.random.default_rng(seed)
    demos = collect_demonstrations(env_id, range(episodes), rng, workflow=workflow, env_kwargs=env_kwargs)
    timings["demonstrations_s"] = time.perf_counter() - started

    mark = time.perf_counter()
    tokenizer = train_tokenizer(text for demo in demos for text in (demo.prompt, demo.target))
    model = build_model(config_for_tokenizer(tokenizer), seed)
    timings["tokenizer_s"] = time.perf_counter() - mark
    eval_seeds = list(range(eval_episodes))
    # greedy, room for the longest demonstrated answer (+ eos) and a little more
    longest = max((len(tokenizer(demo.target)["input_ids"]) for demo in demos), default=16)
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=longest + 8, stop=("</answer>",))

    def measure() -> float | None:
        if not eval_seeds:
            return None
        policy = HFPolicy(model, tokenizer, seed=seed, max_batch_rows=64)
        return success_rate(
            policy, env_id, eval_seeds, workflow=workflow, env_kwargs=env_kwargs, sampling=sampling
        )

    mark = time.perf_counter()
    success_before = measure()
    timings["eval_before_s"] = time.perf_counter() - mark

    mark = time.perf_counter()
    losses = training.supervised_fine_tune(
        model,
        tokenizer,
        [demo.messages() for demo in demos],
        steps=sft_steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
    )
    timings["sft_s"] = time.perf_counter() - mark

    mark = time.perf_counter()
    success_after = measure()
    timings["eval_after_s"] = time.perf_counter() - mark

    with _quiet_transformers():
        model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    timings["total_s"] = time.perf_counter() - started
    return {
        "format_version": FORMAT_VERSION,
        "env_id": env_id,
        "env_kwargs": env_kwargs,
        "workflow": workflow,
        "seed": seed,
        "demonstrations": {
            "train_seeds": [0, episodes],
            "examples": len(demos),
            "tool_noise": TOOL_NOISE,
            "plan_noise": PLAN_NOISE,
            "prompt_tokens": training.prompt_token_stats(tokenizer, demos),
        },
        "model": {"parameters": count_parameters(model), "vocab_size": len(tokenizer)},
        "sft": {"steps": sft_steps, "batch_size": batch_size, "learning_rate": learning_rate, "lr_scheduler": "constant_with_warmup", **losses},
        "evaluation": {
            "split": "eval",
            "seeds": [0, eval_episodes],
            "decoding": f"greedy, one episode per seed, max_new_tokens={sampling.max_new_tokens}",
            "success_before": success_before,
            "success_after": success_after,
        },
        "wall_time": {name: round(value, 2) for name, value in timings.items()},
        "versions": training.library_versions(),
    }


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
