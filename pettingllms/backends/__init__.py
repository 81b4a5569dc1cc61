"""Policy backends: what produces completions for an agent (see `pettingllms.backends.base`)."""

from pettingllms.backends.base import Generation, PolicyBackend, SamplingConfig, ScriptedPolicy

__all__ = ["Generation", "PolicyBackend", "SamplingConfig", "ScriptedPolicy"]
