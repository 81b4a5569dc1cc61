"""PettingLLMs: multi-agent text environments for language models, behind PettingZoo's AEC API.

>>> import pettingllms
>>> env = pettingllms.make("sokoban-v0")
>>> env.reset(seed=0)
>>> for agent in env.agent_iter():
...     observation, reward, termination, truncation, info = env.last()
...     env.step(None if termination or truncation else "<answer>U</answer>")

Importing this package imports no environment module and no heavy dependency.
"""

from pettingllms import envs as _envs  # noqa: F401  (registers the built-in environments)
from pettingllms.core.adapter import AECEnvAdapter
from pettingllms.core.errors import (
    ConfigError,
    DependencyNotInstalled,
    EnvProtocolError,
    NameNotFound,
    PettingLLMsError,
    UnknownEnvError,
    VersionNotFound,
)
from pettingllms.core.registration import TURNS, EnvSpec, make, register, register_namespace, registry, spec
from pettingllms.core.text import TextObservation
from pettingllms.core.wrappers import JointTurns, ObservationTransform
from pettingllms.integrations.gymnasium_env import register_gymnasium_ids

register_gymnasium_ids()  # gymnasium.make("pettingllms/PlanPath-v0") and the other single-agent views
# TextArena's games, `textarena/<game id>`, registered on first use (extra `textarena`); the bridge is a layer above
# the built-in envs, so its namespace is registered here
register_namespace("textarena/", "pettingllms.integrations.textarena_games:register_game")

__version__ = "0.1.0"

__all__ = [
    "AECEnvAdapter",
    "ConfigError",
    "DependencyNotInstalled",
    "EnvProtocolError",
    "EnvSpec",
    "JointTurns",
    "NameNotFound",
    "ObservationTransform",
    "PettingLLMsError",
    "TURNS",
    "TextObservation",
    "UnknownEnvError",
    "VersionNotFound",
    "make",
    "register",
    "registry",
    "spec",
]
