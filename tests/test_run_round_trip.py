"""A real run, read back: train -> checkpoint -> `pettingllms-eval --policy RUN`, for the three policy layouts.

Evaluation reads runs only through `pettingllms.runs.layout`; these tests check that what it loads from a run
folder is, for every agent, the policy the trainer trained (greedy completions and their log-probabilities
agree), and that `pettingllms-eval` runs on the folder.
"""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import LETTERS_ENV, args_for  # noqa: E402

from pettingllms.backends.base import SamplingConfig  # noqa: E402
from pettingllms.eval import cli as eval_cli  # noqa: E402
from pettingllms.eval.policy_specs import load_policies  # noqa: E402
from pettingllms.runs.layout import RunLayout  # noqa: E402
from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")

GREEDY = SamplingConfig(temperature=0.0, max_new_tokens=8)
PROMPTS = ["write some letters", "the quick brown fox"]


@pytest.mark.parametrize(
    "flags",
    [
        ("--policy_layout", "shared"),
        ("--policy_layout", "per_role"),
        ("--policy_layout", "lora_per_role", "--agent_policies", '{"tool": "proposer", "plan": "planner"}'),
    ],
    ids=["shared", "per_role", "lora_per_role"],
)
def test_evaluation_loads_the_policies_the_trainer_trained(tiny_model, tmp_path, flags):
    run = tmp_path / "run"
    trainer = ATGRPOTrainer(args_for(tiny_model, run, *flags), log=lambda _: None)
    trainer.train()  # two steps, a checkpoint after each, the weights changed by the updates
    checkpoint = RunLayout(run).latest_intact()
    assert checkpoint is not None and checkpoint.read_state()["step"] == 2

    by_run = load_policies(dict.fromkeys(trainer.agents, str(run)), LETTERS_ENV)
    by_checkpoint = load_policies(dict.fromkeys(trainer.agents, str(checkpoint.folder)), LETTERS_ENV)
    assert by_checkpoint.weights == by_run.weights  # the run folder names its newest intact checkpoint
    loaded = by_run
    for agent in trainer.agents:
        trained = trainer.policies.backends[trainer.policies.agent_policy[agent]]
        read_back = loaded.backends[loaded.agent_policy[agent]]
        for ours, theirs in zip(
            trained.generate(PROMPTS, 1, GREEDY), read_back.generate(PROMPTS, 1, GREEDY), strict=True
        ):
            assert ours[0].completion_ids == theirs[0].completion_ids, agent
            assert ours[0].logprobs == pytest.approx(theirs[0].logprobs, abs=1e-4), agent
    if "lora_per_role" in flags:  # the two adapters were trained apart: the agents' policies differ
        assert loaded.resolved[loaded.agent_policy["tool"]] != loaded.resolved[loaded.agent_policy["plan"]]

    output = tmp_path / "eval.json"
    assert (
        eval_cli.main(
            [
                "--env",
                LETTERS_ENV,
                "--policy",
                str(run),
                "--output",
                str(output),
                "--episodes",
                "2",
                "--no_progress",
            ]
        )
        == 0
    )
    report = json.loads(output.read_text())
    assert report and str(run) in output.read_text()
