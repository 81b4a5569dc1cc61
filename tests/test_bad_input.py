"""Bad input gets one clear line before any work starts (issue 64): each case here failed late, slowly or with a
traceback before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """`command` in `cwd` with the hub offline and an empty Hugging Face cache (plus `env`), captured."""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(cwd / "hf-home"), **env}
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "command",
    [
        [
            "pettingllms-eval",
            "--env",
            "plan-path-v0",
            "--policy",
            "runs/does_not_exist",
            "--output",
            "r.json",
        ],
        [
            "pettingllms-eval",
            "--env",
            "plan-path-v0",
            "--policy",
            "tool=oracle,plan=runs/nope",
            "--output",
            "r.json",
        ],
        ["pettingllms-train", "--model_name_or_path", "runs/does_not_exist", "--output_dir", "out"],
    ],
    ids=["eval-policy", "eval-agent-spec", "train-model"],
)
def test_a_missing_relative_model_path_is_one_line_naming_both_readings(command, tmp_path):
    """`runs/does_not_exist` has the shape of a hub id: with no such folder and no such cached model it is one
    line saying both, not transformers' retries and a traceback."""
    done = _run([str(BIN / command[0]), *command[1:]], tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "no such folder here" in lines[0] and "no such model in the local Hugging Face cache" in lines[0]


@pytest.mark.parametrize("answer", [5, None, ["<answer>R</answer>"], {"answer": "R"}])
def test_a_tool_answer_that_is_not_text_costs_what_unusable_text_costs(answer):
    """Through TRL's tool, JSON arguments that are no string used to be refused at no cost, so stalling earned
    more than trying: now they are an unusable answer, with its penalty and the env's explanation."""
    from pettingllms.integrations.trl import ToolEnvironment

    def played(reply):
        env = ToolEnvironment("plan-path-v0", "plan", {"tool": lambda observation: "no proposal"}, {})
        env.reset(seed=3)
        return env.submit(reply), env.get_reward()

    text, reward = played(answer)
    unusable_text, unusable_reward = played("garbage")
    assert reward == unusable_reward < 0
    assert text.startswith(f"Your answer must be text, not {type(answer).__name__}")
    assert text.splitlines()[1:] == unusable_text.splitlines()  # the same observation, the same explanation


@pytest.mark.parametrize("seed", ["abc", None, -1, 1.5])
def test_a_tool_reset_with_a_bad_seed_names_the_seed(seed):
    from pettingllms.core.errors import ConfigError
    from pettingllms.integrations.trl import ToolEnvironment

    env = ToolEnvironment("plan-path-v0", "plan", {"tool": lambda observation: "no proposal"}, {})
    with pytest.raises(ConfigError, match=r"reset\(seed="):
        env.reset(seed=seed)
