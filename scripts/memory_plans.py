"""The memory planner's table of what fits where, for the paper's models, written into docs/scale.md.

    .venv/bin/python scripts/memory_plans.py          # rewrite the table in docs/scale.md
    .venv/bin/python scripts/memory_plans.py --check  # exit 1 if the table there is not what the planner says

Rows: Qwen3-1.7B and Qwen3-8B (configs/paper/*/plan_path.yaml: bf16 compute on float32 master weights, 4,096-token
completions, the config's 3,328-token prompts), shared and per-role, on 1 GPU and on 8 GPUs (8 torchrun ranks) of 80
and 141 GiB; generation in process (hf) without and with activation checkpointing, and with vLLM engines (with
checkpointing, as the paper configs have it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "scale.md"
BEGIN, END = "<!-- memory-plans: begin -->", "<!-- memory-plans: end -->"


def table() -> str:
    import pettingllms
    from pettingllms.trainers.policies.memory_plan import GIB, Hardware, plan_run
    from pettingllms.trainers.settings.arguments import parse

    lines = [
        "| model | layout | GPUs | generation | activation checkpointing | fits | micro-batch (rows) | rows per "
        "sampler call | vLLM share per engine | peak GiB (generation / update) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    settings = (("hf", "false"), ("hf", "true"), ("vllm", "true"))
    for model in ("qwen3-1.7b", "qwen3-8b"):
        for layout in ("shared", "per_role"):
            for gpus, gib in ((1, 80), (8, 80), (1, 141), (8, 141)):
                for backend, checkpointing in settings:
                    args = parse(
                        [
                            "--config",
                            str(ROOT / "configs" / "paper" / model / "plan_path.yaml"),
                            "--use_cpu",
                            "true",
                            "--policy_layout",
                            layout,
                            "--activation_checkpointing",
                            checkpointing,
                            "--generation_backend",
                            backend,
                        ]
                    )
                    agents = list(pettingllms.make(args.env_id, workflow=args.workflow).possible_agents)
                    plan = plan_run(args, agents, Hardware(gpus, gib * GIB, ranks=gpus))
                    device = max(plan.devices, key=lambda d: d.peak)
                    where = f"{gpus} x {gib} GiB" + (" (torchrun, 8 ranks)" if gpus > 1 else "")
                    rows = (
                        "-" if backend == "vllm" else f"{plan.generation_rows or '-'} of {plan.rows_per_call}"
                    )
                    share = "-" if plan.engine_share is None else f"{plan.engine_share:.2f}"
                    lines.append(
                        f"| Qwen3-{model.split('-')[1].upper()} | {layout} | {where} | {backend} | {checkpointing} | "
                        f"{'yes' if plan.fits else '**no**'} | {plan.micro_batch or '-'} | {rows} | {share} | "
                        f"{device.generation_peak / GIB:.0f} / {device.update_peak / GIB:.0f} |"
                    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if docs/scale.md's table is stale")
    check = parser.parse_args().check
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    fresh = text[:start] + "\n" + table() + "\n" + text[end:]
    if check:
        if fresh != text:
            print(f"{DOC} is stale: run python scripts/memory_plans.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
