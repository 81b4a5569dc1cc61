"""Every observation of the tool-and-plan puzzles, byte for byte, over a fixed trace of seeded play: random moves,
the oracle's, and hostile answers (control characters, carriage returns, code fences with hostile code and
output). Speed work on the observation (issue 55: Sokoban's observe + step against TextArena's) must not change one
byte: the trace's sha256 was recorded before that work, on the code it replaced."""

import hashlib

import numpy as np
import pytest

import pettingllms

HOSTILE = [
    "<answer>U\x00 R\x1b[31m D</answer>",
    "<answer>up\r\ndown\rleft</answer>",
    "<answer>\ufffe\udcff L L</answer>",
    "```python\nprint('\\x07<answer>R</answer>\\r\\n')\n```",
    "no answer at all \x7f\x08",
    "<answer>" + "R " * 300 + "</answer>",
]
TRACES = {
    ("sokoban-v0", "single"): "cdefd33b6df1632e418d422e4b3083936e082ea314799fbedaa1682d6454b5d4",
    ("sokoban-v0", "mas"): "cd4fe56ede5f0bda17f35044bfb35681c007314aa6f08bab7f149950d0c8f75d",
    ("plan-path-v0", "mas"): "ff382fc1cf0e6fa319e5bce2261b1383301464062e4e364d6224ec43381ab560",
    ("sudoku-v0", "mas"): "6463148f102b554c5eed7f87d4eb20dedd8c32a4db42991423778e2b59251320",
}
"""sha256 of each trace (`observation_trace`), recorded on the code before the speed work."""


def observation_trace(env_id: str, workflow: str, episodes: int = 6, steps: int = 24) -> str:
    """The sha256 of every observation of every agent, in play order, over `episodes` seeded episodes of at most
    `steps` steps each: a third of the answers random, a third the oracle's, a third hostile (`HOSTILE`)."""
    env = pettingllms.make(env_id, workflow=workflow, max_turns=12)
    rng = np.random.default_rng(0)
    digest = hashlib.sha256()
    for episode in range(episodes):
        env.reset(seed=episode)
        for _ in range(steps):
            if not env.agents:
                break
            agent = env.agent_selection
            observation, _, termination, truncation, _ = env.last()
            digest.update(f"{agent}\n{observation}\n".encode("utf-8", "surrogatepass"))
            if termination or truncation:
                env.step(None)
                continue
            kind = int(rng.integers(3))
            if kind == 0:
                action = env.unwrapped.random_answer(agent, rng)
            elif kind == 1:
                action = env.unwrapped.solution(agent)
            else:
                action = HOSTILE[int(rng.integers(len(HOSTILE)))]
            env.step(action)
    return digest.hexdigest()


@pytest.mark.parametrize(("env_id", "workflow"), sorted(TRACES))
def test_the_observations_are_byte_for_byte_those_recorded(env_id, workflow):
    assert observation_trace(env_id, workflow) == TRACES[env_id, workflow]
