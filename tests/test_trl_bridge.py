"""`pettingllms.integrations.trl.EpisodeRollout` inside TRL's real `GRPOTrainer`: whole multi-agent episodes, one
agent's turns as one sequence whose scored tokens are exactly what the model was fed."""

import pytest

pytest.importorskip("trl")

import torch  # noqa: E402
from letters import LETTERS_ENV  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.integrations.trl import EpisodeRollout, episode_return  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")


def one_step_config(tmp_path, max_completion_length: int) -> GRPOConfig:
    """TRL's settings for one CPU step of 4 completions of one prompt (K=4)."""
    return GRPOConfig(
        output_dir=str(tmp_path / "trl"),
        per_device_train_batch_size=4,
        num_generations=4,
        max_steps=1,
        max_completion_length=max_completion_length,
        learning_rate=1e-2,
        temperature=1.0,
        use_cpu=True,
        bf16=False,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        seed=0,
    )


def make_trainer(tiny_model, tmp_path, rollout, seeds=range(2)):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    return GRPOTrainer(
        model=model,
        reward_funcs=episode_return,
        args=one_step_config(tmp_path, 64),
        train_dataset=rollout.dataset(seeds),
        processing_class=tokenizer,
        rollout_func=rollout,
    )


def test_one_grpo_step_of_trl_trains_on_whole_episodes(tiny_model, tmp_path):
    rollout = EpisodeRollout(LETTERS_ENV, "plan", max_turns=2, max_new_tokens=6)
    trainer = make_trainer(tiny_model, tmp_path, rollout)
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.train()
    changed = [name for name, p in trainer.model.named_parameters() if not torch.equal(p, before[name])]
    assert changed  # TRL's update moved the weights
    assert trainer.state.global_step == 1


def test_the_sequence_is_the_agents_turns_and_scores_what_the_model_saw(tiny_model, tmp_path):
    rollout = EpisodeRollout(
        LETTERS_ENV, "plan", max_turns=2, max_new_tokens=6, others={"tool": lambda _: "eeee"}
    )
    trainer = make_trainer(tiny_model, tmp_path, rollout)
    tokenizer = trainer.processing_class
    prompts = [f"{LETTERS_ENV} train instance {seed}" for seed in (0, 1)]
    out = rollout(prompts, trainer)
    for row in range(2):
        ids, mask, logps = out["completion_ids"][row], out["env_mask"][row], out["logprobs"][row]
        assert len(ids) == len(mask) == len(logps)
        runs = [mask[0]] + [b for a, b in zip(mask, mask[1:]) if a != b]
        assert runs == [1, 0, 1]  # answer, the next observation, answer: two turns of the plan agent
        first = mask.index(0)
        feedback = tokenizer.decode(ids[first : first + mask[first:].index(1)])  # the env tokens
        assert "plan: write a word like" in feedback
        # the return is the plan agent's reward summed over both turns, recomputed from its decoded answers
        second = first + mask[first:].index(1)
        answers = [tokenizer.decode(part, skip_special_tokens=True) for part in (ids[:first], ids[second:])]
        expected = sum(text.count("e") / max(1, len(text)) for text in answers)
        assert out["episode_return"][row] == pytest.approx(expected, abs=1e-6)
        # log-probs recorded while sampling equal the model's on the whole sequence: the context was the sequence
        sequence = torch.tensor([out["prompt_ids"][row] + ids])
        with torch.no_grad():
            logits = trainer.model(sequence).logits[0, len(out["prompt_ids"][row]) - 1 : -1]
        scored = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(ids)[:, None])[:, 0]
        model_tokens = torch.tensor(mask, dtype=torch.bool)
        assert torch.allclose(scored[model_tokens], torch.tensor(logps)[model_tokens], atol=1e-4)


def test_the_same_seed_replays_the_same_episodes(tiny_model, tmp_path):
    prompts = [f"{LETTERS_ENV} train instance 0"] * 2
    outputs = []
    for _ in range(2):
        rollout = EpisodeRollout(LETTERS_ENV, "plan", max_turns=2, max_new_tokens=6, seed=5)
        outputs.append(rollout(prompts, make_trainer(tiny_model, tmp_path, rollout)))
    assert outputs[0] == outputs[1]
    assert (
        outputs[0]["completion_ids"][0] != outputs[0]["completion_ids"][1]
    )  # K samples of one instance differ


def test_bad_arguments_and_unknown_rows_are_config_errors(tiny_model, tmp_path):
    with pytest.raises(ConfigError, match="agent='coder' is not an agent"):
        EpisodeRollout(LETTERS_ENV, "coder")
    with pytest.raises(ConfigError, match="others names"):
        EpisodeRollout(LETTERS_ENV, "plan", others={"plan": str})
    rollout = EpisodeRollout(LETTERS_ENV, "plan")
    trainer = make_trainer(tiny_model, tmp_path, rollout)
    with pytest.raises(ConfigError, match="is not a row of this rollout's dataset"):
        rollout(["something else"], trainer)


# ------------------------------------------------------------------ environment_factory
TOOL_CALL = '<tool_call>\n{{"name": "submit", "arguments": {{"answer": "{answer}"}}}}\n</tool_call><|im_end|>'


def scripted_generate(tokenizer, answers):
    """A `generate` that writes a `submit` tool call with the next of `answers` when the conversation has no tool
    result yet, and a closing message after one (an untrained model cannot emit tool-call syntax)."""
    cycle = iter(answers * 100)

    def generate(input_ids, attention_mask=None, **kwargs):
        rows = []
        for ids in input_ids.tolist():
            text = tokenizer.decode(ids)
            reply = "done<|im_end|>" if "<tool_response>" in text else TOOL_CALL.format(answer=next(cycle))
            rows.append(tokenizer.encode(reply, add_special_tokens=False) + [tokenizer.eos_token_id])
        width = max(len(row) for row in rows)
        padded = [
            row + [tokenizer.pad_token_id or tokenizer.eos_token_id] * (width - len(row)) for row in rows
        ]
        return torch.cat([input_ids, torch.tensor(padded, device=input_ids.device)], dim=1)

    return generate


def test_trl_environment_factory_trains_an_agent_that_answers_through_a_tool(tiny_model, tmp_path):
    from pathlib import Path

    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pettingllms.integrations.trl import tool_environment

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    model.generate = scripted_generate(tokenizer, ["eeee", "abcd"])  # rewards 1 and 0: the group has signal
    rows = [{"prompt": [{"role": "user", "content": "Play your turn."}], "seed": 3}]
    factory = tool_environment(LETTERS_ENV, "plan", others={"tool": lambda observation: "abc"}, max_turns=1)
    trainer = GRPOTrainer(
        model=model,
        args=one_step_config(tmp_path, 128),
        train_dataset=Dataset.from_list(rows * 4),
        processing_class=tokenizer,
        environment_factory=factory,
    )
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.train()
    logged = trainer.state.log_history[0]
    assert logged["rewards/ToolEnvironment/mean"] == pytest.approx(0.5)  # two "eeee" (1.0), two "abcd" (0.0)
    assert logged["tools/call_frequency"] > 0
    assert any(not torch.equal(p, before[n]) for n, p in trainer.model.named_parameters())


def test_a_tool_environment_needs_a_policy_for_every_other_agent():
    from pettingllms.integrations.trl import tool_environment

    with pytest.raises(ConfigError, match="missing: \\['tool'\\]"):
        tool_environment(LETTERS_ENV, "plan")()
    environment = tool_environment(LETTERS_ENV, "plan", others={"tool": lambda _: "e"})()
    assert environment.reset(seed=0, prompt="ignored").startswith("plan: write a word like")
    assert environment.submit("ee").startswith("The episode is over") and environment.get_reward() == 1.0
    assert environment.submit("ee") == "The episode is over: nothing more to submit."
