"""What the loop does once a step is done: evaluate, save a checkpoint, stop. One function, `after_step`, says it
for the loop (`ATGRPOTrainer.train`) and for the off-policy overlap check (a rollout may run during step N's
update only when nothing after step N needs the updated weights synced first), so the two cannot disagree.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class AfterStep:
    """What follows a step: `evaluate` on the suite, `save` a checkpoint, `stop` the run."""

    evaluate: bool
    save: bool
    stop: bool

    @property
    def needs_synced_weights(self) -> bool:
        """Whether what follows reads the updated weights (an evaluation, a checkpoint, the run's end)."""
        return self.evaluate or self.save or self.stop


def after_step(args: Any, step: int, completions: int) -> AfterStep:
    """What follows once `step` steps are done and `completions` completions were sampled, under `args`
    (`max_steps`, `max_completions`, `eval_every`, `save_strategy`, `save_steps`): stop at `max_steps` or once the
    sample budget is spent; evaluate every `eval_every` steps and at the end; save every `save_steps` steps (with
    `save_strategy="steps"`) and at the end.

    >>> from types import SimpleNamespace
    >>> args = SimpleNamespace(max_steps=10, max_completions=None, eval_every=5, save_strategy="steps", save_steps=4)
    >>> after_step(args, 4, 0), after_step(args, 5, 0).evaluate, after_step(args, 10, 0).stop
    (AfterStep(evaluate=False, save=True, stop=False), True, True)
    """
    budget = args.max_completions
    stop = step >= args.max_steps or (budget is not None and completions >= budget)
    evaluate = stop or bool(args.eval_every and step % args.eval_every == 0)
    save = stop or (args.save_strategy == "steps" and step % args.save_steps == 0)
    return AfterStep(evaluate=evaluate, save=save, stop=stop)
