"""Generation backends on the built-in tiny model (CPU): tokens per second, and the share of rollout time spent
outside generation.

1. Tokens/s: the HF backend (`HFPolicy`, the anchor) and the vLLM backend (`VLLMPolicy`, when vLLM is installed)
   on the same prompts (`plan-path-v0` tool and plan observations of 32 training instances), n=4 samples each,
   temperature 1, up to 24 new tokens, stop at `</answer>`; one warm-up call, then the median of `--repeats`.
2. Rollout overhead: `RolloutEngine.collect` of 16 instances x K=4 (AT-GRPO, tool + plan, one policy per role),
   with each backend; the time inside `generate` is measured around the backend calls, and everything else
   (env steps of every candidate, prompt rendering, orchestration) is "outside generation". Target: < 5%.

    .venv-vllm/bin/python benchmarks/bench_generation.py [--json benchmarks/results/generation.json]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import statistics
import time

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")


class TimedBackend:
    """A backend wrapper that adds up the wall time of `generate` calls."""

    def __init__(self, backend):
        self.backend, self.seconds = backend, 0.0

    def generate(self, prompts, n, sampling, seeds=None):
        start = time.perf_counter()
        try:
            return self.backend.generate(prompts, n, sampling, seeds)
        finally:
            self.seconds += time.perf_counter() - start


def prompts_for(instances: int) -> list[str]:
    import pettingllms

    texts = []
    for seed in range(instances):
        env = pettingllms.make("plan-path-v0")
        env.reset(seed=seed)
        texts.append(str(env.observe("tool")))
        env.step("<answer>U</answer>")
        texts.append(str(env.observe("plan")))
    return texts


def tokens_per_second(backend, prompts, sampling, repeats: int) -> dict:
    backend.generate(prompts[:4], 4, sampling)  # warm-up
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = backend.generate(prompts, 4, sampling)
        seconds = time.perf_counter() - start
        rates.append(sum(len(g.completion_ids) for group in out for g in group) / seconds)
    return {"tokens_per_s": round(statistics.median(rates), 1), "runs": [round(r, 1) for r in rates]}


def rollout_overhead(make_backend, model: str) -> dict:
    import pettingllms
    from pettingllms.backends.base import SamplingConfig
    from pettingllms.rollout.engine import RolloutEngine

    sampling = SamplingConfig(temperature=1.0, max_new_tokens=24, stop=("</answer>",))
    backends = {agent: TimedBackend(make_backend(model, seed)) for seed, agent in enumerate(("tool", "plan"))}
    engine = RolloutEngine(
        functools.partial(pettingllms.make, "plan-path-v0"),
        backends,
        {"tool": "tool", "plan": "plan"},
        dict.fromkeys(backends, sampling),
        num_generations=4,
        seed=0,
        schedule="lockstep",  # one call at a time: the time inside generate is a part of the wall time
    )
    engine.collect(range(100, 104), {"split": "train"})  # warm-up
    for backend in backends.values():
        backend.seconds = 0.0
    start = time.perf_counter()
    rollout = engine.collect(range(16), {"split": "train"})
    total = time.perf_counter() - start
    inside = sum(b.seconds for b in backends.values())
    return {
        "rollout_s": round(total, 3),
        "generation_s": round(inside, 3),
        "outside_generation_s": round(total - inside, 3),
        "outside_share": round((total - inside) / total, 4),
        "samples": len(rollout.samples),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args()

    from pettingllms.backends.base import SamplingConfig
    from pettingllms.backends.hf import HFPolicy
    from pettingllms.warmstart.build import ensure_tiny_model

    model = str(ensure_tiny_model("plan-path-v0"))
    prompts = prompts_for(32)
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=24, stop=("</answer>",))
    makers = {"hf": lambda path, seed: HFPolicy.from_pretrained(path, seed=seed)}
    if importlib.util.find_spec("vllm") is not None:
        from pettingllms.backends.vllm_engine import VLLMPolicy

        engines: dict[int, VLLMPolicy] = {}  # one engine per seed, reused by both measurements
        makers["vllm"] = lambda path, seed: engines.setdefault(seed, VLLMPolicy(path, seed=seed))
    results: dict = {"model": model, "prompts": len(prompts), "n": 4, "max_new_tokens": 24, "backends": {}}
    for name, make in makers.items():
        start = time.perf_counter()
        backend = make(model, 0)
        started = time.perf_counter() - start
        figures = tokens_per_second(backend, prompts, sampling, args.repeats)
        figures["start_s"] = round(started, 1)
        figures["rollout"] = rollout_overhead(make, model)
        results["backends"][name] = figures
        print(name, json.dumps(figures))
    if "vllm" in results["backends"]:
        ratio = results["backends"]["vllm"]["tokens_per_s"] / results["backends"]["hf"]["tokens_per_s"]
        results["vllm_over_hf"] = round(ratio, 2)
        print(f"vLLM / HF tokens per second: {ratio:.2f}x")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
