"""`pettingllms-eval`: a policy on the fixed evaluation suites, metrics to JSON, resumable.

    pettingllms-eval --env plan-path-v0,sokoban-v0 --policy oracle --episodes 100 --output results/oracle.json
    pettingllms-eval --env plan-path-v0 --policy runs/tiny/plan_path_per_role --label "tiny + AT-GRPO" --output results/at.json
    pettingllms-eval --env code-v0 --policy coder=smollm2,tester=oracle --episodes 20 --output results/mix.json

Suites: `pettingllms.eval.suites`; policies: `pettingllms.eval.policy_specs`; metrics: `pettingllms.eval.metrics`.
Decoding is greedy unless `--temperature` > 0; a training run's models are played at the run's completion budget
and thinking setting (what its own evaluations used), other models at the suite's; the settings, seeds, suites
and library versions are written with the results. Finished episodes are cached in `OUTPUT.episodes.jsonl`, keyed by the policies' weights and
every setting that shapes an episode (`pettingllms.eval.cache_key`): rerunning the same command resumes, while new
weights at the same path or other settings play the episodes again. A damaged cache is named (file and line).
The conversations of the episodes played (every step's prompt, completion, rewards and error) go to
`OUTPUT.transcripts.jsonl`, one row per episode tagged with the run key the result names under "transcripts"
(`pettingllms view OUTPUT` shows them; `--no_transcripts` keeps none).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pettingllms
from pettingllms.core.errors import PettingLLMsError
from pettingllms.core.extras import require_extra
from pettingllms.core.outputs import check_writable_file

FORMAT = "pettingllms-eval/1"
DEFAULT_EPISODES = 100
"""Episodes per env when `--episodes` is not given and `--policy` names no training run."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pettingllms-eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", required=True, help="environment id(s), comma-separated")
    parser.add_argument("--policy", required=True, help="a spec for every agent, or agent=spec,agent=spec")
    parser.add_argument("--output", required=True, type=Path, help="results file (JSON)")
    parser.add_argument(
        "--episodes",
        type=int,
        default=None,
        help=f"episodes per env (dataset suites: at most all); default: a training run's own eval_episodes "
        f"when --policy names one (so a run's final figure is reproduced), else {DEFAULT_EPISODES}",
    )
    parser.add_argument("--seed", type=int, default=0, help="first seed of generated suites; sampling seed")
    parser.add_argument(
        "--split",
        default="eval",
        choices=["eval", "val"],
        help="'eval' (default: the reported suites) or 'val' (the validation split of generated instances, for "
        "tuning a recipe without looking at the reported suites)",
    )
    parser.add_argument("--label", default=None, help="the row name on a leaderboard (default: --policy)")
    parser.add_argument("--workflow", default="mas", help="'mas' (default) or 'single'")
    parser.add_argument(
        "--turns",
        default="aec",
        choices=list(pettingllms.TURNS),
        help="'aec' (default): the agents of a turn act in order, each reading the earlier ones' answers; 'joint': "
        "together, each reading the env as the turn began (CoMLRL's turns; `make(..., turns='joint')`)",
    )
    parser.add_argument(
        "--env_kwargs",
        default=None,
        help="JSON keyword arguments for every env; default: a named run's own (for its env), else {}",
    )
    parser.add_argument(
        "--tier", help="every env's difficulty tier (easy..expert, docs/tiers.md), under --env_kwargs"
    )
    _add_sampling_arguments(parser)
    parser.add_argument("--chunk_size", type=int, default=50, help="episodes played together (and cached)")
    parser.add_argument(
        "--env_workers", type=int, default=0, help="processes that step the envs (0: in-process)"
    )
    parser.add_argument("--no_progress", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--no_transcripts",
        action="store_true",
        help="do not keep the episodes' conversations (OUTPUT.transcripts.jsonl, read by `pettingllms view`)",
    )
    return parser


def _add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of how each completion is sampled: decoding, budget, thinking, samples per problem."""
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    parser.add_argument("--top_p", type=float, default=1.0)
    parser.add_argument(
        "--max_new_tokens",
        type=int,
        default=None,
        help="completion budget of a step; default: a run's own (its eval_max_completion_length, else "
        "max_completion_length) for a run's models, else 128 (puzzles) or 512 (code, math)",
    )
    parser.add_argument(
        "--enable_thinking",
        choices=["true", "false"],
        default=None,
        help="the chat template's thinking switch (Qwen3); default: a run's own setting, else the template's",
    )
    parser.add_argument("--samples", type=int, default=1, help="episodes per problem (pass@k for code)")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        require_extra("eval", "pettingllms-eval")
        report = evaluate_command(args, list(sys.argv[1:] if argv is None else argv))
    except (PettingLLMsError, ValueError) as error:
        print(f"pettingllms-eval: error: {error}", file=sys.stderr)
        return 2
    for env_id, result in report["results"].items():
        low, high = result["ci95"]
        progress = f", mean progress {result['mean_progress']:.1f}" if "mean_progress" in result else ""
        print(
            f"{env_id}: success {result['success_rate']:.3f} [{low:.3f}, {high:.3f}] over {result['episodes']}"
            + progress
        )
    print(f"wrote {args.output}")
    return 0


def evaluate_command(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    """Run the evaluation `args` describe; write and return the report."""
    from pettingllms.pools.env_pool import EnvPool

    env_ids = [env_id.strip() for env_id in args.env.split(",") if env_id.strip()]
    unknown = [env_id for env_id in env_ids if env_id not in pettingllms.registry]
    if not env_ids or unknown:
        raise ValueError(
            f"--env {args.env!r}: unknown ids {unknown}; available: {sorted(pettingllms.registry)}"
        )
    if args.episodes is None:
        from pettingllms.eval.policy_specs import run_eval_episodes

        args.episodes = run_eval_episodes(args.policy) or DEFAULT_EPISODES
    if args.samples < 1 or args.episodes < 1:
        raise ValueError(f"--samples={args.samples} and --episodes={args.episodes} must be >= 1")
    cache_path = args.output.with_name(args.output.name + ".episodes.jsonl")
    check_writable_file(args.output, "--output")  # before any policy loads or episode plays
    check_writable_file(cache_path, "the episode cache of --output,")
    if not args.no_transcripts:
        check_writable_file(
            args.output.with_name(args.output.name + ".transcripts.jsonl"), "the transcripts of --output,"
        )
    report: dict[str, Any] = {
        "format": FORMAT,
        "label": args.label or args.policy,
        "policy": args.policy,
        "seed": args.seed,
        "workflow": args.workflow,
        "turns": args.turns,
        "command": ["pettingllms-eval", *argv],
        "versions": versions(),
        "results": {},
    }
    pool = EnvPool(args.env_workers) if args.env_workers > 0 else None
    try:
        for env_id in env_ids:
            report["results"][env_id] = _evaluate_env(
                env_id, args, _env_kwargs(args, env_id), cache_path, pool
            )
    finally:
        if pool is not None:
            pool.close()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    return report


def _env_kwargs(args: argparse.Namespace, env_id: str) -> dict[str, Any]:
    """`--env_kwargs`, else the setting of the runs `--policy` names on `env_id` (`run_env_kwargs`), else {}; on
    top of `--tier`'s arguments, written out (so the suite, the cache key and the results name them). ValueError
    for `--env_kwargs` naming `workflow` or `turns`: flags of their own."""
    from pettingllms.core.registration import spec, tier_arguments
    from pettingllms.eval.policy_specs import run_env_kwargs

    tier = dict(tier_arguments(spec(env_id), args.tier))
    if args.env_kwargs is None:
        return {**tier, **(run_env_kwargs(args.policy, env_id) or {})}
    given = json.loads(args.env_kwargs)
    flags = [key for key in ("workflow", "turns") if key in given]
    if flags:
        raise ValueError(
            f"--env_kwargs names {flags}: give {' and '.join('--' + key for key in flags)} instead"
        )
    return {**tier, **given}


def _evaluate_env(
    env_id: str, args: argparse.Namespace, env_kwargs: dict, cache_path, pool
) -> dict[str, Any]:
    """One env's result: its suite played (cached episodes reused), summarized, with per-episode successes."""
    from tqdm.auto import tqdm

    from pettingllms.eval import metrics
    from pettingllms.eval.cache_key import run_key
    from pettingllms.eval.episode_cache import EpisodeCache
    from pettingllms.eval.policy_specs import load_policies, parse_policy_arg
    from pettingllms.eval.runner import run_suite
    from pettingllms.eval.suites import build_suite

    started = time.perf_counter()
    suite = build_suite(
        env_id, args.episodes, args.seed, env_kwargs, workflow=args.workflow, split=args.split
    )
    suite = _replicated(suite, args.samples)
    agents = pettingllms.make(env_id, workflow=args.workflow, **dict(suite.env_kwargs)).possible_agents
    specs = parse_policy_arg(args.policy, agents)
    loaded = load_policies(specs, env_id, workflow=args.workflow, env_kwargs=suite.env_kwargs, seed=args.seed)
    sampling, samplings = _samplings(env_id, loaded, args)
    settings = _settings(suite, loaded, sampling, samplings, args)
    cache = EpisodeCache(cache_path, run_key(settings, suite, settings["weights_sha256"]), log=_note)
    transcripts = args.output.with_name(args.output.name + ".transcripts.jsonl")
    with tqdm(
        total=len(suite.episodes), desc=f"eval {env_id}", disable=args.no_progress, dynamic_ncols=True
    ) as bar:
        records = run_suite(
            suite,
            loaded.backends,
            loaded.agent_policy,
            samplings,
            cache,
            workflow=args.workflow,
            turns=args.turns,
            seed=args.seed,
            chunk_size=args.chunk_size,
            on_progress=bar.update,
            pool=pool,
            on_chunk=None if args.no_transcripts else _transcript_writer(transcripts, cache.run_key, env_id),
        )
    result = metrics.summarize(env_id, records, samples_per_problem=args.samples)
    result.update(settings, wall_time_s=round(time.perf_counter() - started, 2))
    tier = _suite_tier(env_id, args.tier, env_kwargs)
    if tier is not None:
        result["tier"] = tier
    if not args.no_transcripts:  # the conversations of the episodes played by this run key (pettingllms view)
        result["transcripts"] = {"file": transcripts.name, "run": cache.run_key}
    # per episode, in suite order, for paired comparisons between policies
    result["per_episode"] = {
        "keys": [r.key for r in records],
        "success": [int(r.success) for r in records],
        "parse_errors": [sum(r.errors.values()) for r in records],
        "turns": [r.turns for r in records],  # turns in which the team acted (a success in turn 2: 2)
    }
    progress = [r.progress for r in records]  # the env's progression score at each episode's end, 0-100
    if None not in progress:  # an env without one reports none
        result["per_episode"]["progress"] = progress
    return result


def _suite_tier(env_id: str, tier: str | None, env_kwargs: dict) -> str | None:
    """`tier` when the suite's env arguments are exactly that tier's (`--tier` without overrides), else None: a
    suite another argument changed is not the tier's, and the leaderboard must not show it as the tier."""
    from pettingllms.core.registration import spec, tier_arguments

    return tier if tier is not None and dict(tier_arguments(spec(env_id), tier)) == env_kwargs else None


def _samplings(env_id: str, loaded, args: argparse.Namespace):
    """The flags' sampling, and each backend's: a training run's models take the run's budget and thinking."""
    from pettingllms.backends.base import SamplingConfig
    from pettingllms.eval.suites import eval_max_new_tokens

    sampling = SamplingConfig(
        temperature=args.temperature,
        top_p=args.top_p,
        max_new_tokens=args.max_new_tokens or eval_max_new_tokens(env_id),
        stop=pettingllms.make(env_id).unwrapped.STOP_STRINGS,
        enable_thinking=_thinking(args.enable_thinking),
    )
    return sampling, {
        name: _run_sampling(sampling, loaded.run_settings.get(name), args) for name in loaded.backends
    }


def _transcript_writer(path: Path, run: str, env_id: str):
    """`on_chunk` for `run_suite`: append each played chunk's episodes as transcript rows of `run` to `path`."""
    from pettingllms.core import jsonl
    from pettingllms.eval.runner import transcript_rows

    def write(chunk, rollout) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        jsonl.append(path, [{"run": run, "env": env_id, **row} for row in transcript_rows(chunk, rollout)])

    return write


def _settings(suite, loaded, sampling, samplings, args: argparse.Namespace) -> dict[str, Any]:
    """Every setting that shapes an episode (written with the results and keying the episode cache)."""
    settings = {
        "suite": suite.to_json(),
        "policies": {agent: loaded.resolved[name] for agent, name in loaded.agent_policy.items()},
        "sampling": sampling_json(sampling),
        "seed": args.seed,
        "workflow": args.workflow,
        "turns": args.turns,
        "chunk_size": args.chunk_size,
        "weights_sha256": {agent: loaded.weights[name] for agent, name in loaded.agent_policy.items()},
    }
    if loaded.run_settings:  # a run's model is evaluated at the run's budget and thinking setting
        settings["run_sampling"] = {
            agent: sampling_json(samplings[name])
            for agent, name in loaded.agent_policy.items()
            if name in loaded.run_settings
        }
    return settings


def _thinking(flag: str | None) -> bool | None:
    return None if flag is None else flag == "true"


def _run_sampling(sampling, source, args: argparse.Namespace):
    """`sampling` for a policy; one from a training run (`source`) takes the run's completion budget and thinking
    setting unless `--max_new_tokens` / `--enable_thinking` are given."""
    if source is None:
        return sampling
    return source.sampling(sampling, args.max_new_tokens, _thinking(args.enable_thinking))


def _replicated(suite, samples: int):
    """`suite` with each episode played `samples` times (keys `KEY#j`), for pass@k."""
    from pettingllms.eval.suites import Episode, Suite

    if samples == 1:
        return suite
    replicated = tuple(
        Episode(f"{e.key}#{j}", e.seed, e.options) for e in suite.episodes for j in range(samples)
    )
    return Suite(suite.env_id, suite.env_kwargs, replicated, suite.description, suite.split)


def _note(message: str) -> None:
    print(f"pettingllms-eval: {message}", file=sys.stderr)


def sampling_json(sampling) -> dict[str, Any]:
    return {
        "decoding": "greedy" if sampling.temperature == 0 else "sampling",
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": sampling.top_k,
        "max_new_tokens": sampling.max_new_tokens,
        "stop": list(sampling.stop),
    }


def versions() -> dict[str, str]:
    """Versions of Python and the libraries that shape results (those installed)."""
    from importlib import metadata

    found = {"python": platform.python_version(), "pettingllms": pettingllms.__version__}
    for package in ("torch", "transformers", "numpy", "pettingzoo", "math-verify", "evaluate"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


if __name__ == "__main__":
    sys.exit(main())
