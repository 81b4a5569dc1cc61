"""Policy backends: what produces completions for an agent (see `pettingllms.policies.base`)."""

from pettingllms.policies.base import Generation, PolicyBackend, SamplingConfig, ScriptedPolicy

__all__ = ["Generation", "PolicyBackend", "SamplingConfig", "ScriptedPolicy"]
