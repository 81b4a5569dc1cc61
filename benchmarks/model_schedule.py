"""A model of one rollout at the paper's scale on GPUs, in the lockstep and the async schedule (no GPU needed).

The figures of `bench_schedule.py` are measured on CPU with a tiny model; this projects what the two schedules
cost for the paper's plan-path config (Qwen3-1.7B, 128 instances x K=4, per-role: tool + plan, one GPU each, the
paper's resource pools) with every assumption stated and settable:

- Episodes: each turn is the tool agent's K candidates, then the K greedy probes of the plan agent (turn credit),
  then the plan agent's K candidates; an episode's requests follow one another. Turns per episode are drawn from
  `--turns` (the measured turns of the benchmark's episodes by default).
- Completion lengths: each row's length is `fraction x --budget` with the fraction drawn from the measured
  completion-length fractions of the benchmark's rollout (`results/schedule.json`, `length_fractions` per agent;
  a completion that hit the tiny budget hits the paper's): the shape of a real rollout's spread, scaled. Prompts
  are `--prompt-tokens` long.
- Decoding (vLLM-like continuous batching on each policy's GPU, at most `--max-rows` rows at once): one step costs
  `max(memory, compute) + --step-overhead-ms`, memory = (weights + the KV cache of every running row) / the
  usable HBM bandwidth, compute = 2 x parameters x rows / the usable FLOP/s; a request's prefill costs
  2 x parameters x prompt tokens / the usable FLOP/s on its GPU. Defaults: H200 (4.8 TB/s, 989 TFLOP/s bf16) at
  70% and 50% of peak, Qwen3-1.7B in bf16 (1.72e9 parameters, 112 KiB of KV cache per token: 28 layers x 8 KV
  heads x 128 x 2 x 2 bytes), 2 ms of scheduling per step. No GPU check has been run for this repository: these
  are roofline figures, not measurements.
- Lockstep: rounds; in each, the tool GPU serves every waiting tool request, then the plan GPU every waiting plan
  request (one call each; all rows start together, the call ends with its longest row), then every episode moves
  on. Async: each GPU admits a request as soon as its episode makes it, and an episode moves on as soon as its own
  rows end; the two GPUs work at the same time.

    python benchmarks/model_schedule.py [--results benchmarks/results/schedule.json] [--json out.json]
"""

from __future__ import annotations

import argparse
import heapq
import json
from pathlib import Path

import numpy as np

AGENTS = ("tool", "plan")


class Roofline:
    """Step and prefill times of one GPU serving one model (module docstring)."""

    def __init__(self, args):
        self.weights = args.parameters * 2
        self.kv = args.kv_bytes_per_token
        self.bandwidth = args.hbm_tb_s * 1e12 * args.bandwidth_share
        self.flops = args.tflops * 1e12 * args.flops_share
        self.parameters = args.parameters
        self.overhead = args.step_overhead_ms / 1e3

    def step(self, rows: int, context_tokens: float) -> float:
        memory = (self.weights + context_tokens * self.kv) / self.bandwidth
        compute = 2 * self.parameters * rows / self.flops
        return max(memory, compute) + self.overhead

    def prefill(self, tokens: int) -> float:
        return 2 * self.parameters * tokens / self.flops


def episodes(
    args, fractions: dict[str, np.ndarray], turns: np.ndarray, rng
) -> list[list[tuple[str, list[int]]]]:
    """Each episode's requests in order: (agent whose GPU serves it, its rows' completion lengths)."""
    plan = []
    for _ in range(args.instances):
        requests = []
        for _ in range(int(rng.choice(turns))):
            for agent, source in (
                ("tool", "tool"),
                ("plan", "plan"),
                ("plan", "plan"),
            ):  # candidates, probes, plan
                lengths = np.maximum(1, np.round(rng.choice(fractions[source], args.k) * args.budget)).astype(
                    int
                )
                requests.append((agent, lengths.tolist()))
        plan.append(requests)
    return plan


def static_call(roof: Roofline, lengths: list[int], prompt: int, max_rows: int) -> float:
    """Seconds of one call whose rows all start together, at most `max_rows` running at once (the others are
    admitted as running rows end), under continuous batching."""
    clock, running, waiting = 0.0, [], list(reversed(lengths))  # pop() admits in request order
    while waiting or running:
        admitted = [waiting.pop() for _ in range(min(max_rows - len(running), len(waiting)))]
        if admitted:
            clock += roof.prefill(prompt * len(admitted))
            running += [[length, 0] for length in admitted]
        clock += roof.step(len(running), sum(prompt + made for _, made in running))
        for row in running:
            row[1] += 1
        running = [row for row in running if row[1] < row[0]]
    return clock


def lockstep(roof: Roofline, plan, args) -> dict:
    position = [0] * len(plan)
    busy = dict.fromkeys(AGENTS, 0.0)
    clock = 0.0
    while any(position[e] < len(requests) for e, requests in enumerate(plan)):
        waiting = {agent: [] for agent in AGENTS}
        for e, requests in enumerate(plan):
            if position[e] < len(requests):
                waiting[requests[position[e]][0]].append(e)
        for agent in AGENTS:  # one GPU at a time
            lengths = [length for e in waiting[agent] for length in plan[e][position[e]][1]]
            if lengths:
                seconds = static_call(roof, lengths, args.prompt_tokens, args.max_rows)
                clock += seconds
                busy[agent] += seconds
            for e in waiting[agent]:
                position[e] += 1
    return {"seconds": clock, "idle_share": {a: round(1 - busy[a] / clock, 3) for a in AGENTS}}


def asynchronous(roof: Roofline, plan, args) -> dict:
    """Event-driven: each GPU steps its running rows; a request is admitted when its episode makes it."""
    gpus = {agent: _Gpu(roof, args) for agent in AGENTS}
    pending = [(0.0, e, 0) for e in range(len(plan))]  # (time the episode makes request i, episode, i)
    heapq.heapify(pending)
    clock = 0.0
    while pending or any(gpu.running or gpu.queue for gpu in gpus.values()):
        next_step = min(
            (gpu.clock for gpu in gpus.values() if gpu.running or gpu.queue), default=float("inf")
        )
        if pending and pending[0][0] <= next_step:
            at, e, i = heapq.heappop(pending)
            agent, lengths = plan[e][i]
            gpus[agent].submit(at, e, i, lengths)
            continue
        gpu = min((g for g in gpus.values() if g.running or g.queue), key=lambda g: g.clock)
        for e, i, ended in gpu.advance():
            clock = max(clock, ended)
            if i + 1 < len(plan[e]):
                heapq.heappush(pending, (ended, e, i + 1))
    return {
        "seconds": clock,
        "idle_share": {a: round(1 - gpus[a].busy / clock, 3) for a in AGENTS},
    }


class _Gpu:
    """One GPU under continuous batching, stepped one decoding step at a time."""

    def __init__(self, roof: Roofline, args):
        self.roof, self.args = roof, args
        self.clock = 0.0
        self.busy = 0.0
        self.queue: list[tuple[float, int, int, int]] = []  # (arrival, episode, request, length) per row
        self.running: list[list] = []  # [episode, request, length, made]
        self.left: dict[tuple[int, int], int] = {}  # rows of a request still running

    def submit(self, at: float, episode: int, request: int, lengths: list[int]) -> None:
        if not self.running and not self.queue:
            self.clock = max(self.clock, at)
        self.queue += [(at, episode, request, length) for length in lengths]
        self.left[(episode, request)] = len(lengths)

    def advance(self) -> list[tuple[int, int, float]]:
        """One step (admitting what has arrived); the requests whose last row ended, with the time."""
        start = self.clock
        if not self.running:
            self.clock = max(self.clock, min(row[0] for row in self.queue))
            start = self.clock
        room = self.args.max_rows - len(self.running)
        count = 0
        while count < min(room, len(self.queue)) and self.queue[count][0] <= self.clock:
            count += 1  # rows arrive in time order: the admitted ones are the queue's head
        admitted, self.queue = self.queue[:count], self.queue[count:]
        if admitted:
            self.clock += self.roof.prefill(self.args.prompt_tokens * len(admitted))
            self.running += [[e, i, length, 0] for _, e, i, length in admitted]
        context = sum(self.args.prompt_tokens + row[3] for row in self.running)
        self.clock += self.roof.step(len(self.running), context)
        self.busy += self.clock - start
        done = []
        for row in self.running:
            row[3] += 1
            if row[3] >= row[2]:
                key = (row[0], row[1])
                self.left[key] -= 1
                if self.left[key] == 0:
                    done.append((row[0], row[1], self.clock))
        self.running = [row for row in self.running if row[3] < row[2]]
        return done


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--results", default="benchmarks/results/schedule.json", help="bench_schedule.py's output"
    )
    parser.add_argument("--instances", type=int, default=128)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--budget", type=int, default=4096, help="max_completion_length")
    parser.add_argument("--prompt-tokens", type=int, default=1024)
    parser.add_argument("--max-rows", type=int, default=256, help="rows a GPU decodes at once")
    parser.add_argument("--parameters", type=float, default=1.72e9)
    parser.add_argument("--kv-bytes-per-token", type=float, default=112 * 1024)
    parser.add_argument("--hbm-tb-s", type=float, default=4.8)
    parser.add_argument("--bandwidth-share", type=float, default=0.7)
    parser.add_argument("--tflops", type=float, default=989.0)
    parser.add_argument("--flops-share", type=float, default=0.5)
    parser.add_argument("--step-overhead-ms", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    measured = json.loads(Path(args.results).read_text())
    trace = measured["trace"]
    fractions = {agent: np.array(trace["length_fractions"][agent]) for agent in AGENTS}
    turns = np.array(trace["episode_turns"])
    rng = np.random.default_rng(args.seed)
    plan = episodes(args, fractions, turns, rng)
    roof = Roofline(args)
    figures = {"lockstep": lockstep(roof, plan, args), "async": asynchronous(roof, plan, args)}
    figures["speedup"] = round(figures["lockstep"]["seconds"] / figures["async"]["seconds"], 2)
    for schedule in ("lockstep", "async"):
        figures[schedule]["seconds"] = round(figures[schedule]["seconds"], 1)
    figures["assumptions"] = {key: value for key, value in vars(args).items() if key not in ("json",)}
    figures["assumptions"]["trace_from"] = trace["source"]
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
