"""A served code-v0 shared by looping clients and one honest client: how long the honest client's step takes.

    .venv-openenv/bin/python benchmarks/bench_served_fairness.py                         # this checkout, 3 repeats
    .venv-openenv/bin/python benchmarks/bench_served_fairness.py --checkout ../before    # another checkout's server
    .venv-openenv/bin/python benchmarks/bench_served_fairness.py --json benchmarks/results/served_fairness.json

`pettingllms serve code-v0` (default settings; the checkout's own code, run as `python -m pettingllms.cli` from
it) on a loopback port. `--loopers` clients submit `while True: pass` as the coder, step after step (each program
runs to code-v0's 2 s time limit); after `--warm_up` seconds one more client resets to the bundled problem of seed
3 and submits its reference solution, whose 10 hidden tests are 10 programs. The figure is that client's step, wall
clock, `--repeats` times (a fresh server each), with the step's `info["queue_wait_s"]` where the server reports it
(from issue 61 on); a step still waiting after `--step_timeout` seconds is recorded as at least that long (the
median counts it so). The anchor is the same scenario served by the checkout given with `--checkout` (the code before
issue 61: workers taken first come, first served), run in the same invocation when given.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOOP = "```python\nwhile True:\n    pass\n```"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(checkout: Path) -> tuple[subprocess.Popen, str]:
    """`pettingllms serve code-v0` from `checkout`, once its /health answers."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "pettingllms.cli", "serve", "code-v0", "--port", str(port)],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server from {checkout} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit(f"the server from {checkout} did not come up")


def honest_answer() -> str:
    import pettingllms

    env = pettingllms.make("code-v0")
    env.reset(seed=3)
    return env.unwrapped.solution("coder")


def one_repeat(checkout: Path, loopers: int, warm_up: float, answer: str, step_timeout: float) -> dict:
    from pettingllms.integrations.openenv_server import AnswerAction, PettingLLMsClient

    process, url = start_server(checkout)
    stop = threading.Event()

    def loop_forever() -> None:
        steps = 0
        with PettingLLMsClient(base_url=url) as client:
            while not stop.is_set():
                result = client.reset(seed=steps)
                while not result.done and not stop.is_set():
                    result = client.step(AnswerAction(answer=LOOP))
                    steps += 1

    try:
        with ThreadPoolExecutor(max_workers=loopers) as pool:
            running = [pool.submit(loop_forever) for _ in range(loopers)]
            time.sleep(warm_up)
            honest = PettingLLMsClient(base_url=url, message_timeout_s=step_timeout)
            honest.reset(seed=3)
            started = time.perf_counter()
            try:
                result = honest.step(AnswerAction(answer=answer))
            except Exception as error:  # noqa: BLE001 - the client's own timeout (its exception type varies)
                result = None
                print(f"  the honest step did not finish in {step_timeout:g} s ({type(error).__name__})")
            seconds = time.perf_counter() - started
            stop.set()
            process.kill()  # the loopers' clients see the server go: their threads end
            for future in running:
                future.exception()
    finally:
        process.kill()
        process.wait(timeout=60)
    info = {} if result is None else result.observation.info
    return {"step_s": seconds if result is not None else None, "waited_at_least_s": seconds,
            "queue_wait_s": info.get("queue_wait_s"), "solved": info.get("hidden_pass_ratio")}  # fmt: skip


def measure(checkout: Path, args: argparse.Namespace, answer: str) -> dict:
    runs = []
    for _ in range(args.repeats):
        runs.append(one_repeat(checkout, args.loopers, args.warm_up, answer, args.step_timeout))
        print(f"  {checkout.name}: the honest step took {runs[-1]['waited_at_least_s']:.1f} s", flush=True)
    return {
        "checkout": str(checkout),
        "runs": runs,
        "median_step_s": statistics.median(r["waited_at_least_s"] for r in runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loopers", type=int, default=4)
    parser.add_argument("--warm_up", type=float, default=6.0, help="seconds the loopers run before the step")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--step_timeout", type=float, default=120.0, help="give up on the honest step after this"
    )
    parser.add_argument("--checkout", type=Path, default=None, help="the anchor: another checkout's server")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    answer = honest_answer()
    figures = {
        "settings": {**vars(args), "checkout": str(args.checkout), "json": None, "cores": os.cpu_count()}
    }
    figures["ours"] = measure(ROOT, args, answer)
    print(f"ours: the honest step took {figures['ours']['median_step_s']:.1f} s (median of {args.repeats})")
    if args.checkout is not None:
        figures["anchor"] = measure(args.checkout.resolve(), args, answer)
        print(f"anchor ({args.checkout}): {figures['anchor']['median_step_s']:.1f} s")
        print(
            f"ratio anchor / ours: {figures['anchor']['median_step_s'] / figures['ours']['median_step_s']:.1f}x"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
