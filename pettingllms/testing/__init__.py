"""Conformance checks for text AEC environments, for any environment author.

`check_env(env_fn)` runs PettingZoo's `api_test` and `seed_test`, then the checks PettingZoo cannot make for
text environments:

- `check_info_contract`: every live agent's `infos` holds `reward_team`, `reward_local`, `turn`, `success`
  after `reset` and after every step; observations are `str` inside their space.
- `check_reward_composition`: `rewards[a] == alpha * reward_team + reward_local` after every step.
- `check_determinism`: the same seed and actions give the same episode; different seeds give different ones.
- `check_hostile_actions`: arbitrary strings (empty, control characters, huge, unbalanced tags, code that
  misbehaves, text that would be dangerous if evaluated) never raise, and unusable text yields `error`.
- `check_copy_independence`: `clone()` is exact, and stepping a clone never changes the original.

Each check raises `AssertionError` with a message saying what broke. `env_fn` must build a fresh environment
(e.g. `functools.partial(pettingllms.make, "sokoban-v0")`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo import AECEnv
from pettingzoo.test import api_test, seed_test

REQUIRED_INFO_KEYS = ("reward_team", "reward_local", "turn", "step_turn", "success")

HOSTILE_ACTIONS: tuple[str, ...] = (
    "",
    " ",
    "\n\n\t",
    "\x00\x01\x0b\x0c\x1b[2J\r",
    "\ud800 lone surrogate",
    "\U0001f600 emoji, accents: éàü, CJK: 推箱子",
    "<answer>",
    "</answer><answer>",
    "<answer></answer>",
    "<ANSWER> up; down, LEFT right </Answer>",
    "<answer>" + "U " * 5_000 + "</answer>",
    "x" * 100_000,
    "<answer>(1, 1, 5) (9, 9, 9) r1c1=0</answer>",
    "<answer>(1, 1, " + "9" * 4_301 + ") r1c1=" + "7" * 5_000 + "</answer>",
    "<answer>\n1234\n3412\n2143\n4321\n</answer>",
    "None",
    "{'action': [1, 2]}",
    "__import__('os').system('echo pwned')",
    "<answer>__import__('os').system('echo pwned')</answer>",
    "\\boxed{",
    "\\boxed{\\frac{1}{0}}",
    "%s%s%n {0} {}",
    "```python\n",
    "```python\nraise SystemExit(3)\n```",
    "```python\nprint('<answer>U</answer>' * 3)\n```",
    "```python\nimport sys\nsys.stdout.write('\\x00' * 1000)\n```",
)
"""Strings every environment must accept without raising (used by `check_hostile_actions`)."""


def check_env(
    env_fn: Callable[[], AECEnv],
    *,
    num_cycles: int = 20,
    seeds: Sequence[int] = (0, 1, 2, 3),
    hostile_actions: Sequence[str] = HOSTILE_ACTIONS,
) -> None:
    """Run every check on environments built by `env_fn` (see the module docstring)."""
    api_test(env_fn(), num_cycles=num_cycles)
    seed_test(env_fn, num_cycles=num_cycles)
    check_info_contract(env_fn(), seed=seeds[0], num_cycles=num_cycles)
    check_reward_composition(env_fn(), seed=seeds[0], num_cycles=num_cycles)
    check_determinism(env_fn, seeds=seeds, num_cycles=num_cycles)
    check_hostile_actions(env_fn, hostile_actions=hostile_actions)
    check_copy_independence(env_fn(), seed=seeds[0])


def _scripted_actions(env: AECEnv, seed: int) -> Callable[[str], str]:
    """Return a deterministic action source mixing hostile strings and samples of the action space."""
    rng = np.random.default_rng(seed)
    pool = [a for a in HOSTILE_ACTIONS if "```" not in a]

    def act(agent: str) -> str:
        if rng.random() < 0.5:
            return pool[int(rng.integers(len(pool)))]
        return env.action_space(agent).sample()

    return act


def _play(env: AECEnv, seed: int, num_cycles: int, on_step: Callable[[AECEnv, str, bool], None]) -> None:
    """Reset with `seed` and play scripted actions; call `on_step(env, agent, live)` after every step."""
    env.reset(seed=seed)
    for agent in env.possible_agents:
        env.action_space(agent).seed(seed)
    act = _scripted_actions(env, seed)
    for agent in env.agent_iter(num_cycles * env.num_agents):
        _, _, termination, truncation, _ = env.last()
        live = not (termination or truncation)
        env.step(act(agent) if live else None)
        on_step(env, agent, live)


def check_info_contract(env: AECEnv, *, seed: int = 0, num_cycles: int = 20) -> None:
    def check(env: AECEnv, acted: str, live: bool = True) -> None:
        for agent in env.agents:
            info = env.infos[agent]
            missing = [key for key in REQUIRED_INFO_KEYS if key not in info]
            assert not missing, f"infos[{agent!r}] lacks {missing} after {acted!r} stepped: {info}"
            assert isinstance(info["success"], bool), f"infos[{agent!r}]['success'] must be a bool"
            assert isinstance(info["turn"], int), f"infos[{agent!r}]['turn'] must be an int"
            assert isinstance(info["step_turn"], int), f"infos[{agent!r}]['step_turn'] must be an int"
            if "error" in info:
                assert isinstance(info["error"], str) and info["error"], (
                    f"infos[{agent!r}]['error'] must be text"
                )
            observation = env.observe(agent)
            assert isinstance(observation, str), f"observe({agent!r}) returned {type(observation).__name__}"
            assert env.observation_space(agent).contains(observation), (
                f"observe({agent!r}) is outside its space"
            )

    env.reset(seed=seed)
    check(env, "(reset)")
    _play(env, seed, num_cycles, check)


def check_reward_composition(env: AECEnv, *, seed: int = 0, num_cycles: int = 20) -> None:
    alpha = env.unwrapped.alpha

    def check(env: AECEnv, acted: str, live: bool) -> None:
        if not live:  # a finished agent's step only removes it (PettingZoo clears the rewards)
            return
        for agent in env.agents:
            info = env.infos[agent]
            expected = alpha * info["reward_team"] + info["reward_local"]
            assert abs(env.rewards[agent] - expected) < 1e-9, (
                f"rewards[{agent!r}] = {env.rewards[agent]} but alpha * reward_team + reward_local = "
                f"{alpha} * {info['reward_team']} + {info['reward_local']} = {expected} (after {acted!r} stepped)"
            )

    _play(env, seed, num_cycles, check)


def _trace(env: AECEnv, seed: int, num_cycles: int) -> list[Any]:
    trace: list[Any] = []

    def record(env: AECEnv, acted: str, live: bool) -> None:
        trace.append(_snapshot(env))

    env.reset(seed=seed)
    trace.append(_snapshot(env))
    _play(env, seed, num_cycles, record)
    return trace


def check_determinism(
    env_fn: Callable[[], AECEnv], *, seeds: Sequence[int] = (0, 1, 2, 3), num_cycles: int = 10
) -> None:
    for seed in seeds:
        first, second = _trace(env_fn(), seed, num_cycles), _trace(env_fn(), seed, num_cycles)
        assert len(first) == len(second), f"seed {seed}: episodes of different lengths"
        for step, (a, b) in enumerate(zip(first, second)):
            assert data_equivalence(a, b), f"seed {seed}: episodes differ at step {step}"
    starts = set()
    for seed in seeds:
        env = env_fn()
        env.reset(seed=seed)
        starts.add(tuple(str(env.observe(agent)) for agent in env.agents))
    assert len(starts) > 1 or len(seeds) < 2, f"seeds {list(seeds)} all give the same first observations"


def check_hostile_actions(
    env_fn: Callable[[], AECEnv], *, hostile_actions: Sequence[str] = HOSTILE_ACTIONS
) -> None:
    env = env_fn()
    for position in range(len(env.possible_agents)):
        for index, action in enumerate(hostile_actions):
            env.reset(seed=index)
            for _ in range(position):
                env.step("")
            agent = env.agent_selection
            try:
                env.step(action)
            except Exception as error:  # the check's purpose: report which string broke the env
                raise AssertionError(f"step({action[:60]!r}) by {agent!r} raised {error!r}") from error
            info = env.infos.get(agent, {})
            assert all(key in info for key in REQUIRED_INFO_KEYS), (
                f"step({action[:60]!r}): malformed infos {info}"
            )
            if action.strip() in ("", "None"):
                assert "error" in info, f"step({action[:60]!r}) by {agent!r} was accepted without an error"
            for other in env.agents:
                assert env.observation_space(other).contains(env.observe(other)), (
                    f"after step({action[:60]!r}) the observation of {other!r} is outside its space"
                )


def _snapshot(env: AECEnv) -> dict[str, Any]:
    return {
        "agent_selection": env.agent_selection if env.agents else None,
        "agents": list(env.agents),
        "observations": {agent: str(env.observe(agent)) for agent in env.agents},
        "rewards": dict(env.rewards),
        "cumulative": dict(env._cumulative_rewards),
        "terminations": dict(env.terminations),
        "truncations": dict(env.truncations),
        "infos": copy.deepcopy(env.infos),
    }


def check_copy_independence(env: AECEnv, *, seed: int = 0, steps: int = 3) -> None:
    env.reset(seed=seed)
    act = _scripted_actions(env, seed)
    for _ in range(steps):
        if not env.agents:
            break
        env.step(act(env.agent_selection))
    clone = env.clone() if hasattr(env, "clone") else copy.deepcopy(env)
    before = _snapshot(env)
    assert data_equivalence(_snapshot(clone), before), "clone() is not an exact copy"
    twin = copy.deepcopy(env)
    actions = []
    for agent in clone.agent_iter(40):
        _, _, termination, truncation, _ = clone.last()
        action = None if termination or truncation else act(agent)
        actions.append(action)
        clone.step(action)
    assert data_equivalence(_snapshot(env), before), "stepping a clone changed the original"
    for action in actions:
        if not env.agents:
            break
        env.step(action)
        twin.step(action)
        assert data_equivalence(_snapshot(env), _snapshot(twin)), (
            "a copy stepped alike diverged from the original"
        )
