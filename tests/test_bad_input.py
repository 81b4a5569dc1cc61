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


@pytest.mark.parametrize("spec", ["tiny", "tiny-untrained"])
def test_the_tiny_model_on_an_env_without_demonstrations_is_one_line_naming_what_to_use(spec, tmp_path):
    """It was built from the env's solver demonstrations; bargain-v0 has none (before: an error from inside the
    build, after the suite was made)."""
    command = [str(BIN / "pettingllms-eval"), "--env", "bargain-v0", "--policy", spec, "--output", "r.json"]
    done = _run(command, tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"policy '{spec}' on bargain-v0" in lines[0] and "smollm2" in lines[0], lines


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


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--learning_rate", "nan"], ["learning_rate=nan must be a finite number"]),
        (["--learning_rate", "-0.001"], ["learning_rate=-0.001 must be >= 0"]),
        (["--learning_rate", "inf"], ["learning_rate=inf must be a finite number"]),
        (
            ["--learning_rate", "nan", "--max_steps", "0", "--top_p", "1.5"],
            ["3 settings are wrong", "learning_rate=nan", "max_steps=0", "top_p=1.5 must be in (0, 1]"],
        ),
        (
            ["--env_kwargs", '{"size": 99, "colour": 1}'],
            ["env_kwargs names ['colour']", "env_kwargs={'size': 99}: size=99 must be an integer in [2, 30]"],
        ),
    ],
    ids=["nan-lr", "negative-lr", "infinite-lr", "three-fields", "env-kwargs"],
)
def test_a_bad_training_setting_is_refused_before_anything_is_built_naming_every_bad_field(
    flags, named, tmp_path, capsys
):
    from pettingllms.trainers.cli import main

    output_dir = tmp_path / "run"
    assert main(["--output_dir", str(output_dir), *flags]) == 2
    captured = capsys.readouterr()
    assert all(part in captured.err for part in named), captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert "building the built-in tiny model" not in captured.out  # nothing was built first
    assert not output_dir.exists()  # the refused run left no folder (and no config.json) behind


def test_a_yaml_config_that_is_not_utf8_is_one_line_naming_the_byte(tmp_path, capsys):
    from pettingllms.trainers.cli import main

    config = tmp_path / "run.yaml"
    config.write_bytes(b"learning_rate: 1.0e-4\n# caf\xe9\n")
    assert main(["--config", str(config)]) == 2
    assert f"--config {config}: not UTF-8 text (byte 0xe9 at offset 27)" in capsys.readouterr().err


def test_the_trainer_itself_checks_the_env_before_it_takes_the_folder(tmp_path):
    from pettingllms.core.errors import ConfigError
    from pettingllms.trainers import ATGRPOTrainer
    from pettingllms.trainers.settings.arguments import parse

    args = parse(["--output_dir", str(tmp_path / "run"), "--env_kwargs", '{"size": 1}'])
    with pytest.raises(ConfigError, match="size=1 must be an integer"):
        ATGRPOTrainer(args, log=lambda _: None)
    assert not (tmp_path / "run").exists()


def test_a_reply_with_lone_surrogates_keeps_its_verifiers_trace_writable():
    """A reply of invalid UTF-8 decoded leniently holds lone surrogates: scored as before, and the trace's record
    of it is something verifiers' own serializer writes (the raw text made it refuse the whole trace)."""
    pytest.importorskip("verifiers")
    import numpy as np
    from verifiers.v1.trace import Trace

    import pettingllms
    from pettingllms.integrations.verifiers_env import _Episode

    hostile = "<answer>R\udcff\ud800 D</answer>"
    env = pettingllms.make("plan-path-v0")
    env.reset(seed=3)
    episode = _Episode(env, {"plan"}, "oracle", np.random.default_rng(3))
    episode.play_others()
    episode.act(hostile)
    answers = episode.answers["plan"]
    written = Trace.model_construct(info={"answers": answers}).model_dump_json(include={"info"})
    assert "\\\\udcff" in written and "\\\\ud800" in written
    with pytest.raises(ValueError, match="surrogates not allowed"):  # what the raw reply did to the trace
        Trace.model_construct(info={"answers": [hostile]}).model_dump_json(include={"info"})


@pytest.mark.parametrize(
    ("output", "named"),
    [
        ("afile/r.json", "--output {tmp}/afile/r.json: its folder {tmp}/afile: is a file"),
        (
            "cachedir/r.json",
            "the episode cache of --output, {tmp}/cachedir/r.json.episodes.jsonl: is a folder",
        ),
        (
            "/proc/pettingllms/r.json",
            "--output /proc/pettingllms/r.json: its folder /proc/pettingllms: cannot write",
        ),
    ],
    ids=["parent-is-a-file", "cache-is-a-folder", "unwritable"],
)
def test_an_eval_output_that_cannot_be_written_is_refused_before_any_episode(output, named, tmp_path, capsys):
    from pettingllms.eval.cli import main

    (tmp_path / "afile").write_text("")
    (tmp_path / "cachedir" / "r.json.episodes.jsonl").mkdir(parents=True)
    target = Path(output) if output.startswith("/") else tmp_path / output
    assert (
        main(["--env", "plan-path-v0", "--policy", "oracle", "--episodes", "2", "--output", str(target)]) == 2
    )
    err = capsys.readouterr().err
    assert named.format(tmp=tmp_path) in err and len(err.strip().splitlines()) == 1, err
    assert not target.with_name(target.name + ".transcripts.jsonl").exists()  # nothing was played


@pytest.mark.parametrize(
    "where", ["afile/run", "/proc/pettingllms/run"], ids=["parent-is-a-file", "unwritable"]
)
def test_a_training_output_dir_that_cannot_be_written_is_refused_before_anything_is_built(
    where, tmp_path, capsys
):
    from pettingllms.trainers.cli import main

    (tmp_path / "afile").write_text("")
    output_dir = Path(where) if where.startswith("/") else tmp_path / where
    assert main(["--output_dir", str(output_dir)]) == 2
    captured = capsys.readouterr()
    assert (
        f"output_dir {output_dir}:" in captured.err and "building the built-in tiny model" not in captured.out
    )


def test_every_test_the_bad_input_table_names_exists():
    """docs/bad_input.md names, for each bad input, the test that holds it: each named test is in its file."""
    import ast
    import re

    table = (ROOT / "docs" / "bad_input.md").read_text()
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", table)
    assert len(named) >= 15
    for path, name in named:
        tree = ast.parse((ROOT / path).read_text())
        tests = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert name in tests, f"{path}::{name} is named in docs/bad_input.md but does not exist"
