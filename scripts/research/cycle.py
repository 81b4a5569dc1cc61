"""The cycle every study runs, written once: build or find the warm start (`warm_start`), train a run unless
it is `finished` (`train`, resumed from its checkpoint when its flags say `--resume true`), evaluate a policy
with `pettingllms-eval`, cached by its report (`evaluate`), and record a row on the ledger (`record`). A study
stopped at any point and started again redoes only what it had not finished: a finished run is not trained
again, an evaluation whose report exists is not run again, and a row the ledger holds as it is is not appended
again (`research.ledger.record`).

The trainer, the evaluation and the warm-start builder are imported inside the functions, so that a script's
`--report` runs without torch."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from research import ledger

REPO = Path(__file__).resolve().parents[2]
"""The checkout the scripts run from: the code version each recorded row names (`ledger.code_version`)."""
WALL_TIME = "wall_time_s.txt"
"""The file in a run folder that holds the seconds its training took (`train(..., wall_time=True)`)."""


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The rows of a run's metrics.jsonl at `path`, one per non-blank line, in order (the trainer writes a
    step-0 row with the evaluation before training, then one row per step, the last with its final
    evaluation)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def training_steps(path: Path) -> dict[int, dict[str, Any]]:
    """step -> the training row of a run's metrics.jsonl at `path` (one that counts `train/completions_total`),
    the last one written for each step: a step a resumed run trained again counts once."""
    return {row["step"]: row for row in read_metrics(path) if "train/completions_total" in row}


def finished(
    metrics_path: Path,
    max_steps: int | None = None,
    budget: int | None = None,
    *,
    final_evaluation: bool = True,
) -> bool:
    """Whether the run that logs to `metrics_path` is done, so that training it again would add nothing.

    The row judged is the log's last row, or without `final_evaluation` its last training row (one that
    counts `train/completions_total`; the step-0 evaluation does not). The run is finished when that row
    exists and
    - with `final_evaluation`: it holds an evaluation (`eval/success_rate`) at a step > 0, as the row of the
      step at which the trainer stops does (a run killed before that row was written is not finished);
    - with `max_steps` or `budget` (the caps; either may be None): it reached one of them, `step >= max_steps`
      or `train/completions_total >= budget` (a row without the count sampled none). Without either, a run
      counts as finished whatever caps it ran to.

    A missing or empty log is not finished."""
    if not metrics_path.is_file():
        return False
    rows = read_metrics(metrics_path)
    if not final_evaluation:
        rows = [row for row in rows if "train/completions_total" in row]
    if not rows:
        return False
    last = rows[-1]
    step = last.get("step", 0)
    if final_evaluation and not (step > 0 and "eval/success_rate" in last):
        return False
    if max_steps is None and budget is None:
        return True
    return (max_steps is not None and step >= max_steps) or (
        budget is not None and last.get("train/completions_total", 0) >= budget
    )


def train(
    argv: list[str], *, caps: bool = True, final_evaluation: bool = True, wall_time: bool = False
) -> Path:
    """Train the run `argv` describes (`pettingllms-train`'s flags, read by `arguments.parse`) in this
    process with `ATGRPOTrainer` (printing its log lines), which resumes from the run's newest checkpoint when
    argv sets `--resume true`; or skip it when its metrics.jsonl says it is `finished`, judged with
    `final_evaluation` and, with `caps`, under argv's `max_steps` and `max_completions` (without: a run that
    ended counts, whatever caps it ran to). With `wall_time`, a run trained here leaves the seconds it took in
    `WALL_TIME` (a skipped run keeps the file it has). Returns the run folder (`--output_dir`)."""
    from pettingllms.trainers.at_grpo import ATGRPOTrainer
    from pettingllms.trainers.settings.arguments import parse

    args = parse(argv)
    folder = Path(args.output_dir)
    limits = (args.max_steps, args.max_completions) if caps else (None, None)
    if not finished(folder / "metrics.jsonl", *limits, final_evaluation=final_evaluation):
        started = time.perf_counter()
        ATGRPOTrainer(args, log=print).train()
        if wall_time:
            (folder / WALL_TIME).write_text(f"{time.perf_counter() - started:.1f}\n")
    return folder


def training_seconds(folder: Path) -> float | None:
    """The training seconds that `train(..., wall_time=True)` wrote in run `folder` (None where it wrote
    none)."""
    path = folder / WALL_TIME
    return float(path.read_text()) if path.is_file() else None


def eval_result(output: Path, env_id: str) -> dict[str, Any]:
    """The result for `env_id` in the `pettingllms-eval` report at `output`."""
    return json.loads(output.read_text())["results"][env_id]


def evaluate(argv: list[str], output: Path, env_id: str) -> dict[str, Any]:
    """Run `pettingllms-eval ARGV` in this process unless its report `output` exists (a study started again
    re-reads what it evaluated); return the report's result for `env_id`. `argv` is the whole command line
    (the report records it) and must write the report to `output` (`--output OUTPUT`; ValueError otherwise);
    `output`'s folder is created. A non-zero exit status raises RuntimeError naming the evaluation
    (`output`'s stem) and the argv."""
    from pettingllms.eval.cli import main as eval_main

    written = argv[argv.index("--output") + 1] if "--output" in argv[:-1] else None
    if written != str(output):
        raise ValueError(f"the argv writes its report to {written}, not {output}: {' '.join(argv)}")
    if not output.is_file():
        output.parent.mkdir(parents=True, exist_ok=True)
        if eval_main(argv) != 0:
            raise RuntimeError(f"pettingllms-eval failed for {output.stem}: {' '.join(argv)}")
    return eval_result(output, env_id)


WARM_STARTS = "warm_starts"
"""The folder beside a study's table (and the ledger) that keeps the study's warm starts, committed with its rows:
a rebuild is not byte-identical (its manifest holds wall times; its demonstrations and fine-tuning may differ from
machine to machine), so a study whose runs span machines trains every run from the kept copy."""


def warm_start(
    env_id: str, settings: dict[str, Any], variant: tuple[int, int] | None = None, *, keep: Path | None = None
) -> Path:
    """The tiny model warm-started for `env_id` with `settings` (`ensure_tiny_model`'s keywords: `env_kwargs`,
    `workflow`, `tag`, `demos_per_role`, `sft_steps`, ...), built on first use and cached under its tag. A
    `variant` (demonstrations per role, SFT steps: a smoke run's) replaces those two settings and is built
    under its own tag, `<tag>_<demos>d_<steps>s`, beside the study's.

    With `keep` (the folder of the study's table) the study's own warm start (no `variant`) is the copy kept in
    `keep/WARM_STARTS/<its cache folder's name>`: used as it is when kept (with a warning when it was built with
    other settings, as for a cached build), else built (or found in the cache), copied there whole and returned
    from there."""
    from pettingllms.warmstart.build import (
        MANIFEST,
        build_settings,
        ensure_tiny_model,
        tiny_model_dir,
        warn_if_different,
    )

    if variant is not None:
        demos, steps = variant
        tag = f"{settings['tag']}_{demos}d_{steps}s"
        return ensure_tiny_model(
            env_id, **{**settings, "demos_per_role": demos, "sft_steps": steps, "tag": tag}
        )
    if keep is None:
        return ensure_tiny_model(env_id, **settings)
    name = tiny_model_dir(
        env_id,
        settings.get("workflow", "mas"),
        untrained=settings.get("sft_steps") == 0,
        tag=settings.get("tag"),
    ).name
    kept = keep / WARM_STARTS / name
    if not (kept / MANIFEST).is_file():
        built = ensure_tiny_model(env_id, **settings)
        staging = kept.with_name(f".{name}-copying")
        shutil.rmtree(staging, ignore_errors=True)  # a copy an earlier process left half done
        shutil.copytree(built, staging)
        shutil.rmtree(kept, ignore_errors=True)  # a folder without a manifest is no warm start
        staging.rename(kept)
    else:
        recipe = {key: value for key, value in settings.items() if key not in ("tag", "log", "rebuild")}
        warn_if_different(kept, build_settings(env_id, **recipe))
    return kept


def record(out: Path, rule: ledger.Rule, row: dict[str, Any], *, warm_start: Path | None) -> list[dict]:
    """Append `row` (measured on a run that started from the model folder `warm_start`; None for none) to the
    ledger beside the table `out`, with this checkout's code version (`ledger.record`: not again when the
    ledger already holds it as it is); the table, rebuilt by `rule` and written to `out` (its folder
    created)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return ledger.record(out, rule, row, repo=REPO, warm_start=warm_start)
