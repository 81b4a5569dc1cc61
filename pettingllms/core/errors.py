"""Typed errors raised by the public API.

Every error names what was asked for and what to do about it, in the manner of Gymnasium's registration errors.
"""

from __future__ import annotations


class PettingLLMsError(Exception):
    """Base class of the errors this package raises on purpose, but two kinds (`tests/test_errors.py` holds the
    list): the sandbox's `SandboxUnavailable`, since the sandbox is a leaf that imports nothing of the project, and
    exceptions that never leave their module (a stale reply in the sandbox's pool, a candidate's failure inside the
    judge's harness, a data row skipped by a loader, a text that is not a generated math problem)."""


class UnknownEnvError(PettingLLMsError, KeyError):
    """An environment id is not registered (base of `NameNotFound` and `VersionNotFound`)."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it verbatim
        return str(self.args[0]) if self.args else ""


class NameNotFound(UnknownEnvError):
    """No environment of that name is registered, at any version."""


class VersionNotFound(UnknownEnvError):
    """The name is registered, but not at the requested version."""


class DependencyNotInstalled(PettingLLMsError, ImportError):
    """An optional dependency of the requested component is missing; the message names the extra to install."""


class ConfigError(PettingLLMsError, ValueError):
    """An argument has a value outside its allowed set; the message names the field and the allowed values."""


class EnvProtocolError(PettingLLMsError, TypeError):
    """An environment lacks members the rollout engine reads (`pettingllms.core.protocol.RolloutEnv`); the message
    names each missing member and the fix."""
