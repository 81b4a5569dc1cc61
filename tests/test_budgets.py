"""Budgets that hold and generation that scales: a completion cut by its budget is flagged by every backend and
counted per agent in training and evaluation, evaluations run at the run's own budget, bf16 loads and generates in
bf16, and the rows of one sampler batch are bounded."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

import test_qwen3_tokenizer  # noqa: E402
from letters import LETTERS_ENV, args_for  # noqa: E402

from pettingllms.backends.base import SamplingConfig, cut_at_stop  # noqa: E402
from pettingllms.backends.hf import HFPolicy  # noqa: E402
from pettingllms.backends.openai_compat import OpenAIPolicy  # noqa: E402
from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.eval import metrics  # noqa: E402
from pettingllms.eval.episode_cache import EpisodeCache, EpisodeRecord, _link  # noqa: E402
from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402
from pettingllms.trainers.settings.arguments import parse  # noqa: E402

qwen3_home = test_qwen3_tokenizer.qwen3_home


@pytest.fixture(scope="module")
def qwen3_folder(qwen3_home):
    from pettingllms.models.qwen3_test import ensure_qwen3_test

    return ensure_qwen3_test()


def test_the_hf_backend_flags_exactly_the_completions_its_budget_cut(qwen3_folder):
    policy = HFPolicy.from_pretrained(qwen3_folder, seed=0)
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=3, stop=("e",))
    generations = [
        g for group in policy.generate(["Find the path.", "Push the box."], 8, sampling) for g in group
    ]
    for g in generations:
        ended = g.completion_ids[-1] in policy.eos_token_ids or cut_at_stop(g.text, ["e"]) is not None
        assert g.truncated == (not ended)
        assert not g.truncated or len(g.completion_ids) == 3
    assert {g.truncated for g in generations} == {True, False}  # both kinds occur in this draw


def test_an_openai_server_says_length_and_receives_the_thinking_switch(monkeypatch):
    policy = OpenAIPolicy("http://127.0.0.1:9/v1", "m")
    sent = []

    def answer(body):
        sent.append(body)
        return {
            "choices": [
                {"index": 0, "message": {"content": "<think>long"}, "finish_reason": "length"},
                {
                    "index": 1,
                    "message": {"content": "<answer>R"},
                    "finish_reason": "stop",
                    "stop_reason": "</answer>",
                },
            ]
        }

    monkeypatch.setattr(policy, "_post", answer)
    [[cut, done]] = policy.generate(["p"], 2, SamplingConfig(stop=("</answer>",), enable_thinking=False))
    assert cut.truncated and not done.truncated and done.text == "<answer>R</answer>"
    assert sent[0]["chat_template_kwargs"] == {"enable_thinking": False}
    policy.generate(["p"], 2, SamplingConfig(stop=("</answer>",)))
    assert "chat_template_kwargs" not in sent[1]


@pytest.mark.usefixtures("letters_env")
def test_training_and_evaluation_report_the_truncated_share_per_agent(tiny_model, tmp_path):
    trainer = ATGRPOTrainer(
        args_for(tiny_model, tmp_path, "--max_completion_length", "1"), log=lambda _: None
    )
    metrics_ = trainer.train_step()
    evaluation = trainer.evaluate()
    trainer.close()
    for agent in ("tool", "plan"):  # one token is never a whole answer of the letters env
        assert metrics_[f"train/truncated/{agent}"] == 1.0
        assert evaluation[f"eval/truncated/{agent}"] == 1.0


def test_training_reports_the_unparseable_share_per_agent(tiny_model, tmp_path):
    """One token is never a usable plan-path answer: every sample the step trained on was a parse error, and the
    step's `train/parse_error/<agent>` says so for each agent (the share the pretrained study plots per step)."""
    args = args_for(tiny_model, tmp_path, "--env_id", "plan-path-v0", "--max_completion_length", "1")
    trainer = ATGRPOTrainer(args, log=lambda _: None)
    metrics_ = trainer.train_step()
    trainer.close()
    assert {agent: metrics_[f"train/parse_error/{agent}"] for agent in trainer.agents} == {
        agent: 1.0 for agent in trainer.agents
    }


@pytest.mark.usefixtures("letters_env")
def test_evaluation_runs_at_the_runs_budget_unless_one_is_set(tiny_model, tmp_path):
    args = args_for(tiny_model, tmp_path / "a", "--max_completion_length", "5")
    args.eval_max_completion_length = None  # the tiny configs set one (the suite's); unset, the training one
    trainer = ATGRPOTrainer(args, log=print)
    assert trainer._sampling("tool", train=False).max_new_tokens == 5
    trainer.close()
    flags = ("--max_completion_length", "5", "--eval_max_completion_length", "7")
    trainer = ATGRPOTrainer(args_for(tiny_model, tmp_path / "b", *flags), log=print)
    assert trainer._sampling("tool", train=False).max_new_tokens == 7
    assert trainer._sampling("tool", train=True).max_new_tokens == 5
    trainer.close()


@pytest.mark.usefixtures("letters_env")
def test_pettingllms_eval_plays_a_runs_models_at_the_runs_budget(tiny_model, tmp_path, capsys):
    from pettingllms.eval.cli import main as eval_main

    run = tmp_path / "run"
    args = args_for(tiny_model, run, "--max_steps", "1", "--max_completion_length", "3")
    args.eval_max_completion_length = None  # the tiny configs set one (the suite's); unset, the training one
    ATGRPOTrainer(args, log=print).train()
    for extra, budget in (((), 3), (("--max_new_tokens", "6"), 6)):
        output = tmp_path / f"eval{budget}.json"
        argv = [
            "--env",
            LETTERS_ENV,
            "--policy",
            str(run),
            "--episodes",
            "2",
            "--output",
            str(output),
            *extra,
        ]
        assert eval_main([*argv, "--no_progress"]) == 0
        report = json.loads(output.read_text())["results"][LETTERS_ENV]
        assert {s["max_new_tokens"] for s in report["run_sampling"].values()} == {budget}
        assert set(report["truncated_rate"]) == {"tool", "plan"}
    argv = [
        "--env",
        LETTERS_ENV,
        "--policy",
        str(run),
        "--episodes",
        "2",
        "--output",
        str(tmp_path / "t.json"),
    ]
    assert (
        eval_main([*argv, "--enable_thinking", "false", "--no_progress"]) == 2
    )  # the flag reaches the template
    assert "has no enable_thinking switch" in capsys.readouterr().err


def test_the_truncated_rate_by_hand_and_rows_cached_before_it_was_counted(tmp_path):
    records = [
        EpisodeRecord("a", True, 1, {"tool": 1, "plan": 1}, {}, 10, {}, {"tool": 1, "plan": 0}),
        EpisodeRecord("b", False, 3, {"tool": 3, "plan": 3}, {}, 10, {}, {"tool": 0, "plan": 3}),
    ]
    assert metrics.summarize("plan-path-v0", records)["truncated_rate"] == {"plan": 0.75, "tool": 0.25}
    path = tmp_path / "cache.jsonl"
    old = {"run": "k", "key": "a", "success": True, "turns": 1, "steps": {"plan": 1}, "errors": {"plan": 0},
           "tokens": 4, "returns": {"plan": 1.0}}  # fmt: skip
    path.write_text(json.dumps({**old, "chain": _link("", old)}) + "\n")
    cached = EpisodeCache(path, "k", log=print).records["a"]
    assert cached.truncated is None and cached.success
    assert "truncated_rate" not in metrics.summarize("plan-path-v0", [cached])


def test_bf16_loads_and_generates_in_bf16_and_rows_per_batch_are_bounded(qwen3_folder, tmp_path):
    from pettingllms.trainers.policies.build import build_policies

    args = parse(["--env_id", "plan-path-v0", "--model_name_or_path", "qwen3-test", "--bf16", "true",
                  "--use_cpu", "true", "--max_generation_rows", "4", "--output_dir", str(tmp_path),
                  "--report_to", "none"])  # fmt: skip
    policies = build_policies(args, ["tool", "plan"], log=print)
    backend = policies.backends["tool"]
    assert {p.dtype for p in backend.model.parameters()} == {torch.bfloat16}
    assert backend.max_batch_rows == 4
    calls = []
    original = backend._sample
    backend._sample = lambda rows, *rest: calls.append(len(rows)) or original(rows, *rest)
    [group, _, _] = backend.generate(["a", "b", "c"], 2, SamplingConfig(max_new_tokens=3))
    assert calls == [4, 2] and len(group) == 2  # groups are never split: 2 prompts x K=2, then 1 x 2


def test_a_qwen3_row_ends_at_the_context_with_the_real_template(qwen3_folder, tmp_path):
    """The context cap of `HFPolicy` on qwen3-test in bf16 (the real tokenizer and chat template): a prompt left 2
    tokens of context generates the first 2 tokens of its uncapped completion, marked truncated."""
    from pettingllms.trainers.policies.build import build_policies

    args = parse(["--env_id", "plan-path-v0", "--model_name_or_path", "qwen3-test", "--bf16", "true",
                  "--use_cpu", "true", "--output_dir", str(tmp_path), "--report_to", "none"])  # fmt: skip
    backend = build_policies(args, ["tool", "plan"], log=print).backends["plan"]
    greedy = SamplingConfig(temperature=0.0, max_new_tokens=6)
    [[free]] = backend.generate(["Walk from @ to G."], 1, greedy)
    assert len(free.completion_ids) == 6  # no eos in the first 6 tokens: the cap below is what ends the row
    saved = backend.model.config.max_position_embeddings
    backend.model.config.max_position_embeddings = len(free.prompt_ids) + 2
    try:
        [[capped]] = backend.generate(["Walk from @ to G."], 1, greedy)
    finally:
        backend.model.config.max_position_embeddings = saved
    assert capped.prompt_ids == free.prompt_ids
    assert capped.completion_ids == free.completion_ids[:2] and capped.truncated


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ("--policy_sampling", '{"tool": {"temprature": 1.0}}'),
            r"policy_sampling\['tool'\].*unknown: \['temprature'\]",
        ),
        (("--eval_max_completion_length", "0"), "eval_max_completion_length=0 must be >= 1"),
        (("--max_generation_rows", "0"), "max_generation_rows=0 must be >= 1"),
    ],
)
def test_bad_budget_and_sampling_settings_name_the_field(flags, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        parse(["--output_dir", str(tmp_path), *flags])


@pytest.mark.usefixtures("letters_env")
def test_a_thinking_setting_for_a_template_without_the_switch_is_refused_before_any_step(
    tiny_model, tmp_path
):
    for flags in (
        ("--enable_thinking", "false"),
        ("--policy_eval_sampling", '{"plan": {"enable_thinking": true}}'),
    ):
        with pytest.raises(ConfigError, match="has no enable_thinking switch: leave enable_thinking"):
            ATGRPOTrainer(args_for(tiny_model, tmp_path / flags[0], *flags), log=print)
