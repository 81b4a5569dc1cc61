"""A short supervised warm start of a pretrained model on an environment's solver demonstrations.

An instruct model of 135M parameters does not follow the envs' answer formats zero-shot (SmolLM2-135M-Instruct
echoes its prompt in 96-100% of its answers on every env), so RL from it has no reward to learn from. This is
the step the built-in tiny model takes too (`pettingllms.warmstart.build`), for a model you bring:

    warm_start_pretrained(base, target, "math-v0", workflow="mas", env_kwargs={"dataset": "generated",
                          "difficulty": 1}, demos_per_role=400, steps=60)

plays demonstrations on the training split (`pettingllms.warmstart.demos.collect_demonstrations`, the same per
role), fine-tunes every weight of `base` on them with TRL's `SFTTrainer`, the loss on the answers only
(`pettingllms.warmstart.sft`), and saves the model, its tokenizer and `warmstart.json` (settings, losses, wall
time) to `target`. The tokenizer keeps its vocabulary; its chat template becomes the project's ChatML template
with `{% generation %}` markers (`pettingllms.models.tokenizer.CHAT_TEMPLATE`, the format of Qwen's and SmolLM2's
chat without a default system prompt), which the saved model is then prompted with, in training and evaluation
alike. A model whose tokenizer has no `<|im_start|>` / `<|im_end|>` tokens is refused (the template would split
them into pieces). The folder is written whole or not at all; the same base, settings and seed give the same
weights on one machine.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pettingllms.models.tokenizer import CHAT_TEMPLATE, IM_END, IM_START
from pettingllms.warmstart.demos import collect_demonstrations

MANIFEST = "warmstart.json"


@dataclasses.dataclass(frozen=True)
class PretrainedWarmStart:
    """The settings of `warm_start_pretrained` (the module docstring), checked on construction."""

    env_id: str
    workflow: str = "mas"
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    demos_per_role: int = 400
    steps: int = 60
    batch_size: int = 8
    learning_rate: float = 5e-5
    tool_programs: float = 0.0
    program_bugs: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("demos_per_role", "steps", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate={self.learning_rate} must be > 0")

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "env_kwargs": dict(self.env_kwargs)}


def warm_start_pretrained(
    base: str | Path, target: str | Path, settings: PretrainedWarmStart
) -> dict[str, Any]:
    """Warm-start the model folder `base` by `settings` into the folder `target` (module docstring); returns the
    manifest written there. `target` must not exist yet (FileExistsError: a finished warm start is not rebuilt)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pettingllms.warmstart.sft import supervised_fine_tune

    target = Path(target)
    if target.exists():
        raise FileExistsError(f"{target} exists: a warm start is built once (remove it to rebuild)")
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(base)
    missing = [token for token in (IM_START, IM_END) if token not in tokenizer.get_vocab()]
    if missing:
        raise ValueError(f"{base}: its tokenizer has no {missing} token: the ChatML template cannot be used")
    tokenizer.chat_template = CHAT_TEMPLATE
    demos = collect_demonstrations(
        settings.env_id,
        itertools.count(),
        np.random.default_rng(settings.seed),
        workflow=settings.workflow,
        env_kwargs=settings.env_kwargs,
        tool_programs=settings.tool_programs,
        program_bugs=settings.program_bugs,
        per_role=settings.demos_per_role,
    )
    model = AutoModelForCausalLM.from_pretrained(base, torch_dtype=torch.float32)
    sft = supervised_fine_tune(
        model,
        tokenizer,
        [demo.messages() for demo in demos],
        steps=settings.steps,
        batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        seed=settings.seed,
    )
    manifest = {
        "base": str(base),
        "settings": settings.to_json(),
        "demonstrations": len(demos),
        "sft": sft,
        "wall_s": time.perf_counter() - started,
        "torch_threads": torch.get_num_threads(),
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest
