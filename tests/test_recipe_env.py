"""docs/architecture.md's recipe for an environment works as written: `tests/recipe_env.py`, which follows it word
for word, registers (step 7), passes `check_env` in both workflows and `check_returns` (step 8), is played by
`pettingllms play`, and trains one step."""

import functools

import pytest

import pettingllms
from pettingllms.cli import main
from pettingllms.testing import check_env
from pettingllms.testing.returns import check_returns

RECIPE_ID = "relay-v0"

pytestmark = pytest.mark.usefixtures("quiet_pettingzoo_advice")


@pytest.fixture(scope="module", autouse=True)
def registered():
    """Step 7, as a test does it: `register` with a string entry point (removed again after the module)."""
    pettingllms.register(
        id=RECIPE_ID,
        entry_point="recipe_env:RelayEnv",
        description="A speaker relays a word; a listener answers it.",
    )
    yield
    pettingllms.core.registration._REGISTRY.pop(RECIPE_ID)


def test_the_architecture_page_points_to_this_env_and_its_steps_are_marked_in_it():
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()
    steps = [
        line.strip()[:2]
        for line in page.split("- **An environment.**")[1].split("- **A backend")[0].splitlines()
    ]
    assert "tests/recipe_env.py" in page and [s for s in steps if s[:1].isdigit()] == [
        f"{n}." for n in range(1, 9)
    ]
    source = (Path(__file__).resolve().parent / "recipe_env.py").read_text()
    assert all(f"# Step {n}:" in source for n in range(1, 7))  # steps 7 and 8 are this test module


@pytest.mark.parametrize("workflow", ["mas", "single"])
def test_it_passes_the_env_contract_and_the_reward_contract(workflow):
    check_env(functools.partial(pettingllms.make, RECIPE_ID, workflow=workflow))
    check_returns(functools.partial(pettingllms.make, RECIPE_ID, workflow=workflow), seeds=(0, 1, 2))


def test_its_splits_are_disjoint():
    env = pettingllms.make(RECIPE_ID).unwrapped
    words = {}
    for split in ("train", "val", "eval"):
        words[split] = set()
        for seed in range(60):
            env.reset(seed=seed, options={"split": split})
            words[split].add(env.word)
    assert not words["train"] & words["eval"] and not words["val"] & words["eval"] and all(words.values())


def test_pettingllms_play_plays_it(capsys, monkeypatch):
    assert main(["play", RECIPE_ID, "--demo", "--seed", "2"]) == 0
    assert "Solved in 1 turn(s)!" in capsys.readouterr().out
    env = pettingllms.make(RECIPE_ID, workflow="single")
    env.reset(seed=4)
    typed = iter(["hint", "zzz", env.unwrapped.word])  # a hint, an unusable answer, then the word bare
    monkeypatch.setattr("builtins.input", lambda prompt: next(typed))
    assert main(["play", RECIPE_ID, "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert f"hint: <answer>{env.unwrapped.word}</answer>" in out and "! no word found" in out
    assert "Solved in 2 turn(s)!" in out and "you play 'listener'" in out


def test_it_trains_one_step(tmp_path_factory, tmp_path, one_torch_thread):
    pytest.importorskip("torch")
    from letters import build_imitation_model, train_one_step

    model = build_imitation_model(tmp_path_factory.mktemp("relay"), RECIPE_ID)
    # enough instances that each role has a group whose candidates differ in reward (a group without one trains
    # nothing, and which groups have one depends on the sampled completions)
    changed = train_one_step(
        model, tmp_path, RECIPE_ID, "--max_completion_length", "16", "--instances_per_step", "6"
    )
    assert changed == {"listener": True, "speaker": True}
