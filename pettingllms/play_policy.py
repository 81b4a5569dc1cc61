"""A policy spec answering for agents one step at a time, as `pettingllms play --policy` needs.

`policy_answerer(spec, env_id, agents, ...)` loads what `spec` names exactly as `pettingllms-eval --policy` does
(`pettingllms.eval.policy_specs`: a run folder, a checkpoint, a model folder, `tiny`, `oracle`, `random`, or
`agent=spec` pairs) and returns `answer(env, agent) -> str`: that agent's greedy completion for its current
observation (a training run's models at the run's own completion budget and thinking setting), or a baseline's
answer from the env's state. One answer per call: the caller shows it, steps the env, and asks again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pettingllms
from pettingllms.backends.base import SamplingConfig, StatePolicy
from pettingllms.eval.policy_specs import load_policies, parse_policy_arg
from pettingllms.eval.suites import eval_max_new_tokens


def policy_answerer(
    spec: str,
    env_id: str,
    agents: Sequence[str],
    *,
    workflow: str,
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> Callable[[Any, str], str]:
    """`answer(env, agent)` for the agents `spec` covers (`agents`: every agent of the workflow; a spec of
    agent=spec pairs must name them all, as `pettingllms-eval` requires)."""
    loaded = load_policies(
        parse_policy_arg(spec, agents), env_id, workflow=workflow, env_kwargs=env_kwargs or {}, seed=seed
    )
    greedy = SamplingConfig(
        temperature=0.0,
        max_new_tokens=eval_max_new_tokens(env_id),
        stop=pettingllms.make(env_id).unwrapped.STOP_STRINGS,
    )
    samplings = {
        name: greedy if name not in loaded.run_settings else loaded.run_settings[name].sampling(greedy)
        for name in loaded.backends
    }

    def answer(env: Any, agent: str) -> str:
        name = loaded.agent_policy[agent]
        backend = loaded.backends[name]
        if isinstance(backend, StatePolicy):
            [[generation]] = backend.generate_from_state([env], agent, 1)
        else:
            [[generation]] = backend.generate([str(env.observe(agent))], 1, samplings[name])
        return generation.action

    return answer
