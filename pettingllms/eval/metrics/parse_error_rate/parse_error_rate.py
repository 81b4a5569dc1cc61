"""Per-agent share of steps whose answer the environment could not use (a local `evaluate` module).

    evaluate.load("<pettingllms>/eval/metrics/parse_error_rate").compute(
        agents=["tool", "plan", "plan"], errors=[1, 0, 1])
    # {"parse_error_rate": {"plan": 0.5, "tool": 1.0}, "steps": {"plan": 2, "tool": 1}}

A step counts as an error when nothing in the answer was usable (`infos[agent]["parse_error"]`): no answer tag,
no code block, nothing parseable. Answers that were partly usable (a blocked move) are not parse errors.
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
