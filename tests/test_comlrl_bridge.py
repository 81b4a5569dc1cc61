"""The envs under CoMLRL's MAGRPO trainer (`pettingllms.integrations.comlrl`): the bridge's prompts, rewards and
transitions against the env played by hand, in the call order of CoMLRL's tree rollout; then CoMLRL's own trainer
for two steps on the tiny model, training and evaluating through the bridge."""

from __future__ import annotations

import pytest

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.integrations.comlrl import MAGRPOBridge

ENV_ID = "plan-path-v0"


def _played(seed: int, turns: list[tuple[str, str]]) -> tuple[object, list[float]]:
    """plan-path-v0's train instance `seed` played by hand, turn by turn (tool's answer, then plan's, while the
    episode lasts): the env after them and each turn's team reward."""
    env = pettingllms.make(ENV_ID)
    env.reset(seed=seed, options={"split": "train"})
    rewards = []
    for answers in turns:
        team = 0.0
        for agent, answer in zip(("tool", "plan"), answers):
            acting = env.agent_selection
            if not env.agents or env.terminations[acting] or env.truncations[acting]:
                break
            assert env.agent_selection == agent
            env.step(answer)
            team += env.infos[agent]["reward_team"]
        rewards.append(team)
    return env, rewards


def _oracle(seed: int) -> dict[str, str]:
    env = pettingllms.make(ENV_ID)
    env.reset(seed=seed, options={"split": "train"})
    return {agent: env.unwrapped.solution(agent) for agent in env.possible_agents}


def test_a_tree_walked_in_comlrls_order_gets_the_hand_played_prompts_and_rewards():
    """Root formatters, the root's K rewards, then per branch: transition, the child's rewards (CoMLRL 1.4.3)."""
    bridge = MAGRPOBridge(ENV_ID)
    [row] = bridge.dataset([7])
    oracle, wrong = _oracle(7), {"tool": "no idea", "plan": "<answer>U</answer>"}
    start, _ = _played(7, [])
    prompts = [format_prompt(row) for format_prompt in bridge.formatters]
    assert prompts == [str(start.observe("tool")), str(start.observe("plan"))]
    joint = [(wrong["tool"], wrong["plan"]), (oracle["tool"], oracle["plan"])]
    for tool, plan in joint:  # the root's K joint actions, each on the root's env
        expected = _played(7, [(tool, plan)])[1]
        assert bridge.reward([tool], [plan], batch_items=[row], prompts=[prompts[0]]) == expected
    assert _played(7, [joint[1]])[1] == [1.0]  # the oracle solves in one turn: a reward that fires
    for branch in joint:  # each branch: its next prompts, then its children's rewards
        asked, answered = [[prompts[0]], [prompts[1]]], [[branch[0]], [branch[1]]]
        child_prompts = bridge.transition(row["prompt"], list(branch), 2, asked, answered)
        after, _ = _played(7, [branch])
        assert child_prompts == [str(after.observe("tool")), str(after.observe("plan"))]
        for tool, plan in joint:
            expected = _played(7, [branch, (tool, plan)])[1][1]
            assert bridge.reward([tool], [plan], batch_items=[row], prompts=[child_prompts[0]]) == [expected]
    # the solved branch pays nothing more and steps nothing; the wrong one can still be solved at turn 2
    assert _played(7, [joint[1], joint[1]])[1] == [1.0, 0.0]
    assert _played(7, [joint[0], joint[1]])[1] == [0.0, 1.0]


def test_comlrls_evaluation_order_scores_each_turn_on_its_own_node():
    """CoMLRL's evaluation passes the instance's first prompt at every turn: still scored on the turn's node."""
    bridge = MAGRPOBridge(ENV_ID)
    [row] = bridge.dataset([3])
    oracle = _oracle(3)
    first = [format_prompt(row) for format_prompt in bridge.formatters][0]
    wrong = ("no idea", "<answer>U</answer>")
    assert bridge.reward([wrong[0]], [wrong[1]], batch_items=[row], prompts=[first]) == [0.0]
    bridge.transition(row["prompt"], list(wrong), 2, [[first], [""]], [[wrong[0]], [wrong[1]]])
    assert bridge.formatters[0](row) == first  # evaluation's reward prompt; the node stays the turn's
    expected = _played(3, [wrong, (oracle["tool"], oracle["plan"])])[1][1]
    assert bridge.reward([oracle["tool"]], [oracle["plan"]], batch_items=[row], prompts=[first]) == [expected]


def test_out_of_order_calls_and_bad_settings_are_refused_by_name():
    bridge = MAGRPOBridge(ENV_ID)
    [row] = bridge.dataset([1])
    with pytest.raises(RuntimeError, match="before the formatters"):
        bridge.reward(["a"], ["b"], batch_items=[row], prompts=["x"])
    [format_prompt(row) for format_prompt in bridge.formatters]
    with pytest.raises(RuntimeError, match="not the current node's"):
        bridge.reward(["a"], ["b"], batch_items=[row], prompts=["another prompt"])
    with pytest.raises(ValueError, match="names no instance of this bridge"):
        bridge.transition("sokoban-v0|train|1", ["a", "b"], 2, [[], []], [["a"], ["b"]])
    with pytest.raises(ConfigError, match="has one agent"):
        MAGRPOBridge(ENV_ID, env_kwargs={"workflow": "single"})
    with pytest.raises(ConfigError, match="split='test'"):
        MAGRPOBridge(ENV_ID, split="test")
    with pytest.raises(ConfigError, match="env_id='plan-path-v9' is not registered"):
        MAGRPOBridge("plan-path-v9")


def test_comlrls_own_trainer_trains_and_evaluates_two_steps_through_the_bridge(tiny_model, one_torch_thread):
    """MAGRPOTrainer (CoMLRL 1.4.3) on plan-path-v0 with the untrained tiny model: two rows, two turns, K = 2,
    its evaluation every step; every prompt it generated from is one of the bridge's observations."""
    pytest.importorskip("comlrl")
    from comlrl.trainers.reinforce import MAGRPOTrainer
    from datasets import Dataset
    from transformers import AutoTokenizer

    bridge = MAGRPOBridge(ENV_ID)
    seen: list[str] = []
    transitions: list[int] = []

    def transition(**kwargs):
        transitions.append(len(kwargs["response_history_per_agent"][0]))
        prompts = bridge.transition(**kwargs)
        seen.extend(prompts)
        return prompts

    rows = bridge.dataset([0, 1])
    trainer = MAGRPOTrainer(
        agent_model=tiny_model,
        num_agents=2,
        tokenizer=AutoTokenizer.from_pretrained(tiny_model),
        train_dataset=Dataset.from_list(rows),
        eval_dataset=Dataset.from_list(rows[:1]),
        formatters=bridge.formatters,
        reward_func=bridge.reward,
        external_transition=transition,
        args=bridge.config(
            num_turns=2, num_generations=2, max_new_tokens=4, num_train_epochs=1, eval_interval=1,
            eval_num_samples=1, rollout_buffer_size=1, logging_steps=1,
        ),
    )  # fmt: skip
    trainer.train()
    # per row, the root's 2 joint actions each expand a child; before each row, evaluation's one path
    assert transitions == [1] * 6
    assert seen and all("- turn 2 of" in prompt for prompt in seen)


def test_prompts_written_with_the_chat_template_are_the_ids_every_backend_feeds_the_model(tiny_model):
    """CoMLRL tokenizes its prompts as text, with no chat template: `chat_prompt_text` writes them as the chat
    template does, and the tokenizer reads that text back to the backends' ids."""
    from transformers import AutoTokenizer

    from pettingllms.backends.chat import chat_prompt_ids
    from pettingllms.integrations.comlrl import chat_prompt_text

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    bridge = MAGRPOBridge(ENV_ID, prompt_text=chat_prompt_text(tokenizer))
    [row] = bridge.dataset([5])
    start, _ = _played(5, [])
    prompts = [format_prompt(row) for format_prompt in bridge.formatters]
    for agent, prompt in zip(("tool", "plan"), prompts):
        assert str(start.observe(agent)) in prompt and prompt != str(start.observe(agent))
        assert tokenizer(prompt).input_ids == chat_prompt_ids(  # as CoMLRL tokenizes it
            tokenizer, str(start.observe(agent))
        )
    oracle = _oracle(5)
    assert bridge.reward([oracle["tool"]], [oracle["plan"]], batch_items=[row], prompts=[prompts[0]]) == [1.0]
    with pytest.raises(
        RuntimeError, match="not the current node's"
    ):  # the bare observation is not its prompt
        bridge.reward(["a"], ["b"], batch_items=[row], prompts=[str(start.observe("tool"))])
    child = bridge.transition(row["prompt"], ["x", "y"], 2, [[prompts[0]], [prompts[1]]], [["x"], ["y"]])
    assert all(text.startswith(prompts[0][:20]) and "turn 2 of" in text for text in child)
