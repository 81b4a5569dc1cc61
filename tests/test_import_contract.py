"""The package's layering, checked on its source (`tests/layering.py`: an AST walk of every module's imports, lazy,
relative and string ones included).

- each layer of `LAYERS` (docs/architecture.md's diagram, top to bottom) imports only itself and the layers below
  it, and no top-level module (the CLI); the layers are the package's subpackages and the diagram lists them in
  that order;
- envs, core, the sandbox and the env checks (`testing`) never import torch, trl, transformers or the trainers
  (environment users install neither); of the bridges, the ones `import pettingllms` loads (gymnasium) are as
  light, and the TRL bridge imports no trainer module;
- the sandbox imports nothing of the project (it is a leaf: the judge trusts only it);
- rollout knows policies only through `pettingllms.backends.base`'s protocols, never a concrete backend, the
  pools or the trainers;
- evaluation never imports trainer modules (runs are read through `pettingllms.runs`);
- every module a string names (a lazy export, an entry point) exists.

The checker itself is tested on small synthetic packages: each kind of upward import is reported, a clean module
is not.
"""

import ast
import re
import textwrap
from pathlib import Path

import pytest
from layering import (
    LAYERS,
    PACKAGE,
    TRAINER_ROOMS,
    forbidden_room_imports,
    import_circles,
    imports_in,
    imports_of,
    layer_of,
    module_name,
    module_references,
    strongly_connected,
    upward_imports,
)

HEAVY = ("torch", "trl", "transformers", "peft", "vllm", "accelerate", "datasets")


def modules_under(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (PACKAGE / folder).rglob("*.py"))


def violations(paths, forbidden) -> list[str]:
    return [
        f"{module_name(path)} imports {name}"
        for path in paths
        for name in sorted(imports_of(path))
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


def test_every_layer_imports_only_itself_and_the_layers_below_it():
    assert upward_imports() == []
    assert {
        path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()
    } == set(LAYERS)  # a new subpackage is placed in the diagram (and in LAYERS) before it lands


def test_the_architecture_diagram_lists_the_layers_in_their_order():
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    diagram = page.split("```")[1]
    assert tuple(re.findall(r"^ (\w+)/ ", diagram, flags=re.MULTILINE)) == LAYERS


def write_package(root: Path, modules: dict[str, str]) -> Path:
    """A synthetic `pettingllms` under `root`: each dotted module name -> its source (a name ending in
    `.__init__` is a package); every folder gets an `__init__.py`."""
    for name, source in modules.items():
        path = root.joinpath(*name.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    for folder in (root / "pettingllms").rglob("*"):
        if folder.is_dir() and not (folder / "__init__.py").exists():
            (folder / "__init__.py").write_text("")
    (root / "pettingllms" / "__init__.py").touch()
    return root


UPWARD = {
    "absolute": "import pettingllms.trainers.trainer\n",
    "relative": "from ..trainers import trainer\n",
    "lazy": """
        def train():
            from pettingllms.trainers.trainer import Trainer
        """,
    "string": """
        import importlib
        trainer = importlib.import_module("pettingllms.trainers.trainer")
        """,
    "fstring": """
        from importlib import import_module
        def load(name):
            return import_module(f"pettingllms.trainers.{name}")
        """,
    "table": """
        import importlib
        _EXPORTS = {"Trainer": "pettingllms.trainers.trainer"}
        def __getattr__(name):
            return getattr(importlib.import_module(_EXPORTS[name]), name)
        """,
    "entry_point": 'register_namespace("trainer/", "pettingllms.trainers.trainer:resolve")\n',
    "cli": "from pettingllms import cli\n",
}
"""A `core` module per way of importing upward (`trainers`, or the top-level CLI), and its source."""

CLEAN = """
    import importlib
    import os
    import pettingllms
    from pettingllms import make
    from . import absolute
    from .. import sandbox
    from ..sandbox.server import serve
    json = importlib.import_module("json")
    NAME = "pettingllms: an error message"
    """
"""A `core` module that imports itself, a layer below, the package and other projects only."""


def test_the_layering_check_reports_every_kind_of_upward_import_and_nothing_else(tmp_path):
    root = write_package(
        tmp_path,
        {
            "pettingllms.cli": "import pettingllms.trainers.trainer\n",  # the top level may import anything
            "pettingllms.trainers.trainer": "from ..core import clean\n",  # downward
            "pettingllms.sandbox.server": "",
            "pettingllms.core.clean": CLEAN,
            **{f"pettingllms.core.{kind}": source for kind, source in UPWARD.items()},
        },
    )
    expected = {
        f"pettingllms.core.{kind} (core) imports {name}"
        for kind, name in {
            "absolute": "pettingllms.trainers.trainer (trainers)",
            "relative": "pettingllms.trainers (trainers)",
            "lazy": "pettingllms.trainers.trainer (trainers)",
            "string": "pettingllms.trainers.trainer (trainers)",
            "fstring": "pettingllms.trainers (trainers)",
            "table": "pettingllms.trainers.trainer (trainers)",
            "entry_point": "pettingllms.trainers.trainer (trainers)",
            "cli": "pettingllms.cli (top level)",
        }.items()
    }
    reported = upward_imports(root)
    assert expected <= set(reported)
    assert {line.split(" (")[0] for line in reported} == {f"pettingllms.core.{kind}" for kind in UPWARD}


def test_relative_imports_resolve_against_the_modules_own_package():
    assert imports_in("pettingllms.core.env", "from . import text\nfrom .errors import ConfigError") == {
        "pettingllms.core",
        "pettingllms.core.text",
        "pettingllms.core.errors",
        "pettingllms.core.errors.ConfigError",
    }
    assert "pettingllms.core.env" in imports_in(
        "pettingllms.core", "from .env import agent_role", is_package=True
    )
    assert "pettingllms.envs.sokoban" in imports_in("pettingllms.core.env", "from ..envs import sokoban")
    with pytest.raises(ValueError, match="goes above"):
        imports_in("pettingllms.core.env", "from ... import x")


def test_the_walk_sees_lazy_string_and_other_projects_imports():
    """On the real package: an import inside a function counts, the lazy tables' targets count, and a forbidden
    one is reported."""
    assert "ray" in imports_of(PACKAGE / "pools" / "ray_cluster.py")  # imported inside `import_ray`
    assert violations([PACKAGE / "trainers" / "update" / "updater.py"], ("torch",)) == [
        "pettingllms.trainers.update.updater imports torch"
    ]
    assert {"pettingllms.models.home", "pettingllms.models.qwen3_test"} <= imports_of(
        PACKAGE / "models" / "__init__.py"
    )
    assert "pettingllms.envs.sokoban.env" in imports_of(PACKAGE / "envs" / "__init__.py")  # an entry point
    assert imports_in("pettingllms.core.x", "__import__('torch')\nimportlib.import_module('.y')") == {
        "torch",
        "pettingllms.core.y",
    }


def test_every_module_a_string_names_exists():
    """A lazy export or an entry point names a module (`a.b.c`) or an attribute of one (`a.b.C`) that is there."""
    missing = []
    for path in PACKAGE.rglob("*.py"):
        for name in module_references(ast.parse(path.read_text())):
            candidates = (name, name.rpartition(".")[0])
            if not any(
                (PACKAGE.parent.joinpath(*c.split(".")).with_suffix(".py")).is_file()
                or (PACKAGE.parent.joinpath(*c.split(".")) / "__init__.py").is_file()
                for c in candidates
            ):
                missing.append(f"{module_name(path)}: {name}")
    assert missing == []


def test_layers_are_the_subpackages_and_the_top_level_modules_are_above_them():
    assert layer_of("pettingllms.warmstart.build") == "warmstart"
    assert layer_of("pettingllms.models.tiny") == "models" and layer_of("pettingllms.make") is None
    assert layer_of("pettingllms.cli", top_level={"cli"}) == "top level" and layer_of("torch") is None
    assert LAYERS.index("rollout") < LAYERS.index("core")


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


def test_rollout_knows_backends_and_pools_only_through_their_protocols():
    forbidden = [
        f"pettingllms.backends.{m.stem}" for m in (PACKAGE / "backends").glob("*.py") if m.stem != "base"
    ]
    pools = [f"pettingllms.pools.{m.stem}" for m in (PACKAGE / "pools").glob("*.py") if m.stem != "base"]
    assert (
        violations(
            modules_under("rollout"), (*forbidden, *pools, *HEAVY, "pettingllms.trainers")
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


def test_the_trainers_public_names_import_from_the_package_without_loading_torch_until_used():
    import subprocess
    import sys

    code = (
        "import sys; import pettingllms.trainers as t; light = 'torch' not in sys.modules; "
        "from pettingllms.trainers import ATGRPOConfig, ATGRPOTrainer; "
        "from pettingllms.trainers.settings.config import ATGRPOConfig as C; from pettingllms.trainers.at_grpo import "
        "ATGRPOTrainer as T; print(light, ATGRPOConfig is C and ATGRPOTrainer is T, sorted(t.__all__))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True True ['ATGRPOConfig', 'ATGRPOTrainer']"
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        import pettingllms.trainers

        pettingllms.trainers.Nothing  # noqa: B018


def test_no_module_of_the_package_is_in_an_import_circle():
    assert import_circles() == []


def test_the_circle_check_finds_a_circle_through_a_function_level_import_and_ignores_ancestor_packages(
    tmp_path,
):
    root = write_package(
        tmp_path,
        {
            "pettingllms.trainers.handles": "from pettingllms.trainers.ray import RayPolicies\n",
            "pettingllms.trainers.ray": "def f():\n    from pettingllms.trainers.handles import options\n",
            "pettingllms.core.env": "import pettingllms.core\nfrom pettingllms.core import text\n",
            "pettingllms.core.text": "",
        },
    )
    assert import_circles(root) == [["pettingllms.trainers.handles", "pettingllms.trainers.ray"]]


def test_strongly_connected_components_against_a_hand_worked_graph():
    graph = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": ["e"], "e": ["d"], "f": ["f", "a"]}
    assert sorted(strongly_connected(graph)) == [["a", "b", "c"], ["d", "e"]]


def test_no_trainer_room_imports_what_it_must_not():
    assert forbidden_room_imports() == []
    rooms = {path.name for path in (PACKAGE / "trainers").iterdir() if (path / "__init__.py").is_file()}
    assert rooms == set(TRAINER_ROOMS)


def test_the_room_check_reports_the_update_importing_the_policies_and_a_room_importing_the_loop(tmp_path):
    root = write_package(
        tmp_path,
        {
            "pettingllms.trainers.at_grpo": "from pettingllms.trainers.policies import build\n",
            "pettingllms.trainers.policies.build": "from pettingllms.trainers.update import updater\n",
            "pettingllms.trainers.update.updater": "from pettingllms.trainers.policies.build import x\n",
            "pettingllms.trainers.settings.config": "from pettingllms.trainers import at_grpo, advantages\n",
        },
    )
    assert forbidden_room_imports(root) == [
        "pettingllms.trainers.settings.config (settings) imports pettingllms.trainers.at_grpo (loop)",
        "pettingllms.trainers.update.updater (update) imports pettingllms.trainers.policies.build (policies)",
        "pettingllms.trainers.update.updater (update) imports pettingllms.trainers.policies.build.x (policies)",
    ]
