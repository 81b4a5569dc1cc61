"""The environment registry: `register`, `make`, `registry`, `spec`.

Entry points are strings (`"package.module:Class"`), so importing `pettingllms` imports no environment module;
`make` imports the one it needs. Ids have the form `name-vN`.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pettingzoo import AECEnv

from pettingllms.core.errors import ConfigError, DependencyNotInstalled, NameNotFound, VersionNotFound

_ID_PATTERN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_.\-]*?)-v(?P<version>\d+)$")
_NAMESPACED_ID_PATTERN = re.compile(
    r"^(?P<name>[a-z0-9_]+/[A-Za-z0-9][A-Za-z0-9_.\-]*?)-v(?P<version>\d+)(?P<variant>-[A-Za-z0-9_.\-]+)?$"
)
"""Ids of a namespace (`textarena/TicTacToe-v0`, `textarena/2048-v0-ultra-easy`): the other project's own forms."""


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """Everything needed to build an environment.

    Attributes:
        id: `name-vN`.
        entry_point: `"module:Class"` (or a callable) returning a raw, unwrapped `AECEnv`.
        description: one line, shown by `pettingllms list`.
        kwargs: default keyword arguments; those passed to `make` override them.
        extra: the pip extra that provides the entry point's dependencies, named in import errors.
        tiers: named difficulty tiers (`easy`, ...) -> keyword arguments; `make(id, tier=name)` applies one.
    """

    id: str
    entry_point: str | Callable[..., AECEnv]
    description: str = ""
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    extra: str | None = None
    tiers: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        return _split_id(self.id)[0]

    @property
    def version(self) -> int:
        return _split_id(self.id)[1]

    def load(self) -> Callable[..., AECEnv]:
        """Import and return the entry point."""
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attr = self.entry_point.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name and (module_name == error.name or module_name.startswith(error.name + ".")):
                raise  # the entry point itself is missing: a wrong id, not a missing dependency
            hint = f" Install it with: pip install 'pettingllms[{self.extra}]'." if self.extra else ""
            raise DependencyNotInstalled(
                f"{self.id} needs the package {error.name!r}, which is not installed.{hint}"
            ) from error
        return getattr(module, attr)


_REGISTRY: dict[str, EnvSpec] = {}
_NAMESPACES: dict[str, str] = {}
"""Id prefix -> the "module:function" that registers that namespace's ids on first use."""
_RESOLVED: dict[str, EnvSpec] = {}
"""A namespace's ids resolved so far (kept apart: `registry` lists the registered ids only, whatever was made)."""
registry: Mapping[str, EnvSpec] = MappingProxyType(_REGISTRY)
"""Read-only view of every registered id -> `EnvSpec` (a namespace's ids, resolved on first use, are not in it)."""


def _split_id(env_id: str) -> tuple[str, int]:
    match = _ID_PATTERN.match(env_id) or _NAMESPACED_ID_PATTERN.match(env_id)
    if match is None:
        raise ValueError(f"malformed environment id {env_id!r}: expected 'name-vN', for example 'sokoban-v0'")
    variant = match.groupdict().get("variant") or ""
    return match["name"] + variant, int(match["version"])


def register(
    id: str,
    entry_point: str | Callable[..., AECEnv],
    *,
    description: str = "",
    kwargs: Mapping[str, Any] | None = None,
    extra: str | None = None,
    tiers: Mapping[str, Mapping[str, Any]] | None = None,
) -> EnvSpec:
    """Register an environment under `id` (`name-vN`); re-registering an id is an error."""
    _split_id(id)
    if id in _REGISTRY:
        raise ValueError(f"environment id {id!r} is already registered")
    env_spec = EnvSpec(id, entry_point, description, dict(kwargs or {}), extra, dict(tiers or {}))
    _REGISTRY[id] = env_spec
    return env_spec


def register_namespace(prefix: str, resolver: str) -> None:
    """Make ids starting with `prefix` resolvable on first use: `resolver` ("module:function") is imported and
    called with the id, and must `register` it (or raise `NameNotFound`). Nothing is imported until then."""
    _NAMESPACES[prefix] = resolver


def spec(env_id: str) -> EnvSpec:
    """Return the spec of `env_id` (resolving a registered namespace's id on first use); raise `NameNotFound` or
    `VersionNotFound` with suggestions."""
    if env_id in _REGISTRY or env_id in _RESOLVED:
        return _REGISTRY.get(env_id) or _RESOLVED[env_id]
    prefix = next((prefix for prefix in _NAMESPACES if env_id.startswith(prefix)), None)
    if prefix is not None:
        module_name, _, function = _NAMESPACES[prefix].partition(":")
        getattr(importlib.import_module(module_name), function)(env_id)
        _RESOLVED[env_id] = _REGISTRY.pop(env_id)
        return _RESOLVED[env_id]
    known = sorted(_REGISTRY)
    listing = ", ".join(known) or "(none)"
    try:
        name, version = _split_id(env_id)
    except ValueError:
        name, version = env_id, None
    versions = sorted(s.version for s in _REGISTRY.values() if s.name == name)
    if versions:
        raise VersionNotFound(
            f"environment {name!r} has no version {version}; registered versions: "
            + ", ".join(f"{name}-v{v}" for v in versions)
        )
    close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.5)
    close += [k for k in known if name and name in k and k not in close]
    suggestion = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise NameNotFound(f"no environment named {env_id!r}.{suggestion} Registered: {listing}")


TURNS = ("aec", "joint")
"""How the agents of a turn act (`make`'s `turns`): in turn, each reading the earlier agents' answers of the turn
(PettingZoo's AEC order), or together, each reading the env as the turn began (`JointTurns`)."""


def make(env_id: str, *, tier: str | None = None, turns: str = "aec", **kwargs: Any) -> AECEnv:
    """Build the environment `env_id` with the standard wrappers applied.

    Keyword arguments override the spec's defaults and go to the environment's constructor
    (for every env in this package: `alpha`, `workflow`, `max_turns`, `render_mode`, and its own knobs).
    `tier` names one of the spec's difficulty tiers (`pettingllms.envs.tiers`): its arguments come between the
    spec's defaults and `kwargs` (an explicit keyword argument overrides the tier's); an unknown tier, or a tier
    for an env without tiers, is a `ConfigError` naming the allowed values.
    The wrappers, innermost first: `TextActionChecker` (actions must be `str`, or `None` for a finished agent),
    then `OrderEnforcing` (PettingZoo's call-order checks), and with `turns="joint"` `JointTurns` (the agents of a
    turn act together: each observes the env as the turn began); another `turns` is a `ConfigError` naming
    `TURNS`. `env.unwrapped` is the raw environment.
    """
    from pettingllms.core.wrappers import JointTurns, wrap

    if turns not in TURNS:
        raise ConfigError(f"turns={turns!r}: choose one of {list(TURNS)}")
    env_spec = spec(env_id)
    factory = env_spec.load()
    _check_arguments(env_id, factory, kwargs)
    raw = factory(**{**env_spec.kwargs, **tier_arguments(env_spec, tier), **kwargs})
    return JointTurns(wrap(raw)) if turns == "joint" else wrap(raw)


def tier_arguments(env_spec: EnvSpec, tier: str | None) -> Mapping[str, Any]:
    """The keyword arguments of `env_spec`'s tier `tier` ({} for None); `ConfigError` naming the allowed tiers
    when `tier` is not one of them (or the env has none)."""
    if tier is None:
        return {}
    if tier not in env_spec.tiers:
        allowed = (
            f"allowed values: {list(env_spec.tiers)}"
            if env_spec.tiers
            else "it has no tiers; envs with tiers: "
            + ", ".join(sorted(s.id for s in _REGISTRY.values() if s.tiers))
        )
        raise ConfigError(f"tier={tier!r} is not a tier of {env_spec.id}; {allowed}")
    return env_spec.tiers[tier]


@functools.cache
def accepted_arguments(factory: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword arguments `factory` (a class, or a callable) accepts, following `**kwargs` up a class's MRO to
    the first `__init__` that takes none; None when that cannot be known (a callable taking `**kwargs`). Cached per
    factory: `make` calls it for every env it builds."""
    import inspect

    names: set[str] = set()
    functions = (
        [klass.__init__ for klass in factory.__mro__ if "__init__" in vars(klass)]
        if isinstance(factory, type)
        else [factory]
    )
    for function in functions:
        parameters = inspect.signature(function).parameters.values()
        names |= {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {
            "self"
        }
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            return frozenset(names)
    return None


def _check_arguments(env_id: str, factory: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
    """Raise `ConfigError` for a keyword argument the env does not take, naming the ones it does."""
    accepted = accepted_arguments(factory)
    unknown = sorted(set(kwargs) - accepted) if accepted is not None else []
    if unknown:
        hints = [f" (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(name, accepted, n=1))
                 else "" for name in unknown]  # fmt: skip
        named = ", ".join(f"{name!r}{hint}" for name, hint in zip(unknown, hints, strict=True))
        raise ConfigError(f"{env_id} has no argument {named}; its arguments: {', '.join(sorted(accepted))}")
