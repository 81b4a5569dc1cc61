"""The content key of an evaluation's cached episodes: what the policies are and every setting that shapes an episode.

`run_key(settings, suite, weights)` is the sha256 of the run's settings (env, env kwargs, workflow, sampling, token
limits, seed, chunking, resolved policies), the exact episode list of the suite (keys, seeds, reset options), the
content digest of every model policy's weights (`weights_digest`), the pettingllms version and the seed derivation
scheme (`core.seeding.SEEDING_VERSION`). Episodes cached under
one key are reused only by a run with the same key, so new weights at the same path, or any changed setting, play
their episodes again.

What a key cannot see: an OpenAI-compatible endpoint's weights (it is keyed by its model name and URL only) and the
content of a dataset file named in env kwargs (keyed by its path).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import pettingllms
from pettingllms.core.seeding import SEEDING_VERSION
from pettingllms.eval.suites import Suite


def weights_digest(model: Any, tokenizer: Any) -> str:
    """sha256 of a loaded model's state (every tensor's name, dtype, shape and bytes, in name order), its
    generation config and its tokenizer (vocabulary, merges, special tokens, chat template)."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{name}|{flat.dtype}|{tuple(tensor.shape)}\n".encode())
        digest.update(flat.view(torch.uint8).numpy())
    generation = getattr(model, "generation_config", None)
    digest.update((generation.to_json_string() if generation is not None else "").encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    vocabulary = (
        backend.to_str() if backend is not None else json.dumps(tokenizer.get_vocab(), sort_keys=True)
    )
    digest.update(vocabulary.encode())
    digest.update(json.dumps(tokenizer.special_tokens_map, sort_keys=True, default=str).encode())
    digest.update(str(getattr(tokenizer, "chat_template", None)).encode())
    return digest.hexdigest()


def run_key(settings: Mapping[str, Any], suite: Suite, weights: Mapping[str, str | None]) -> str:
    """The cache key of one env's evaluation (see the module docstring); `weights` maps each agent to its policy's
    `weights_digest` (None for policies without weights: baselines, endpoints)."""
    episodes = [[episode.key, episode.seed, dict(episode.options)] for episode in suite.episodes]
    content = {
        "settings": dict(settings),
        "episodes": episodes,
        "weights": dict(weights),
        "pettingllms": pettingllms.__version__,
        "seeding": SEEDING_VERSION,
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
