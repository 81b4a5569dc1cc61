"""`Trackers`: the run's metrics sent to the experiment trackers of `report_to`, through transformers' own
integration callbacks (`TensorBoardCallback`, `WandbCallback`), as `Trainer.train` would drive them.

The AT-GRPO loop is not `Trainer.train`, so this class plays its part: `begin` is `on_train_begin` (TensorBoard
writes under `output_dir/tensorboard/`, wandb starts a run named `run_name`; `WANDB_MODE=offline` keeps it local),
`log(step, metrics)` is `on_log` at `global_step = step`, `end` is `on_train_end`. Only numbers are sent; the
run's `eval/...` metrics keep their names and every other one is shown under `train/` (the callbacks' naming).
"""

from __future__ import annotations

import os
from typing import Any

from pettingllms.core.errors import ConfigError
from pettingllms.runs.layout import RunLayout

TRACKER_PACKAGES = {"tensorboard": "tensorboard", "wandb": "wandb"}
"""report_to name -> the package to install for it."""
TRACKERS = tuple(TRACKER_PACKAGES)
"""The `report_to` integrations AT-GRPO feeds (transformers' own callbacks), each tested."""


class Trackers:
    """The trackers `args.report_to` names (none: every method does nothing)."""

    def __init__(self, args, run: RunLayout, *, enabled: bool = True):
        """Build transformers' callbacks for `args.report_to` (none when not `enabled`: a rank other than 0);
        `ConfigError` names a tracker's missing package."""
        from transformers import TrainerControl, TrainerState
        from transformers.integrations import TensorBoardCallback, get_reporting_integration_callbacks

        self.args = args
        self.state = TrainerState(is_local_process_zero=True, is_world_process_zero=True)
        self.state.max_steps = args.max_steps
        self.control = TrainerControl()
        self.run = run
        integrations = get_reporting_integration_callbacks(args.report_to) if enabled else []
        self.callbacks = [callback() for callback in integrations]
        for callback in self.callbacks:
            if isinstance(callback, TensorBoardCallback):
                callback.logging_dir = str(run.tensorboard)  # read by its on_train_begin

    def begin(self, step: int) -> None:
        """Open every tracker (a resumed run continues at `step`); wandb writes under `output_dir/wandb` unless
        `WANDB_DIR` says otherwise."""
        if self.callbacks and "wandb" in self.args.report_to:
            os.environ.setdefault("WANDB_DIR", str(self.run.wandb))
        self.state.global_step = step
        for callback in self.callbacks:
            callback.on_train_begin(self.args, self.state, self.control)

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        """Send the numeric entries of `metrics` as step `step`'s."""
        numbers = {
            _callback_key(key): float(value)
            for key, value in metrics.items()
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool)
        }
        self.state.global_step = step
        for callback in self.callbacks:
            callback.on_log(self.args, self.state, self.control, logs=dict(numbers))

    def end(self) -> None:
        """Close every tracker (flushes TensorBoard's event file, finishes the wandb run)."""
        for callback in self.callbacks:
            callback.on_train_end(self.args, self.state, self.control)


def check_trackers(report_to: list[str]) -> None:
    """Raise `ConfigError` before a run starts when a tracker of `report_to` is not installed."""
    import importlib.util

    for name in report_to:
        if importlib.util.find_spec(TRACKER_PACKAGES[name]) is None:
            raise ConfigError(
                f"report_to={name!r} needs the {TRACKER_PACKAGES[name]!r} package, which is not installed: "
                f"pip install {TRACKER_PACKAGES[name]}"
            )


def _callback_key(key: str) -> str:
    """The key to hand transformers' callbacks so that their renaming (`eval_x` -> `eval/x`, anything else ->
    `train/...`) shows the run's own names: `eval/success_rate` stays `eval/success_rate`, `train/reward` stays
    `train/reward`, `policy/tool/loss` becomes `train/policy/tool/loss`."""
    if key.startswith("eval/"):
        return "eval_" + key.removeprefix("eval/")
    return key.removeprefix("train/")
