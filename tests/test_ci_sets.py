"""What CI runs beyond the default set is written down where it runs: `.ci/run` runs the README's test command and
reads the lower-bound list, whose modules all exist and all need the model stack (so they test something there)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_lower_bound_list_names_model_stack_modules_that_exist():
    listed = (ROOT / "scripts" / "lower_bound_tests.txt").read_text().split()
    assert listed and len(set(listed)) == len(listed)
    for name in listed:
        text = (ROOT / name).read_text()
        assert re.search(r'importorskip\("(torch|trl|transformers)"\)', text), (
            f"{name} does not need the model stack"
        )
    for module in ("test_trl_adapter.py", "test_activation_checkpointing.py", "test_precision.py"):
        assert f"tests/{module}" in listed  # transformers' and TRL's APIs at their lowest accepted versions


def test_ci_runs_the_readmes_test_command_and_the_lower_bound_list():
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    command = ".venv/bin/python -m pytest -q"
    assert command in readme.split("\n\n")[1] or command in readme[:2000]
    assert f"PETTINGLLMS_REQUIRE_BROWSER=1 {command}  #" in ci
    assert "$(cat scripts/lower_bound_tests.txt)" in ci and '.venv-vllm/bin/python -m pytest -q -m "vllm and' in ci
