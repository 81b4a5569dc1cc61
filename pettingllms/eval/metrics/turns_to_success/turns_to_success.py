"""Mean number of turns the successful episodes took (a local `evaluate` module).

    evaluate.load("<pettingllms>/eval/metrics/turns_to_success").compute(successes=[1, 0, 1], turns=[1, 4, 2])
    # {"mean_turns_to_success": 1.5, "successful_episodes": 2}

`turns` counts the turns an episode used (a success in the first turn is 1). Failed episodes are ignored; with no
success the mean is None.
"""

import datasets
import evaluate


class TurnsToSuccess(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="Mean turns used by the successful episodes.",
            citation="",
            inputs_description="successes: 0/1 per episode; turns: turns used per episode (>= 1 for a success).",
            features=datasets.Features(
                {"successes": datasets.Value("int32"), "turns": datasets.Value("int32")}
            ),
        )

    def _compute(self, successes, turns):
        used = [t for s, t in zip(successes, turns) if s]
        return {
            "mean_turns_to_success": sum(used) / len(used) if used else None,
            "successful_episodes": len(used),
        }
