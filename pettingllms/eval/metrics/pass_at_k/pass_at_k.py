"""pass@k with the unbiased estimator of Chen et al. (2021), averaged over problems (a local `evaluate` module).

    evaluate.load("<pettingllms>/eval/metrics/pass_at_k").compute(
        num_samples=[5, 5], num_correct=[1, 0], k=[1, 5])
    # {"pass@1": 0.1, "pass@5": 0.5}

Per problem with n samples of which c are correct: pass@k = 1 - C(n - c, k) / C(n, k). A k larger than a
problem's n is not estimated (left out of the result).
"""

import math

import datasets
import evaluate


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate for one problem."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


class PassAtK(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="Unbiased pass@k over problems.",
            citation="Chen et al. (2021). Evaluating Large Language Models Trained on Code. arXiv:2107.03374.",
            inputs_description="num_samples: n per problem; num_correct: c per problem; k: list of k values.",
            features=datasets.Features(
                {"num_samples": datasets.Value("int32"), "num_correct": datasets.Value("int32")}
            ),
        )

    def _compute(self, num_samples, num_correct, k=(1,)):
        result = {}
        for value in k:
            if num_samples and all(n >= value for n in num_samples):
                scores = [pass_at_k(n, c, value) for n, c in zip(num_samples, num_correct)]
                result[f"pass@{value}"] = sum(scores) / len(scores)
        return result
