"""What a `pettingllms-eval` result file must hold before a page or the leaderboard shows it.

`result_problems(report)` lists, in words, every way `report` (a parsed result file) breaks the format that
`pettingllms-eval` writes (`pettingllms-eval/1`); an empty list means the leaderboard and `pettingllms view` may
read it. The checks are those a reader relies on, whoever wrote the file:

- `format` is "pettingllms-eval/1"; `label` a string of 1 to `MAX_LABEL` characters; `results` an object;
- every env id a string of `ENV_ID` characters; every env result an object with
  `success_rate` a finite number in [0, 1], `ci95` two finite numbers with 0 <= low <= success_rate <= high <= 1,
  `episodes` an integer >= 1 (not a boolean), with `success_rate * episodes` a whole number of episodes;
  `mean_progress`, when given, a finite number in [0, 100]; `tier`, when given, a tier name (`TIER_NAMES`);
- `suite.env_kwargs`, when given, an object; `transcripts`, when given, an object naming a `file` and a `run` (the
  file a name relative to the result's folder: `transcripts_path`); `per_episode.success`, when given, one 0/1 per
  episode summing to the successes the rate claims.

Pure standard library, and the tier names (`pettingllms.envs.tiers`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from pettingllms.envs.tiers import TIER_NAMES

FORMAT = "pettingllms-eval/1"
MAX_LABEL = 200
ENV_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")
"""An env id as registries write them (`plan-path-v0`, `textarena/TicTacToe-v0`)."""


def _number(value: Any) -> bool:
    """A finite int or float (a bool is not a number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def result_problems(report: Any) -> list[str]:
    """Every way `report` breaks the result format (module docstring); [] when it has none."""
    if not isinstance(report, dict):
        return [f"not a JSON object but {type(report).__name__}"]
    if report.get("format") != FORMAT:
        return [f"not a {FORMAT} result (format: {report.get('format')!r})"]
    problems = []
    label = report.get("label")
    if not isinstance(label, str) or not 1 <= len(label) <= MAX_LABEL:
        problems.append(f"label must be a string of 1 to {MAX_LABEL} characters, not {_short(label)}")
    results = report.get("results")
    if not isinstance(results, dict):
        return [*problems, f"results must be an object of env id -> result, not {type(results).__name__}"]
    for env_id, result in results.items():
        if not ENV_ID.match(env_id):
            problems.append(f"env id {_short(env_id)} is not an env id ({ENV_ID.pattern})")
            continue
        problems += [f"{env_id}: {problem}" for problem in env_result_problems(result)]
    return problems


def env_result_problems(result: Any) -> list[str]:
    """Every way one env's result breaks the format (module docstring)."""
    if not isinstance(result, dict):
        return [f"the result must be an object, not {type(result).__name__}"]
    rate, ci95, episodes = result.get("success_rate"), result.get("ci95"), result.get("episodes")
    problems = []
    if not _number(rate) or not 0 <= rate <= 1:
        problems.append(f"success_rate must be a finite number in [0, 1], not {_short(rate)}")
    if not isinstance(episodes, int) or isinstance(episodes, bool) or episodes < 1:
        problems.append(f"episodes must be an integer >= 1, not {_short(episodes)}")
    if not (isinstance(ci95, list) and len(ci95) == 2 and all(_number(x) for x in ci95)):
        problems.append(f"ci95 must be two finite numbers [low, high], not {_short(ci95)}")
    elif not problems and not 0 <= ci95[0] <= rate <= ci95[1] <= 1:
        problems.append(f"ci95 {ci95} must hold success_rate {rate} within [0, 1]")
    if not problems and abs(rate * episodes - round(rate * episodes)) > 1e-6 * episodes:
        problems.append(f"success_rate {rate} is no whole number of successes out of {episodes} episodes")
    progress = result.get("mean_progress")
    if progress is not None and not (_number(progress) and 0 <= progress <= 100):
        problems.append(f"mean_progress must be a finite number in [0, 100], not {_short(progress)}")
    tier = result.get("tier")
    if tier is not None and tier not in TIER_NAMES:
        problems.append(f"tier must be one of {list(TIER_NAMES)}, not {_short(tier)}")
    suite = result.get("suite")
    if suite is not None and not (isinstance(suite, dict) and isinstance(suite.get("env_kwargs", {}), dict)):
        problems.append(f"suite must be an object whose env_kwargs is an object, not {_short(suite)}")
    transcripts = result.get("transcripts")
    if transcripts is not None and not (
        isinstance(transcripts, dict)
        and isinstance(transcripts.get("file"), str)
        and isinstance(transcripts.get("run"), str)
    ):
        problems.append(
            f"transcripts must be an object with a file and a run (strings), not {_short(transcripts)}"
        )
    per_episode = result.get("per_episode")
    if per_episode is not None and not problems:
        problems += _per_episode_problems(per_episode, round(rate * episodes), episodes)
    return problems


def _per_episode_problems(per_episode: Any, successes: int, episodes: int) -> list[str]:
    if not isinstance(per_episode, dict):
        return [f"per_episode must be an object, not {_short(per_episode)}"]
    flags = per_episode.get("success")
    if flags is None:
        return []
    if not isinstance(flags, list) or any(flag not in (0, 1) or isinstance(flag, float) for flag in flags):
        return ["per_episode.success must be a list of 0/1"]
    if len(flags) != episodes or sum(flags) != successes:
        return [
            f"per_episode.success holds {sum(flags)} successes in {len(flags)} episodes; the result claims "
            f"{successes} in {episodes}"
        ]
    return []


def transcripts_path(result_file: Path, name: str) -> Path:
    """The transcripts file `name` of the result at `result_file`: a plain name or a relative path inside the
    result's folder. Raises ValueError for an absolute path, a `..` part, or a link that leads outside."""
    folder = result_file.parent.resolve()
    if PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"transcripts file {name!r} is not a path inside the result's folder {folder}")
    path = (folder / name).resolve()
    if not path.is_relative_to(folder):
        raise ValueError(f"transcripts file {name!r} leads outside the result's folder {folder} (to {path})")
    return path


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
