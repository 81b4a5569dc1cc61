"""math-v0 end to end: equivalent and wrong answers, agreement, the tool agent's code, datasets."""

from pathlib import Path

import pytest
from markers import needs_bwrap  # noqa: E402

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.envs.math.env import PARSE_ERROR_PENALTY

FIXTURES = Path(__file__).parent / "fixtures" / "math"
PROBLEM = {"problem": "What is 3 divided by 4?", "answer": "\\frac{3}{4}"}


def env_with(problem=PROBLEM, **kwargs):
    env = pettingllms.make("math-v0", **kwargs)
    env.reset(options={"problem": problem})
    return env


@pytest.mark.parametrize("answer", ["\\frac{3}{4}", "0.75", "3/4", "\\dfrac{3}{4}"])
def test_equivalent_forms_are_correct(answer):
    env = env_with(workflow="single")
    env.step(f"Dividing gives \\boxed{{{answer}}}.")
    info = env.infos["reasoner"]
    assert info["success"] and info["reward_local"] == 1.0 and info["reward_team"] == 1.0
    assert env.terminations["reasoner"]


@pytest.mark.parametrize("answer", ["0.7", "4/3", "\\frac{3}{5}", "x"])
def test_wrong_forms_are_wrong(answer):
    env = env_with(workflow="single")
    env.step(f"\\boxed{{{answer}}}")
    assert not env.infos["reasoner"]["success"] and env.infos["reasoner"]["reward_local"] == 0.0


def test_nested_braces_and_the_last_box_count():
    env = env_with(workflow="single")
    env.step("first \\boxed{1} then \\boxed{\\frac{3}{{4}}}")
    assert env.infos["reasoner"]["success"]


def test_missing_box_is_a_penalty_with_an_explanation():
    env = env_with()
    env.step("the answer is three quarters")
    info = env.infos["reasoner"]
    assert info["reward_local"] == -PARSE_ERROR_PENALTY and "\\boxed" in info["error"]


@needs_bwrap
def test_agreement_ends_the_episode_and_the_tool_sees_the_reasoners_answer():
    env = env_with()
    env.step("\\boxed{0.75}")
    assert "\\boxed{0.75}" in env.observe("tool")
    env.step("```python\nfrom fractions import Fraction\nprint(Fraction(3, 4))\n```")
    assert env.infos["tool"]["correct"] and all(env.terminations.values())
    assert env.unwrapped.success


@needs_bwrap
def test_disagreement_continues_and_a_wrong_revision_takes_the_team_reward_back():
    env = env_with()
    env.step("\\boxed{3/4}")
    env.step("```python\nprint(0.7)\n```")
    assert not any(env.terminations.values())
    assert "0.7" in env.observe("reasoner")
    env.step("\\boxed{0.7}")
    assert env.infos["reasoner"]["reward_team"] == -1.0 and not env.unwrapped.success


@needs_bwrap
def test_a_tool_program_that_prints_a_flood_shows_the_reasoner_a_bounded_prompt():
    """The tool's answer is what its program prints; shown in full, 40,000 characters made a 30,000-token prompt
    (no memory plan or vLLM context covers that). Every part the reasoner is shown is cut to SHOWN_CHARS."""
    from pettingllms.envs.math.env import SHOWN_CHARS

    env = env_with()
    env.step("\\boxed{3/4}")
    env.step("```python\nprint('0 ' * 20000)\n```")
    assert not any(env.terminations.values())
    shown = env.observe("reasoner")
    assert "[truncated]" in shown and len(shown) < 4 * SHOWN_CHARS


@pytest.mark.parametrize("workflow", ["mas", "ensemble"])
def test_a_32kb_boxed_answer_is_shown_capped_and_the_instructions_stay(workflow):
    """An echoed answer is the agent's own text: uncapped, one `\\boxed{}` of 32 KB filled the next prompt."""
    from pettingllms.envs.math.env import SHOWN_CHARS

    env = env_with(workflow=workflow)
    # mas: the reasoner's answer is shown to the tool, then the tool's to the reasoner; ensemble: the two
    # reasoners' answers to the aggregator, then its answer to the next turn's reasoners (different answers: no
    # agreement ends the episode)
    steps = [[1], [2]] if workflow == "mas" else [[1, 2], [3]]
    for digits in steps:
        for digit in digits:
            env.step("\\boxed{" + str(digit) * 32_768 + "}")
        agent = env.agent_selection
        shown = env.observe(agent)
        assert "[truncated]" in shown and len(shown) < 3 * SHOWN_CHARS, (agent, len(shown))
        assert shown.rstrip().endswith(env.unwrapped._answer_format(agent).rstrip())  # the instructions stay


@needs_bwrap
@pytest.mark.parametrize("code", ["while True:\n    pass", "import sys\nsys.exit(1)", "pass"])
def test_failing_tool_code_is_a_penalty(code):
    env = env_with(tool_timeout=0.5)
    env.step("\\boxed{3/4}")
    env.step(f"```python\n{code}\n```")
    info = env.infos["tool"]
    assert info["reward_local"] == -PARSE_ERROR_PENALTY and info["error"]


def test_generated_train_and_eval_problems_are_disjoint_and_seeded():
    env = pettingllms.make("math-v0").unwrapped
    ids = {}
    for split in ("train", "eval"):
        ids[split] = set()
        for seed in range(80):
            env.reset(seed=seed, options={"split": split})
            ids[split].add(env.problem.id)
            assert env.instance_split() == split
    assert ids["train"] and ids["eval"] and not ids["train"] & ids["eval"]
    env.reset(seed=5)
    first = env.problem
    env.reset(seed=5)
    assert env.problem == first


@pytest.mark.parametrize("name", ["math500", "aime2024", "gsm8k"])
def test_datasets_load_from_local_files(name):
    files = sorted(FIXTURES.glob(f"{name}*"))
    if not files:
        pytest.skip(f"no fixture for {name}")
    env = pettingllms.make("math-v0", dataset=name, dataset_path=str(files[0]))
    env.reset(seed=0, options={"split": "eval"})
    env.step(env.unwrapped.solution())
    assert env.unwrapped.success


def test_evaluation_sets_refuse_the_train_split_and_bad_problems_are_named():
    files = sorted(FIXTURES.glob("math500*"))
    if files:
        env = pettingllms.make("math-v0", dataset="math500", dataset_path=str(files[0]))
        with pytest.raises(ConfigError, match="evaluation"):
            env.reset(options={"split": "train"})
    env = pettingllms.make("math-v0")
    with pytest.raises(ConfigError, match="problem"):
        env.reset(options={"problem": {"question_text": "?"}})
