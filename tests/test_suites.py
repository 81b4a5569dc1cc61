"""Evaluation suites hold each instance once: checked for every generated env against the instances' own
observations, and on a space smaller than the suite asked for."""

import hashlib

import pytest

import pettingllms
from pettingllms.core.env import StepOutcome, TextAECEnv
from pettingllms.eval.suites import build_suite, distinct_seeds

GENERATED = [
    ("sokoban-v0", {"width": 6, "height": 6, "num_boxes": 1, "min_solution_length": 6}),  # repeats within 300
    ("sokoban-v0", {}),
    ("sudoku-v0", {}),
    ("plan-path-v0", {"size": 7}),
    ("math-v0", {"difficulty": 2}),  # repeats within 300
    ("math-v0", {}),
    ("bargain-v0", {}),
]


def _first_observations(env_id, kwargs, seeds, split="eval"):
    """Each seed's opening observations of every agent (an independent view of the instance: in bargain-v0 each
    party sees only its own private number)."""
    env = pettingllms.make(env_id, **kwargs)
    texts = []
    for seed in seeds:
        env.reset(seed=seed, options={"split": split})
        opening = "\n".join(str(env.observe(agent)) for agent in env.possible_agents)
        texts.append(hashlib.sha256(opening.encode()).hexdigest())
    return texts


@pytest.mark.parametrize(("env_id", "kwargs"), GENERATED)
def test_a_generated_suite_holds_each_instance_once_and_skips_only_repeats(env_id, kwargs):
    episodes = 120
    suite = build_suite(env_id, episodes, 0, kwargs)
    seeds = [episode.seed for episode in suite.episodes]
    assert len(seeds) == episodes
    drawn = range(seeds[-1] + 1)
    observed = _first_observations(env_id, kwargs, drawn)
    assert len(set(observed[s] for s in seeds)) == episodes  # distinct instances
    first_time = [s for s in drawn if observed[s] not in observed[:s]]  # each instance at its first seed
    assert seeds == first_time
    assert (
        f"{episodes} distinct instances from seeds 0..{seeds[-1]} ({len(drawn) - episodes} repeats skipped)"
        in (suite.description)
    )


def test_the_validation_split_is_checked_the_same_way():
    kwargs = {"width": 6, "height": 6, "num_boxes": 1, "min_solution_length": 6}
    suite = build_suite("sokoban-v0", 100, 0, kwargs, split="val")
    seeds = [episode.seed for episode in suite.episodes]
    observed = _first_observations("sokoban-v0", kwargs, seeds, split="val")
    assert len(set(observed)) == 100 and seeds[-1] >= 100  # the validation split repeats within 100 too


class TwoLetters(TextAECEnv):
    """Four instances in all: a word of two letters from "ab"."""

    metadata = {"name": "two-letters", "render_modes": ["ansi"], "is_parallelizable": False}
    WORKFLOWS = {"mas": ("plan",), "single": ("plan",)}
    DEFAULT_MAX_TURNS = 1
    RESET_OPTIONS = frozenset({"split"})

    def _reset_task(self, options):
        self.word = "".join(self.np_random.choice(list("ab"), size=2))

    def _act(self, agent, action):
        return StepOutcome()

    def _observation_text(self, agent):
        return f"copy {self.word}"

    def _render_text(self):
        return self.word


def test_a_space_smaller_than_the_suite_gives_every_instance_once_and_says_so():
    pettingllms.register("test-two-letters-v0", entry_point=TwoLetters)
    try:
        suite = build_suite("test-two-letters-v0", 10, 0)
    finally:
        pettingllms.core.registration._REGISTRY.pop("test-two-letters-v0")
    assert len(suite.episodes) == 4
    assert "only 4 of the 10 asked for: the space holds no more in 200 draws" in suite.description


def test_an_env_without_instance_keys_gets_its_seeds_unchecked():
    class Plain:  # no instance_key: e.g. an env of another package behind the adapter
        pass

    seeds, note = distinct_seeds(Plain(), 5, 3, "eval")
    assert seeds == [5, 6, 7] and "not checked for repeated instances" in note
