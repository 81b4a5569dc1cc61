"""Success rate with a 95% Wilson score interval, over episodes (a local `evaluate` module: no hub fetch).

    metric = evaluate.load("<pettingllms>/eval/metrics/success_rate")
    metric.compute(successes=[1, 0, 1, 1])
    # {"success_rate": 0.75, "ci95_low": 0.301..., "ci95_high": 0.954..., "episodes": 4}

The Wilson interval stays inside [0, 1] and is informative at 0% and 100%, where the normal approximation is not.
"""

import math

import datasets
import evaluate

Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (successes out of n)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


class SuccessRate(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="Share of episodes that succeeded, with a 95% Wilson score interval.",
            citation="Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference.",
            inputs_description="successes: one 0/1 (or bool) per episode.",
            features=datasets.Features({"successes": datasets.Value("int32")}),
        )

    def _compute(self, successes):
        n, hits = len(successes), int(sum(successes))
        low, high = wilson_interval(hits, n)
        return {"success_rate": hits / n if n else 0.0, "ci95_low": low, "ci95_high": high, "episodes": n}
