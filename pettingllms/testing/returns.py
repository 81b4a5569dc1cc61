"""The reward contract as a check: no scripted strategy earns any agent more than honest solver play.

A policy trained on returns finds whatever pays, so the contract of `pettingllms.core.env` ("returns mean
success") is checked the way an optimiser would attack it. `check_returns(env_fn, ...)` plays, for each `alpha`
and seed, the honest profile (every agent plays `honest`, by default the env's oracle `solution()`), then

- every strategy of `strategies` as a unilateral deviation (one agent plays it, the others stay honest: an
  agent sabotaging, stalling or guessing while its team plays well) and jointly (every agent plays it);
- every explicit profile of `profiles` (agent -> strategy; agents not named play honestly: attacks that need
  two roles to collude, such as two correct answers in forms that never agree),

and asserts that in no profile any agent's return exceeds its honest return (a general-sum game, `general_sum=True`:
that no agent gains by deviating alone, the equilibrium property such a game can promise). A return is what a PettingZoo loop
collects: the sum of the rewards `env.last()` reports to that agent over the episode, settlements included.

`STRATEGIES` are the attacks every env admits through its public API: answering nothing, chatter, random answers,
one constant answer, echoing the first correct answer forever, oscillating between right and random, and
solving only on the last turn. Env-specific attacks (a program printing the most common expected output, test
cases copied from the statement) are strategies too: any `(env, agent, seat) -> str`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from pettingzoo import AECEnv

Strategy = Callable[[Any, str, "Seat"], str]
"""`(env.unwrapped, agent, seat) -> action text`: what one agent answers in the current state."""


@dataclasses.dataclass
class Seat:
    """What a strategy keeps of one agent's episode: its own seeded generator, how many times it has acted, and
    notes of its own (an answer it repeats, say)."""

    rng: np.random.Generator
    steps: int = 0
    notes: dict[str, Any] = dataclasses.field(default_factory=dict)


def oracle(env: Any, agent: str, seat: Seat) -> str:
    """Honest solver play: the env's own `solution(agent)`."""
    return env.solution(agent)


def silent(env: Any, agent: str, seat: Seat) -> str:
    """Stalling: an empty answer every time."""
    return ""


def chatter(env: Any, agent: str, seat: Seat) -> str:
    """Stalling politely: text with no answer in it."""
    return "Let me think about this carefully before I answer."


def random_play(env: Any, agent: str, seat: Seat) -> str:
    """A random answer in the answer format each time (`env.random_answer`)."""
    return env.random_answer(agent, seat.rng)


def constant(env: Any, agent: str, seat: Seat) -> str:
    """Guessing one constant: the first random answer, repeated every time."""
    return seat.notes.setdefault("constant", env.random_answer(agent, seat.rng))


def echo_first(env: Any, agent: str, seat: Seat) -> str:
    """Repeating an answer: the oracle's answer for the first state, given again in every later state."""
    return seat.notes.setdefault("first", env.solution(agent))


def oscillate(env: Any, agent: str, seat: Seat) -> str:
    """Right, then random, then right again...: progress made and undone."""
    return env.solution(agent) if seat.steps % 2 == 0 else env.random_answer(agent, seat.rng)


def late(env: Any, agent: str, seat: Seat) -> str:
    """Keeping the episode alive: nothing until the last turn, then the oracle's answer."""
    return env.solution(agent) if env.turn == env.max_turns - 1 else ""


STRATEGIES: Mapping[str, Strategy] = {
    "silent": silent,
    "chatter": chatter,
    "random": random_play,
    "constant": constant,
    "echo_first": echo_first,
    "oscillate": oscillate,
    "late": late,
}
"""The attacks every env admits through its public API (module docstring)."""


def play_returns(
    env_fn: Callable[[], AECEnv],
    profile: Mapping[str, Strategy],
    *,
    seed: int,
    options: Mapping[str, Any] | None = None,
) -> dict[str, float]:
    """Play one episode of `env_fn()` (reset with `seed` and `options`), each agent answering by its strategy in
    `profile`; return each agent's return: the rewards `env.last()` reported to it, summed."""
    env = env_fn()
    env.reset(seed=seed, options=dict(options or {}))
    unwrapped = env.unwrapped
    seats = {a: Seat(np.random.default_rng([seed, i])) for i, a in enumerate(env.possible_agents)}
    returns = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        _, reward, termination, truncation, _ = env.last()
        returns[agent] += float(reward)
        if termination or truncation:
            env.step(None)
            continue
        seat = seats[agent]
        action = profile[agent](unwrapped, agent, seat)
        seat.steps += 1
        env.step(action)
    return returns


def check_returns(
    env_fn: Callable[..., AECEnv],
    *,
    strategies: Mapping[str, Strategy] = STRATEGIES,
    profiles: Mapping[str, Mapping[str, Strategy]] | None = None,
    honest: Strategy | Mapping[str, Strategy] = oracle,
    seeds: tuple[int, ...] = (0, 1),
    alphas: tuple[float, ...] = (0.0, 0.5, 1.0),
    options: Mapping[str, Any] | None = None,
    tolerance: float = 1e-9,
    general_sum: bool = False,
) -> None:
    """Assert that no profile earns any agent more than honest play (module docstring).

    `env_fn(alpha=...)` builds a fresh env with that team weight. `honest` is one strategy for every agent, or
    one per agent. `general_sum=True` checks what a general-sum game can promise: that no agent gains by
    deviating alone (honest play is an equilibrium of the battery), so only unilateral deviations and the explicit
    profiles are tried, and only the deviating agents' returns are bounded (a party may gain from its partner's
    mistakes). Raises `AssertionError` listing every (alpha, seed, profile, agent) that earned more, with both
    returns.
    """
    agents = list(env_fn(alpha=alphas[0]).possible_agents)
    fair = honest if isinstance(honest, Mapping) else dict.fromkeys(agents, honest)
    tried = _profiles(agents, fair, strategies, profiles or {}, joint=not general_sum)
    failures = []
    for alpha in alphas:
        make = _with_alpha(env_fn, alpha)
        for seed in seeds:
            best = play_returns(make, fair, seed=seed, options=options)
            for name, profile in tried.items():
                got = play_returns(make, profile, seed=seed, options=options)
                bounded = [a for a in agents if profile[a] is not fair[a]] if general_sum else agents
                failures += [
                    f"alpha={alpha} seed={seed} {name}: {agent} earned {got[agent]:.4f} > honest {best[agent]:.4f}"
                    for agent in bounded
                    if got[agent] > best[agent] + tolerance
                ]
    assert not failures, "returns that beat honest play:\n" + "\n".join(failures)


def _profiles(
    agents: list[str],
    fair: Mapping[str, Strategy],
    strategies: Mapping[str, Strategy],
    profiles: Mapping[str, Mapping[str, Strategy]],
    *,
    joint: bool = True,
) -> dict[str, dict[str, Strategy]]:
    """Every profile to try, by name: each strategy unilaterally per agent and (`joint`) by every agent at once,
    then the explicit ones."""
    tried = {}
    for name, strategy in strategies.items():
        for agent in agents:
            tried[f"{agent}={name}"] = {**fair, agent: strategy}
        if joint and len(agents) > 1:
            tried[f"all={name}"] = dict.fromkeys(agents, strategy)
    for name, profile in profiles.items():
        unknown = sorted(set(profile) - set(agents))
        if unknown:
            raise ValueError(f"profile {name!r} names agents {unknown} that are not in {agents}")
        tried[name] = {**fair, **profile}
    return tried


def _with_alpha(env_fn: Callable[..., AECEnv], alpha: float) -> Callable[[], AECEnv]:
    return lambda: env_fn(alpha=alpha)
