"""`pettingllms view PATH`: a static HTML page to look inside a training run or a `pettingllms-eval` result.

`build_view(path, out_dir)` reads

- a training run folder (`pettingllms.runs.layout`): `config.json`, `metrics.jsonl` (the learning curve) and the
  rollout dumps `rollouts/step_N.jsonl` (`dump_rollouts`, rows of `pettingllms.rollout.samples.ROW_FIELDS`);
- or a `pettingllms-eval` result file (`pettingllms-eval/1`) and its `OUTPUT.transcripts.jsonl` (the rows of
  the run key each env result names under "transcripts");

and writes `out_dir/index.html`: one self-contained file (data embedded as JSON, the page's script and style
inline; no server, no network; it opens from `file://`). For a run, per step and instance, the tree AT-GRPO
sampled: for every turn and agent the K candidates with their completion, `reward_team`, `reward_local`, reward
and advantage, the committed one marked, and the statistics of the group each candidate was compared in (its
`group_id`: size, mean and standard deviation of the reward); filters by step, agent, instance and success
(also read from the page's address: `#step=3&agent=plan&instance=2&success=solved`); the learning curve and each
agent's reward per step. For an evaluation, every episode as a conversation (each step's prompt, completion,
rewards and error), filtered by env and success. Prompts are stored once each (a tree group's candidates share
one), so a run of 30 steps x 1,000 samples stays a page of a few MB.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from pettingllms.core.errors import ConfigError
from pettingllms.eval.result_schema import FORMAT as EVAL_FORMAT
from pettingllms.eval.result_schema import result_problems, transcripts_path
from pettingllms.presentation.viewer_page import render_page
from pettingllms.runs.layout import RunLayout

_STEP_FILE = re.compile(r"^step_(\d+)\.jsonl$")


def build_view(path: Path, out_dir: Path | None = None) -> Path:
    """Write the page of `path` (a run folder or an eval result file) into `out_dir` (default: `RUN/view/`, or
    `OUTPUT.view/` beside an eval result); return the page's path. Raises `ConfigError` for anything else."""
    path = Path(path)
    if path.is_dir():
        data, default_out = run_data(path), path / "view"
    elif path.is_file() and path.suffix == ".json":
        data, default_out = eval_data(path), path.with_name(path.name + ".view")
    else:
        raise ConfigError(f"{path}: neither a run folder nor a pettingllms-eval result file (.json)")
    out = Path(out_dir) if out_dir is not None else default_out
    out.mkdir(parents=True, exist_ok=True)
    page = out / "index.html"
    page.write_text(render_page(data))
    return page


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSON Lines file; a last line cut by a killed writer is left out."""
    rows = []
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, 1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as error:
            if number < len(lines):
                raise ConfigError(f"{path}:{number}: not JSON ({error})") from error
    return rows


class _Prompts:
    """Each distinct prompt once; samples refer to it by index."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]


def run_data(folder: Path) -> dict[str, Any]:
    """What the page of a training run shows (module docstring)."""
    run = RunLayout(folder)
    if not run.config.is_file():
        raise ConfigError(f"{folder}: not a run folder (no config.json)")
    try:
        config = run.read_config()
    except json.JSONDecodeError as error:
        raise ConfigError(f"{run.config}: not JSON ({error})") from error
    metrics = _read_jsonl(run.metrics) if run.metrics.is_file() else []
    if not isinstance(config, dict) or not all(isinstance(row, dict) for row in metrics):
        raise ConfigError(f"{folder}: config.json and every line of metrics.jsonl must be JSON objects")
    prompts = _Prompts()
    steps = []
    dumps = run.root / "rollouts"
    files = sorted(
        (int(m.group(1)), p) for p in dumps.glob("step_*.jsonl") if (m := _STEP_FILE.match(p.name))
    ) if dumps.is_dir() else []  # fmt: skip
    for step, file in files:
        try:
            steps.append({"step": step, "samples": _step_samples(_read_jsonl(file), prompts)})
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ConfigError(f"{file}: not a rollout dump of ROW_FIELDS rows ({error!r})") from error
    settings = {key: config.get(key) for key in SHOWN_SETTINGS if key in config}
    return {
        "kind": "run",
        "title": f"run {folder.resolve().name}",
        "settings": settings,
        "metrics": [_curve_row(row) for row in metrics],
        "steps": steps,
        "prompts": prompts.texts,
        "note": ""
        if files
        else "This run has no rollout dumps: train with --dump_rollouts true to see its trees.",
    }


SHOWN_SETTINGS = (
    "env_id", "env_kwargs", "workflow", "grouping", "policy_layout", "num_generations", "alpha", "temperature",
    "instances_per_step", "learning_rate", "model_name_or_path", "seed",
)  # fmt: skip
"""The run settings printed at the top of a run's page."""


def _curve_row(row: dict[str, Any]) -> dict[str, Any]:
    """A metrics row cut to what the curves draw: the step, the two success rates and each agent's reward."""
    keys = ("train/success_rate", "eval/success_rate")
    kept = {key: row[key] for key in row if key in keys or key.startswith("train/reward/")}
    return {"step": row.get("step"), **kept}


def _step_samples(rows: list[dict[str, Any]], prompts: _Prompts) -> list[dict[str, Any]]:
    """A step's samples with their group's statistics (size, mean and std of the reward) and prompt index."""
    groups: dict[str, list[float]] = {}
    for row in rows:
        groups.setdefault(row["group_id"], []).append(float(row["reward"]))
    stats = {key: _stats(values) for key, values in groups.items()}
    samples = []
    for row in rows:
        samples.append(
            {
                "instance": row["instance"],
                "episode": row.get("episode"),
                "turn": row["turn"],
                "agent": row["agent"],
                "policy": row.get("policy"),
                "group": row["group_id"],
                "group_stats": stats[row["group_id"]],
                "prompt": prompts.add(row["prompt"]),
                "completion": row["completion"],
                "reward": row["reward"],
                "reward_team": row["reward_team"],
                "reward_local": row["reward_local"],
                "advantage": row["advantage"],
                "committed": bool(row.get("committed", True)),
                "error": row.get("error"),
                "program": row.get("program"),
                "success": row.get("episode_success"),
            }
        )
    return samples


def _stats(values: list[float]) -> dict[str, float]:
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return {"n": len(values), "mean": round(mean, 6), "std": round(std, 6)}


def eval_data(path: Path) -> dict[str, Any]:
    """What the page of a `pettingllms-eval` result shows (module docstring)."""
    try:
        report = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not JSON ({error})") from error
    problems = result_problems(report)
    if problems:
        raise ConfigError(f"{path}: not a valid {EVAL_FORMAT} result: " + "; ".join(problems[:5]))
    prompts = _Prompts()
    envs = []
    for env_id, result in report["results"].items():
        envs.append(_env_episodes(path, env_id, result, prompts))
    return {
        "kind": "eval",
        "title": f"evaluation {report.get('label') or path.name}",
        "settings": {
            "policy": report.get("policy"),
            "workflow": report.get("workflow"),
            "seed": report.get("seed"),
        },
        "envs": envs,
        "prompts": prompts.texts,
    }


def _env_episodes(path: Path, env_id: str, result: dict[str, Any], prompts: _Prompts) -> dict[str, Any]:
    """One env's summary and its episodes' conversations (those its transcripts hold)."""
    summary = {key: result.get(key) for key in ("success_rate", "ci95", "episodes")}
    named = result.get("transcripts")
    episodes: dict[str, dict[str, Any]] = {}
    try:
        transcripts = None if named is None else transcripts_path(path, named["file"])
    except ValueError as error:
        return {"env": env_id, "summary": summary, "episodes": [], "note": f"not read: {error}"}
    if transcripts is not None and transcripts.is_file():
        for number, row in enumerate(_read_jsonl(transcripts), 1):
            if isinstance(row, dict) and row.get("run") == named["run"] and row.get("env") == env_id:
                if not _transcript_row(row):
                    raise ConfigError(f"{transcripts}:{number}: not a transcript row (key, success, steps)")
                steps = [{**step, "prompt": prompts.add(step["prompt"])} for step in row["steps"]]
                episodes[row["key"]] = {"key": row["key"], "success": row["success"], "steps": steps}
    order = (result.get("per_episode") or {}).get("keys") or list(episodes)
    shown = [episodes[key] for key in order if key in episodes]
    missing = len(order) - len(shown)
    note = (
        f"{missing} of {len(order)} episodes have no transcript (played before transcripts were kept, or with "
        "--no_transcripts)"
        if missing
        else ""
    )
    return {"env": env_id, "summary": summary, "episodes": shown, "note": note}


def _transcript_row(row: dict[str, Any]) -> bool:
    """Whether `row` holds what the page draws of an episode: a string key, a success flag and steps, each an
    object with a string prompt."""
    steps = row.get("steps")
    return (
        isinstance(row.get("key"), str)
        and isinstance(row.get("success"), (bool, int))
        and isinstance(steps, list)
        and all(isinstance(step, dict) and isinstance(step.get("prompt"), str) for step in steps)
    )
