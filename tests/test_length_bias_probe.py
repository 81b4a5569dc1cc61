"""scripts/length_bias_probe.py's figures against numbers worked by hand."""

import pytest
from scripts_loader import load_script

from pettingllms.backends.base import Generation
from pettingllms.rollout.samples import Sample


@pytest.fixture(scope="module")
def probe():
    return load_script("length_bias_probe")


def sample(group, agent, completion, tokens, advantage):
    made = Sample(
        group,
        0,
        0,
        agent,
        agent,
        "",
        completion,
        0.0,
        0.0,
        0.0,
        Generation(completion, (1,), tuple(range(tokens))),
    )
    made.advantage = advantage
    return made


def test_the_grpo_weight_of_a_shared_prefix_follows_advantage_and_length(probe):
    fence = "```python\n"
    samples = [
        # the better candidate is the longer: grpo's weight on the shared fence is negative
        sample("a", "tool", fence + "long", 40, +0.5), sample("a", "tool", fence + "short", 10, -0.5),
        # the better candidate is the shorter: positive
        sample("b", "tool", fence + "short", 10, +0.5), sample("b", "tool", fence + "long", 30, -0.5),
        sample("c", "tool", fence, 10, 0.0), sample("c", "tool", fence, 20, 0.0),  # no signal: left out
        sample("d", "tool", fence, 10, 0.5), sample("d", "tool", "<answer>U</answer>", 5, -0.5),  # no shared fence
        sample("e", "plan", fence, 10, 0.5), sample("e", "plan", fence, 20, -0.5),  # another agent
    ]  # fmt: skip
    figures = probe.shared_prefix_weights(samples, "tool", "```python")
    # group a: mean length 25, (0.5/40 - 0.5/10) / 2 * 25 = -0.46875; group b: 20 * (0.5/10 - 0.5/30) / 2 = 1/3
    assert figures["groups"] == 2
    assert figures["coefficients"] == pytest.approx([-0.46875, 1 / 3])
    assert figures["mean_coefficient"] == pytest.approx((-0.46875 + 1 / 3) / 2)
    assert figures["negative_share"] == 0.5
    assert figures["mean_length_above_group_mean"] == pytest.approx(25.0)
    assert figures["mean_length_below_group_mean"] == pytest.approx(20.0)
    assert probe.shared_prefix_weights(samples, "plan", "<answer>")["groups"] == 0


def test_in_a_group_with_a_direct_answer_only_the_length_driven_part_counts(probe):
    fence = "```python\n"
    samples = [
        sample("f", "tool", fence + "a", 20, +0.6), sample("f", "tool", fence + "b", 10, +0.1),
        sample("f", "tool", fence + "c", 10, -0.2), sample("f", "tool", "<answer>U</answer>", 5, -0.6),
    ]  # fmt: skip
    # 1/L over the fenced: 0.05, 0.1, 0.1 (mean 1/12); 0.6 (0.05 - 1/12) + 0.1 (0.1 - 1/12) - 0.2 (0.1 - 1/12)
    # = -13/600; times the fenced mean length 40/3, over the group's 4 candidates: -13/180
    figures = probe.shared_prefix_weights(samples, "tool", "```python")
    assert figures["coefficients"] == pytest.approx([-13 / 180])
    # above the fenced candidates' mean advantage (1/6): only +0.6's 20 tokens
    assert figures["mean_length_above_group_mean"] == pytest.approx(20.0)
    assert figures["mean_length_below_group_mean"] == pytest.approx(10.0)
