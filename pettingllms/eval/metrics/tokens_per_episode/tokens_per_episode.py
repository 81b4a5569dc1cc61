"""Generated tokens per episode: mean, median and maximum (a local `evaluate` module).

    evaluate.load("<pettingllms>/eval/metrics/tokens_per_episode").compute(tokens=[10, 30, 20])
    # {"tokens_per_episode": 20.0, "tokens_per_episode_median": 20.0, "tokens_per_episode_max": 30}

Count the completion tokens of every agent step of an episode. Policies without a tokenizer (the random and
oracle baselines, endpoints that report no usage) are left out by the caller.
"""

import statistics

import datasets
import evaluate


class TokensPerEpisode(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="Completion tokens generated per episode (all agents).",
            citation="",
            inputs_description="tokens: the completion tokens of one episode, one value per episode.",
            features=datasets.Features({"tokens": datasets.Value("int64")}),
        )

    def _compute(self, tokens):
        if not tokens:
            return {
                "tokens_per_episode": None,
                "tokens_per_episode_median": None,
                "tokens_per_episode_max": None,
            }
        return {
            "tokens_per_episode": sum(tokens) / len(tokens),
            "tokens_per_episode_median": float(statistics.median(tokens)),
            "tokens_per_episode_max": max(tokens),
        }
