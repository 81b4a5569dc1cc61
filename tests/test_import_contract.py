"""The package's layering, checked on its source (an AST walk of every module's imports, lazy ones included).

- each layer of `LAYERS` (docs/architecture.md's diagram, top to bottom) imports only itself and the layers below
  it;
- envs, core, the sandbox and the env checks (`testing`) never import torch, trl, transformers or the trainers (environment users install
  neither); of the bridges, the ones `import pettingllms` loads (gymnasium) are as light, and the TRL bridge
  imports no trainer module;
- the sandbox imports nothing of the project (it is a leaf: the judge trusts only it);
- rollout knows policies only through `pettingllms.backends.base`'s protocols, never a concrete backend, the
  pools or the trainers;
- evaluation never imports trainer modules (runs are read through `pettingllms.runs`).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pettingllms"
HEAVY = ("torch", "trl", "transformers", "peft", "vllm", "accelerate", "datasets")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (function-level imports count)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def modules_under(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (PACKAGE / folder).rglob("*.py"))


def violations(paths, forbidden) -> list[str]:
    return [
        f"{module_name(path)} imports {name}"
        for path in paths
        for name in sorted(imports_of(path))
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


LAYERS = (
    "trainers",
    "eval",
    "parallel",
    "warmstart",
    "rollout",
    "runs",
    "integrations",
    "backends",
    "pools",
    "models",
    "envs",
    "data",
    "core",
    "sandbox",
    "testing",
)
"""The layers, top to bottom: the subpackages of `pettingllms` (the warm start evaluates through the rollout engine,
so it sits above it; `models` is below the backends that load models)."""


def layer_of(module: str) -> str | None:
    """The layer of a `pettingllms` module (None: the package's top-level modules, the CLI, above every layer)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_every_layer_imports_only_itself_and_the_layers_below_it():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        own = layer_of(module_name(path))
        for name in sorted(imports_of(path)) if own is not None else ():
            target = layer_of(name) if name.startswith("pettingllms.") else None
            if target is not None and LAYERS.index(target) < LAYERS.index(own):
                upward.append(f"{module_name(path)} ({own}) imports {name} ({target})")
    assert upward == []
    assert {
        path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()
    } <= set(LAYERS)  # a new subpackage is placed in the diagram (and here) before it lands


def test_the_layering_check_catches_an_upward_import():
    assert layer_of("pettingllms.warmstart.build") == "warmstart"
    assert layer_of("pettingllms.models.tiny") == "models" and layer_of("pettingllms.cli") is None
    assert LAYERS.index(layer_of("pettingllms.rollout.engine")) < LAYERS.index(
        layer_of("pettingllms.core.env")
    )


def test_the_walk_sees_lazy_imports():
    """The checker itself: an import inside a function counts, and a forbidden one is reported."""
    assert "ray" in imports_of(PACKAGE / "pools" / "ray_cluster.py")  # imported inside `import_ray`
    assert violations([PACKAGE / "trainers" / "updater.py"], ("torch",)) == [
        "pettingllms.trainers.updater imports torch"
    ]


@pytest.mark.parametrize("folder", ["envs", "core", "sandbox", "pools", "runs", "testing"])
def test_the_light_layers_import_no_model_library_and_no_trainer(folder):
    assert violations(modules_under(folder), (*HEAVY, "pettingllms.trainers")) == []


def test_the_bridges_that_import_pettingllms_loads_are_light_and_none_needs_the_trainer():
    light = [PACKAGE / "integrations" / "__init__.py", PACKAGE / "integrations" / "gymnasium_env.py"]
    assert violations(light, (*HEAVY, "pettingllms.trainers")) == []
    # the TRL bridge included
    assert violations(modules_under("integrations"), ("pettingllms.trainers",)) == []


def test_the_sandbox_is_a_leaf():
    paths = modules_under("sandbox")
    outside = [
        f"{module_name(path)} imports {name}"
        for path in paths
        for name in imports_of(path)
        if name.startswith("pettingllms") and not name.startswith("pettingllms.sandbox")
    ]
    assert outside == []


def test_rollout_knows_backends_only_through_their_protocols():
    forbidden = [
        f"pettingllms.backends.{m.stem}" for m in (PACKAGE / "backends").glob("*.py") if m.stem != "base"
    ]
    assert (
        violations(
            modules_under("rollout"), (*forbidden, *HEAVY, "pettingllms.pools", "pettingllms.trainers")
        )
        == []
    )


def test_evaluation_never_imports_the_trainers():
    assert violations(modules_under("eval"), ("pettingllms.trainers",)) == []


def test_importing_the_package_and_an_env_loads_no_model_library():
    import subprocess
    import sys

    code = (
        "import sys, pettingllms; env = pettingllms.make('plan-path-v0'); env.reset(seed=0); "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
