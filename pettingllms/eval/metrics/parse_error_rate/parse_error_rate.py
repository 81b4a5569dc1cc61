"""Per-agent share of steps whose answer the environment could not use (a local `evaluate` module).

    evaluate.load("<pettingllms>/eval/metrics/parse_error_rate").compute(
        agents=["tool", "plan", "plan"], errors=[1, 0, 1])
    # {"parse_error_rate": {"plan": 0.5, "tool": 1.0}, "steps": {"plan": 2, "tool": 1}}

A step counts as an error when the env penalised the answer as malformed (`infos[agent]["error"]` was set).
"""

from collections import Counter

import datasets
import evaluate


class ParseErrorRate(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="Per-agent rate of malformed answers (steps the environment could not use).",
            citation="",
            inputs_description="agents: the acting agent of each step; errors: 1 if that step's answer was malformed.",
            features=datasets.Features(
                {"agents": datasets.Value("string"), "errors": datasets.Value("int32")}
            ),
        )

    def _compute(self, agents, errors):
        steps, bad = Counter(agents), Counter(a for a, e in zip(agents, errors) if e)
        return {
            "parse_error_rate": {agent: bad[agent] / steps[agent] for agent in sorted(steps)},
            "steps": {agent: steps[agent] for agent in sorted(steps)},
        }
