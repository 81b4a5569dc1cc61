import subprocess
import sys

import pytest
from pettingzoo.utils.wrappers import BaseWrapper

import pettingllms
from pettingllms.core.env import TextAECEnv
from pettingllms.core.errors import ConfigError, DependencyNotInstalled, NameNotFound, VersionNotFound


def test_make_returns_wrapped_env_with_raw_unwrapped():
    env = pettingllms.make("plan-path-v0")
    assert isinstance(env, BaseWrapper)
    assert isinstance(env.unwrapped, TextAECEnv)
    assert type(env).__name__ == "OrderEnforcing"
    assert type(env.env).__name__ == "TextActionChecker"


def test_registry_lists_builtin_envs_and_is_read_only():
    assert {"sokoban-v0", "sudoku-v0", "plan-path-v0"} <= set(pettingllms.registry)
    with pytest.raises(TypeError):
        pettingllms.registry["x-v0"] = None  # type: ignore[index]


def test_unknown_name_suggests_close_ids_and_lists_registered():
    with pytest.raises(NameNotFound) as caught:
        pettingllms.make("sokobn-v0")
    message = str(caught.value)
    assert "Did you mean 'sokoban-v0'" in message
    assert "plan-path-v0" in message


def test_unknown_version_lists_versions():
    with pytest.raises(VersionNotFound, match="sokoban-v0"):
        pettingllms.make("sokoban-v7")


def test_unknown_errors_are_key_errors_with_readable_text():
    with pytest.raises(KeyError) as caught:
        pettingllms.spec("nothing-v0")
    assert str(caught.value).startswith("no environment named 'nothing-v0'")


def test_malformed_id_is_rejected_on_register():
    with pytest.raises(ValueError, match="name-vN"):
        pettingllms.register("no_version", entry_point="x:y")


def test_register_rejects_duplicates_and_loads_string_entry_points():
    spec = pettingllms.register(
        "test-dummy-v3", entry_point="pettingllms.envs.plan_path.env:PlanPathEnv", kwargs={"size": 4}
    )
    try:
        with pytest.raises(ValueError, match="already registered"):
            pettingllms.register("test-dummy-v3", entry_point="x:y")
        assert spec.name == "test-dummy" and spec.version == 3
        env = pettingllms.make("test-dummy-v3", obstacle_density=0.0)
        assert env.unwrapped.puzzle.size == 4 and env.unwrapped.puzzle.obstacle_density == 0.0
    finally:
        pettingllms.core.registration._REGISTRY.pop("test-dummy-v3")


def test_missing_dependency_names_the_extra(tmp_path, monkeypatch):
    (tmp_path / "env_needing_a_dependency.py").write_text("import not_a_real_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    pettingllms.register("test-missing-v0", entry_point="env_needing_a_dependency:Env", extra="train")
    try:
        with pytest.raises(DependencyNotInstalled, match=r"pettingllms\[train\]"):
            pettingllms.make("test-missing-v0")
    finally:
        pettingllms.core.registration._REGISTRY.pop("test-missing-v0")


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"workflow": "team"}, "workflow"),
        ({"alpha": float("nan")}, "alpha"),
        ({"alpha": "1"}, "alpha"),
        ({"max_turns": 0}, "max_turns"),
        ({"render_mode": "rgb"}, "render_mode"),
    ],
)
def test_bad_arguments_name_the_field_and_allowed_values(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        pettingllms.make("sokoban-v0", **kwargs)


@pytest.mark.parametrize("env_id", sorted(pettingllms.registry))
def test_an_argument_the_env_does_not_take_is_named_with_the_ones_it_does(env_id):
    with pytest.raises(
        ConfigError, match=f"{env_id} has no argument 'colour'; its arguments: .*alpha.*workflow"
    ):
        pettingllms.make(env_id, colour="red")


def test_a_misspelt_argument_gets_a_suggestion_and_a_kwargs_factory_is_not_second_guessed():
    with pytest.raises(ConfigError, match="no argument 'sise' \\(did you mean 'size'\\?\\)"):
        pettingllms.make("plan-path-v0", sise=7)
    from pettingllms.core.registration import accepted_arguments

    assert accepted_arguments(lambda **kwargs: None) is None
    assert accepted_arguments(lambda *, size=3: None) == {"size"}
    assert {"size", "obstacle_density", "alpha", "workflow"} <= accepted_arguments(
        pettingllms.core.registration.spec("plan-path-v0").load()
    )


def test_importing_the_package_imports_no_env_module_and_no_torch():
    code = (
        "import sys, pettingllms; "
        "bad = [m for m in sys.modules if m.startswith('pettingllms.envs.') and m.count('.') > 2 or m == 'torch']; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_wrappers_take_text_refuse_other_actions_and_enforce_the_order():
    import numpy as np

    env = pettingllms.make("plan-path-v0")
    with pytest.raises(Exception, match="reset"):
        env.step("<answer>R</answer>")  # PettingZoo's order check, before any reset
    env.reset(seed=3)
    twin = pettingllms.make("plan-path-v0")
    twin.reset(seed=3)
    env.step(np.str_("<answer>R</answer>"))  # a numpy string is text
    twin.step("<answer>R</answer>")
    assert env.observe(env.agent_selection) == twin.observe(twin.agent_selection)
    assert env.infos == twin.infos
    for action in (3, None, b"<answer>R</answer>", ["R"]):
        with pytest.raises(TypeError, match=f"action of agent {env.agent_selection!r} must be a str"):
            env.step(action)
    env = pettingllms.make("plan-path-v0", max_turns=1)
    env.reset(seed=3)
    while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        env.step("<answer>R</answer>")
    with pytest.raises(TypeError, match="has finished: its action must be None"):
        env.step("<answer>R</answer>")
    env.step(None)  # a finished agent's action is None
