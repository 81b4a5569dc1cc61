"""The layering checker of `tests/test_import_contract.py`: what a module imports, read from its source, and the
imports that go up `LAYERS`.

A module imports (`imports_in`), at any depth of its source (function-level imports count):
- what its `import` and `from ... import` statements name, relative ones (`from . import x`, `from ..a import b`)
  resolved against the module's own package; `from m import n` counts `m` and `m.n` (n may be a submodule);
- the module of each `importlib.import_module(...)` or `__import__(...)` call whose name is a string constant
  (a relative one resolved as above) or an f-string, whose constant prefix up to its last dot is counted
  (`f"pettingllms.models.{name}"` imports from `pettingllms.models`);
- every string constant that names a module of the package (`module_references`): `"pettingllms.a.b"`, or an
  entry point `"pettingllms.a.b:name"`. Lazy-export tables and env registrations hold their targets so, and a
  string the walk cannot follow (`import_module(table[name])`) is counted where it is written.
An import whose name is computed from anything else (`import_module(prefix + name)`) is not seen.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pettingllms"

LAYERS = (
    "trainers",
    "presentation",
    "integrations",
    "eval",
    "parallel",
    "warmstart",
    "rollout",
    "runs",
    "backends",
    "pools",
    "models",
    "envs",
    "data",
    "core",
    "sandbox",
    "testing",
)
"""The layers, top to bottom (docs/architecture.md's diagram): the subpackages of `pettingllms`. The warm start
evaluates through the rollout engine, so it sits above it; `models` is below the backends that load models."""

TOP = "top level"
"""The layer of the package's top-level modules (the CLI): above every layer."""

MODULE_REFERENCE = re.compile(r"pettingllms(?:\.[A-Za-z_]\w*)+(?::[\w.]+)?")


def module_name(path: Path, root: Path = PACKAGE.parent) -> str:
    """The dotted name of the module at `path` under `root` (a package's `__init__.py`: the package)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = PACKAGE.parent) -> set[str]:
    """Every module the file at `path` (under `root`) imports (`imports_in`)."""
    return imports_in(module_name(path, root), path.read_text(), is_package=path.name == "__init__.py")


def imports_in(module: str, source: str, *, is_package: bool = False) -> set[str]:
    """Every module that `module`, whose text is `source`, imports (module docs); `is_package`: `module` is a
    package's `__init__`, the base of its relative imports."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    found = set(module_references(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(node.module or "", node.level, package)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Call) and _is_import_call(node.func) and node.args:
            found.update(_called_name(node.args[0], package))
    return found


def module_references(tree: ast.AST) -> list[str]:
    """The package modules that string constants of `tree` name (an entry point's `:name` dropped)."""
    return [
        node.value.partition(":")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and MODULE_REFERENCE.fullmatch(node.value)
    ]


def resolve(name: str, level: int, package: str) -> str:
    """The absolute name of `name` imported with `level` leading dots from within `package`."""
    if level == 0:
        return name
    parts = package.split(".")
    if level > len(parts):
        raise ValueError(f"a relative import of {name!r} with {level} dots goes above {package!r}")
    base = ".".join(parts[: len(parts) - level + 1])
    return f"{base}.{name}" if name else base


def _is_import_call(func: ast.expr) -> bool:
    """Whether a call of `func` imports by name: `importlib.import_module`, `import_module`, `__import__`."""
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def _called_name(argument: ast.expr, package: str) -> list[str]:
    """The module an import call's first argument names: a constant, or an f-string's constant prefix up to its
    last dot; none when it is computed otherwise."""
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        name = argument.value
    elif (
        isinstance(argument, ast.JoinedStr)
        and argument.values
        and isinstance(argument.values[0], ast.Constant)
    ):
        name = str(argument.values[0].value).rpartition(".")[0]
    else:
        return []
    dots = len(name) - len(name.lstrip("."))
    return [resolve(name[dots:], dots, package)] if name else []


def layer_of(module: str, top_level: Iterable[str] = ()) -> str | None:
    """The layer of a `pettingllms` module: its subpackage in `LAYERS`, or `TOP` for a top-level module named in
    `top_level` (e.g. "cli"); None for the package itself, its attributes (`pettingllms.make`) and other projects'
    modules."""
    parts = module.split(".")
    if parts[0] != "pettingllms" or len(parts) < 2:
        return None
    if parts[1] in LAYERS:
        return parts[1]
    return TOP if parts[1] in set(top_level) else None


def upward_imports(root: Path = PACKAGE.parent) -> list[str]:
    """Every import, in the `pettingllms` package under `root`, of a layer above the importing module's own, as
    "module (layer) imports name (layer)"; the top-level modules may import anything."""
    package = root / "pettingllms"
    top_level = {path.stem for path in package.glob("*.py")} - {"__init__"}
    order = (TOP, *LAYERS)
    found = []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, root)
        own = layer_of(module, top_level)
        for name in sorted(imports_of(path, root)) if own not in (None, TOP) else ():
            target = layer_of(name, top_level)
            if target is not None and order.index(target) < order.index(own):
                found.append(f"{module} ({own}) imports {name} ({target})")
    return found


TRAINER_ROOMS = ("outputs", "policies", "settings", "update")
"""The rooms of `pettingllms.trainers` (docs/architecture.md); beside them, at the top of `trainers/`, the loop
(`LOOP`) and the advantages."""
LOOP = ("at_grpo", "cli", "schedule")
"""The modules of the loop: they may import every room, and no room imports them."""
ROOM_NEVER_IMPORTS = {
    "update": ("policies", "outputs", "loop"),
    "settings": ("policies", "loop"),
    "policies": ("outputs", "loop"),
    "outputs": ("loop",),
}
"""What each room must not import: the update knows nothing of where policies live or of what a run writes; the
settings read the allowed values from the modules that implement them (the loss, the micro-batching, the
advantages, the trackers) but never the policies; the policies know nothing of the run's outputs."""


def trainer_room(module: str) -> str | None:
    """The room of a module of `pettingllms.trainers` ("loop" for `LOOP`'s, "advantages"), None elsewhere."""
    parts = module.split(".")
    if parts[:2] != ["pettingllms", "trainers"] or len(parts) < 3:
        return None
    if parts[2] in TRAINER_ROOMS:
        return parts[2]
    return "loop" if parts[2] in LOOP else parts[2]


def forbidden_room_imports(root: Path = PACKAGE.parent) -> list[str]:
    """Every import, inside `pettingllms.trainers` under `root`, that `ROOM_NEVER_IMPORTS` forbids, as
    "module (room) imports name (room)"."""
    found = []
    for path in sorted((root / "pettingllms" / "trainers").rglob("*.py")):
        module = module_name(path, root)
        forbidden = ROOM_NEVER_IMPORTS.get(trainer_room(module) or "", ())
        for name in sorted(imports_of(path, root)):
            if trainer_room(name) in forbidden:
                found.append(f"{module} ({trainer_room(module)}) imports {name} ({trainer_room(name)})")
    return found


def import_circles(root: Path = PACKAGE.parent) -> list[list[str]]:
    """Every circle of imports between the modules of the `pettingllms` package under `root` (each a sorted list of
    two or more modules that import one another, directly or through others). A module's import of one of its own
    ancestor packages is no edge: Python has loaded those before the module runs, so it orders nothing."""
    modules = {module_name(path, root): path for path in (root / "pettingllms").rglob("*.py")}
    graph = {
        module: sorted(
            name
            for name in imports_of(path, root)
            if name in modules and name != module and not module.startswith(name + ".")
        )
        for module, path in modules.items()
    }
    return strongly_connected(graph)


def strongly_connected(graph: dict[str, list[str]]) -> list[list[str]]:
    """The components of two or more nodes of the directed `graph` (node -> its successors) in which every node
    reaches every other (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            successor = next(successors, None)
            if successor is not None:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(graph.get(successor, []))))
                elif successor in on_stack:
                    low[node] = min(low[node], index[successor])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles
