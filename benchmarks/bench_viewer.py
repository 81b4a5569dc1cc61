"""How fast `pettingllms view` builds and a browser shows the page of a run of 30 steps x 1,024 samples.

    .venv/bin/python benchmarks/bench_viewer.py [--steps 30] [--json benchmarks/results/viewer.json]

A synthetic run in the real dump schema (`pettingllms.rollout.samples.dump_rows`): per step 32 instances x 4 turns
x 2 agents x K=4 candidates, prompts of ~1,500 characters (one per group, as tree groups share theirs) and
completions of ~200. Measured: the page build (`build_view`), the page's size, the script's own drawing time
(`data-render-ms`, the last step with every instance shown), and headless Chromium's wall time to load and dump
the page. Anchor, same run: Chromium loading a static page of the same completions as one `<pre>` (the cost of
the bytes alone, no script).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from pettingllms.backends.base import Generation
from pettingllms.presentation.viewer import build_view
from pettingllms.rollout.samples import EpisodeResult, Rollout, Sample, dump_rows

INSTANCES, TURNS, AGENTS, K = 32, 4, ("tool", "plan"), 4


def synthetic_run(folder: Path, steps: int, rng: np.random.Generator) -> int:
    """Write a run folder with `steps` dumps; return the number of samples."""
    (folder / "rollouts").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"env_id": "plan-path-v0", "num_generations": K}))
    metrics = []
    total = 0
    for step in range(1, steps + 1):
        samples = []
        for instance in range(INSTANCES):
            for turn in range(TURNS):
                for agent in AGENTS:
                    prompt = f"# plan-path-v0 - turn {turn + 1}\n" + "row . . # . G\n" * 100
                    rewards = rng.random(K)
                    for k in range(K):
                        text = "<answer>" + " ".join(rng.choice(list("UDLR"), 90)) + "</answer>"
                        samples.append(Sample(
                            f"{instance}/{turn}/{agent}", instance, turn, agent, agent, prompt, text,
                            float(rewards[k]), float(rewards[k]) / 2, float(rewards[k]) / 2, Generation(text),
                            committed=k == int(rewards.argmax()), advantage=float(rewards[k] - rewards.mean()),
                        ))  # fmt: skip
        episodes = [EpisodeResult(i, bool(rng.random() < 0.5), TURNS, {}) for i in range(INSTANCES)]
        rows = dump_rows(Rollout(samples, episodes), step)
        (folder / "rollouts" / f"step_{step}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        metrics.append({"step": step, "train/success_rate": step / steps, "train/reward/tool": 0.5})
        total += len(samples)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in metrics))
    return total


def chromium_load(browser: str, url: str, profile: Path) -> tuple[float, str]:
    """Seconds for headless Chromium to load `url` and dump its DOM, and the DOM."""
    started = time.perf_counter()
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
         "--virtual-time-budget=30000", "--dump-dom", url],
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    return time.perf_counter() - started, dom


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("no chromium on PATH (scripts/setup.sh --with-browser installs it)")
    work = Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    samples = synthetic_run(work / "run", args.steps, np.random.default_rng(0))
    started = time.perf_counter()
    page = build_view(work / "run")
    build_s = time.perf_counter() - started
    completions = [json.loads(line)["completion"] for f in sorted((work / "run" / "rollouts").iterdir())
                   for line in f.read_text().splitlines()]  # fmt: skip
    anchor = work / "anchor.html"
    anchor.write_text(
        "<!doctype html><html><body><pre>" + html.escape("\n".join(completions)) + "</pre></body></html>"
    )
    loads, anchors, renders = [], [], []
    for repeat in range(args.repeats):
        seconds, dom = chromium_load(browser, page.as_uri(), work / f"profile{repeat}")
        loads.append(seconds)
        renders.append(int(re.search(r'data-render-ms="(\d+)"', dom).group(1)))
        anchors.append(chromium_load(browser, anchor.as_uri(), work / f"anchor{repeat}")[0])
    figures = {
        "steps": args.steps, "samples": samples, "page_mb": round(page.stat().st_size / 2**20, 2),
        "build_s": round(build_s, 2), "script_render_ms_median": int(np.median(renders)),
        "chromium_load_s_median": round(float(np.median(loads)), 2),
        "anchor_static_pre_load_s_median": round(float(np.median(anchors)), 2),
        "load_vs_anchor": round(float(np.median(loads) / np.median(anchors)), 2),
    }  # fmt: skip
    for key, value in figures.items():
        print(f"{key}: {value}")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
