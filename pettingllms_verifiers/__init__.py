"""The `verifiers` taskset id of PettingLLMs' environments: `vf-eval pettingllms-verifiers ...`.

verifiers resolves a taskset id to a top-level module (`pettingllms-verifiers` -> `pettingllms_verifiers`) and
takes its `Taskset` and `Env` from `__all__`; this package re-exports `pettingllms.eval.verifiers_env`, where
everything is defined and documented.
"""

from pettingllms.eval.verifiers_env import (
    PettingLLMsEnvConfig,
    PettingLLMsTask,
    PettingLLMsTaskData,
    PettingLLMsTaskset,
    PettingLLMsTasksetConfig,
    PettingLLMsVerifiersEnv,
    load_environment,
)

__all__ = [
    "PettingLLMsEnvConfig",
    "PettingLLMsTask",
    "PettingLLMsTaskData",
    "PettingLLMsTaskset",
    "PettingLLMsTasksetConfig",
    "PettingLLMsVerifiersEnv",
    "load_environment",
]
