"""Stop-string detection over a long completion: the HF backend's incremental `StopDetector` against re-decoding the
whole completion after every token (what `HFPolicy` did before issue 25, the anchor).

1. Detection alone: the token ids of one completion of `--tokens` tokens (default 2,048) sampled from the built-in
   tiny model (temperature 1; positions extended past the model's 2,048 and eos not ending the row, so that it runs
   that long), fed one token at a time to the detector and to the anchor with a stop string that does not occur
   (so both read the whole completion; a stop that fires late costs the same); both must agree. The median of
   `--repeats` timings, and the cost per token over the first and the last 256 tokens, which shows the growth.
2. End to end: `HFPolicy.generate` of `--rows` such completions of one prompt (one batch), with the detector and
   with the anchor in its place; the same seed gives both the same tokens.

    .venv/bin/python benchmarks/bench_stop_detection.py [--model PATH] [--json benchmarks/results/stop_detection.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

STOP = ("</never>",)


class RedecodingDetector:
    """The anchor, with `StopDetector`'s interface: decode every id so far after each token, then apply the rule."""

    def __init__(self, decode, stops, *, thinking_open=False):
        self.decode, self.stops, self.ids, self.text = decode, tuple(stops), [], None
        self.thinking_open = thinking_open

    def push(self, token: int) -> bool:
        from pettingllms.backends.base import cut_at_stop

        self.ids.append(int(token))
        self.text = cut_at_stop(self.decode(self.ids), self.stops, thinking_open=self.thinking_open)
        return self.text is not None


def detection_seconds(make, decode, ids: list[int]) -> tuple[float, float, float]:
    """(whole completion, per token over the first 256, per token over the last 256), seconds."""
    detector, marks = make(decode, STOP), [time.perf_counter()]
    for token in ids:
        if detector.push(token):
            raise AssertionError("the benchmark's stop string fired")
        marks.append(time.perf_counter())
    window = min(256, len(ids))
    return (
        marks[-1] - marks[0],
        (marks[window] - marks[0]) / window,
        (marks[-1] - marks[-1 - window]) / window,
    )


def load_policy(model: str, tokens: int):
    from pettingllms.backends.hf import HFPolicy

    policy = HFPolicy.from_pretrained(model, seed=0)
    policy.model.config.max_position_embeddings = max(
        policy.model.config.max_position_embeddings, tokens + 512
    )
    policy.eos_token_ids = frozenset()  # the completion runs its whole budget
    return policy


def end_to_end(policy, prompt: str, rows: int, tokens: int) -> dict:
    import pettingllms.backends.hf as hf
    from pettingllms.backends.base import SamplingConfig, StopDetector

    sampling = SamplingConfig(temperature=1.0, max_new_tokens=tokens, stop=STOP)
    figures, outputs = {}, {}
    for name, detector in (("redecoding", RedecodingDetector), ("incremental", StopDetector)):
        hf.StopDetector = detector
        try:
            policy.reseed(1)
            start = time.perf_counter()
            outputs[name] = [g.completion_ids for g in policy.generate([prompt], rows, sampling)[0]]
            figures[f"{name}_s"] = round(time.perf_counter() - start, 2)
        finally:
            hf.StopDetector = StopDetector
    assert outputs["redecoding"] == outputs["incremental"], "the two detectors changed the completions"
    assert all(len(ids) == tokens for ids in outputs["incremental"])
    figures["speedup"] = round(figures["redecoding_s"] / figures["incremental_s"], 2)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", default=None, help="a saved model folder (default: the built-in tiny model)"
    )
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--rows", type=int, default=8, help="completions per generate call, end to end")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args()

    import pettingllms
    from pettingllms.backends.base import SamplingConfig, StopDetector
    from pettingllms.warmstart.build import ensure_tiny_model

    model = args.model or str(ensure_tiny_model("plan-path-v0"))
    policy = load_policy(model, args.tokens)
    env = pettingllms.make("plan-path-v0")
    env.reset(seed=0)
    prompt = str(env.observe("tool"))
    sampled = policy.generate([prompt], 1, SamplingConfig(temperature=1.0, max_new_tokens=args.tokens))[0][0]
    ids = list(sampled.completion_ids)

    def decode(token_ids):
        return policy.tokenizer.decode(list(token_ids), skip_special_tokens=True)

    results: dict = {"model": Path(model).name, "tokens": len(ids), "characters": len(sampled.text)}
    for name, make in (("redecoding", RedecodingDetector), ("incremental", StopDetector)):
        runs = [detection_seconds(make, decode, ids) for _ in range(args.repeats)]
        results[name] = {
            "detection_s": round(statistics.median(run[0] for run in runs), 4),
            "first_256_us_per_token": round(statistics.median(run[1] for run in runs) * 1e6, 1),
            "last_256_us_per_token": round(statistics.median(run[2] for run in runs) * 1e6, 1),
        }
        print(name, json.dumps(results[name]))
    results["detection_speedup"] = round(
        results["redecoding"]["detection_s"] / results["incremental"]["detection_s"], 1
    )
    results["end_to_end"] = {"rows": args.rows, **end_to_end(policy, prompt, args.rows, args.tokens)}
    print("end to end", json.dumps(results["end_to_end"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
