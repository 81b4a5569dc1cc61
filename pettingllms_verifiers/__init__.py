"""The `verifiers` taskset id of PettingLLMs' environments: `vf-eval pettingllms-verifiers ...`.

verifiers resolves a taskset id to a top-level module (`pettingllms-verifiers` -> `pettingllms_verifiers`) and
takes its `Taskset` and `Env` from `__all__`; this package re-exports `pettingllms.integrations.verifiers_env`, where
everything is defined and documented.
"""

from pettingllms.integrations import verifiers_env
from pettingllms.integrations.verifiers_env import *  # noqa: F403 - exactly the module's __all__

__all__ = verifiers_env.__all__
