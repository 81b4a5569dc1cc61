"""Regression tests of the sharp edges a user of another framework met (issue 16, items 6-10): action spaces
that contain every string, short space reprs, observation transforms that still pass `api_test`, per-instance
metadata, turn numbers after truncation, and missing dependencies refused at `make()` instead of zero rewards."""

import subprocess
import sys

import pytest
from pettingzoo.test import api_test
from pettingzoo.utils.wrappers import AssertOutOfBoundsWrapper, CaptureStdoutWrapper

import pettingllms
from pettingllms.core.errors import DependencyNotInstalled

PUZZLES = ("sokoban-v0", "sudoku-v0", "plan-path-v0")
ODD_ANSWERS = [
    "<answer>U</answer>\r\n",
    "<answer>\U0001f600 U</answer>",
    "<answer>" + "U " * 20_000 + "</answer>",
]


@pytest.mark.parametrize("env_id", PUZZLES)
def test_every_string_a_model_can_produce_is_in_the_action_space(env_id):
    env = AssertOutOfBoundsWrapper(pettingllms.make(env_id))
    env.reset(seed=0)
    space = env.action_space(env.agent_selection)
    assert all(space.contains(answer) for answer in ODD_ANSWERS) and not space.contains(b"bytes")
    for answer in ODD_ANSWERS:  # the assertion wrapper lets each through to step
        if env.agents:
            env.step(answer)


def test_spaces_print_short_and_sample_inside_themselves():
    env = pettingllms.make("sokoban-v0")
    action, observation = env.action_space("plan"), env.observation_space("plan")
    assert len(repr(action)) < 120 and len(repr(observation)) < 200  # was 55,000 characters
    action.seed(3)
    samples = [action.sample() for _ in range(200)]
    assert all(action.contains(s) and len(s) <= 64 and s.isascii() for s in samples)
    action.seed(3)
    assert [action.sample() for _ in range(200)] == samples  # seeded
    observation.seed(0)
    text = observation.sample()
    assert observation.contains(text) and len(text) <= observation.max_length


def shout(text: str) -> str:
    return text.upper()  # a plain str, as any str method returns


@pytest.mark.usefixtures("quiet_pettingzoo_advice")
def test_an_observation_transform_that_returns_a_plain_str_still_passes_api_test():
    env = pettingllms.ObservationTransform(pettingllms.make("plan-path-v0"), shout)
    api_test(env, num_cycles=20)
    env.reset(seed=0)
    observation = env.observe("plan")
    assert isinstance(observation, pettingllms.TextObservation) and observation.startswith("# PLAN-PATH-V0")
    assert env.clone().observe("plan") == observation


def test_wrapping_one_env_leaves_every_other_envs_metadata_alone():
    before = {env_id: pettingllms.make(env_id).unwrapped.metadata["render_modes"][:] for env_id in PUZZLES}
    wrapped = CaptureStdoutWrapper(pettingllms.make("sokoban-v0", render_mode="human"))
    assert wrapped.metadata["render_modes"].count("ansi") >= 1
    after = {env_id: pettingllms.make(env_id).unwrapped.metadata["render_modes"] for env_id in PUZZLES}
    assert after == before


@pytest.mark.parametrize("env_id", PUZZLES)
def test_a_truncated_episode_reads_its_last_turn_not_one_past_it(env_id):
    env = pettingllms.make(env_id, workflow="single", max_turns=2, render_mode="ansi")
    env.reset(seed=0)
    while env.agents:
        _, _, termination, truncation, _ = env.last()
        env.step(None if termination or truncation else "no answer here")
    assert "turn 2 of 2" in str(env.unwrapped.observe("plan")) and "turn 3" not in env.render()


def test_code_env_without_a_usable_sandbox_is_refused_at_make(monkeypatch):
    import pettingllms.sandbox as sandbox

    def unusable():
        raise sandbox.SandboxUnavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")

    monkeypatch.setattr(sandbox, "default_sandbox", unusable)
    with pytest.raises(
        DependencyNotInstalled, match=r"code-v0 scores every answer by running code in bubblewrap"
    ):
        pettingllms.make("code-v0")
    assert pettingllms.make("code-v0", sandbox=object()) is not None  # a sandbox given: nothing to check


def test_math_env_without_math_verify_is_refused_at_make_naming_the_math_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "math_verify", None)  # `import math_verify` raises ImportError
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'pettingllms\[math\]'"):
        pettingllms.make("math-v0")


def test_pettingllms_list_says_what_each_env_needs_and_builds_none():
    listed = subprocess.run(
        [sys.executable, "-m", "pettingllms.cli", "list"], capture_output=True, text=True, check=True
    ).stdout
    lines = {line.split()[0]: line for line in listed.splitlines()}
    assert set(lines) == {env_id for env_id in pettingllms.registry if "/" not in env_id} | {
        "textarena/<game"
    }
    assert "Needs: bubblewrap (every reward runs code" in lines["code-v0"]
    assert "Needs: the [math] extra" in lines["math-v0"]
    assert "walk from @ to the goal G".lower() in lines["plan-path-v0"].lower()


def test_each_math_agent_sees_its_own_earlier_answer_as_its_own():
    pytest.importorskip("math_verify")
    env = pettingllms.make("math-v0", max_turns=3)
    env.reset(seed=0)
    env.step("\\boxed{12345}")  # the reasoner
    tool_view = env.observe("tool")
    env.step("\\boxed{54321}")  # the tool agent disagrees: the episode goes on
    reasoner_view = env.observe("reasoner")
    assert "## The reasoner's answer\n\\boxed{12345}" in tool_view
    assert (
        "## Your previous answer\n\\boxed{12345}" in reasoner_view and "The reasoner's" not in reasoner_view
    )
    assert "## The tool agent's answer" in reasoner_view
