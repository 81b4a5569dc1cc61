"""The gymnasium view of every env's single-agent workflow, run through gymnasium's own checker and wrappers."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import RecordEpisodeStatistics

import pettingllms
from pettingllms.integrations.gymnasium_env import GYMNASIUM_IDS

PUZZLES = ["pettingllms/Sokoban-v0", "pettingllms/Sudoku-v0", "pettingllms/PlanPath-v0"]


def test_every_env_has_a_registered_gymnasium_id():
    assert set(GYMNASIUM_IDS.values()) == set(pettingllms.registry)
    assert set(GYMNASIUM_IDS) <= set(gymnasium.registry)


@pytest.mark.parametrize("gym_id", [*PUZZLES, "pettingllms/Code-v0", "pettingllms/Math-v0"])
def test_gymnasiums_checker_passes(gym_id):
    if gym_id == "pettingllms/Math-v0":
        pytest.importorskip("math_verify")
    check_env(gymnasium.make(gym_id).unwrapped, skip_render_check=False)


@pytest.mark.parametrize("gym_id", PUZZLES)
def test_the_solver_solves_through_gymnasium_and_the_statistics_wrapper_counts_it(gym_id):
    env = RecordEpisodeStatistics(gymnasium.make(gym_id))
    observation, info = env.reset(seed=3)
    assert env.observation_space.contains(observation) and (info["turn"], info["step_turn"]) == (1, 0)
    terminated = truncated = False
    while not (terminated or truncated):
        answer = env.unwrapped.aec.unwrapped.solution("plan")
        observation, reward, terminated, truncated, info = env.step(answer)
    assert terminated and info["success"] and "episode" in info
    assert info["episode"]["l"] >= 1 and info["episode"]["r"] > 0
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.unwrapped.step("<answer>U</answer>")


def test_the_same_seed_gives_the_same_episode_and_bad_text_is_a_penalty():
    env = gymnasium.make("pettingllms/PlanPath-v0")
    first, _ = env.reset(seed=5)
    assert env.reset(seed=5)[0] == first and env.reset(seed=6)[0] != first
    env.reset(seed=5)
    _, reward, terminated, _, info = env.step("I do not know")
    assert reward < 0 and not terminated and info["error"]


def test_a_sync_vector_env_steps_text_in_batches():
    envs = gymnasium.vector.SyncVectorEnv(
        [lambda: gymnasium.make("pettingllms/PlanPath-v0") for _ in range(3)]
    )
    observations, infos = envs.reset(seed=[0, 1, 2])
    assert len(observations) == 3 and all(isinstance(o, str) for o in observations)
    observations, rewards, terminated, truncated, infos = envs.step(["<answer>U</answer>"] * 3)
    assert rewards.shape == (3,) and np.asarray(terminated).shape == (3,)
    envs.close()


def test_a_gymnasium_id_takes_a_difficulty_tier():
    import gymnasium

    env = gymnasium.make("pettingllms/Sokoban-v0", tier="hard")
    observation, _ = env.reset(seed=3)
    direct = pettingllms.make("sokoban-v0", workflow="single", tier="hard")
    direct.reset(seed=3)
    assert observation == direct.observe(direct.agent_selection) and "Boxes on goals: " in observation
    assert "of 3." in observation  # the hard tier's three boxes
    with pytest.raises(pettingllms.ConfigError, match="tier='legendary' is not a tier of sokoban-v0"):
        gymnasium.make("pettingllms/Sokoban-v0", tier="legendary")
