"""A toy environment and a tiny model for trainer tests (shared by test_trainer.py and test_vllm.py).

The environment rewards any text by its share of the letter "e", so that even an untrained model's samples carry
signal.
"""

import pettingllms
from pettingllms.core.env import StepOutcome, TextAECEnv
from pettingllms.trainers.settings.arguments import parse

LETTERS_ENV = "test-letters-v0"


class LettersEnv(TextAECEnv):
    """Two agents write words; each earns the share of 'e' in its answer; the team earns nothing."""

    metadata = {"name": "letters", "render_modes": ["ansi"], "is_parallelizable": False}
    WORKFLOWS = {"mas": ("tool", "plan"), "single": ("plan",)}
    DEFAULT_MAX_TURNS = 1

    def _reset_task(self, options):
        self.word = "".join(self.np_random.choice(list("abcdefgh"), size=4))
        self.success = False

    def _act(self, agent, action):
        share = action.count("e") / max(1, len(action))
        return StepOutcome(reward_local=share)

    def _observation_text(self, agent):
        return f"{agent}: write a word like {self.word}"

    def _render_text(self):
        return self.word


def register_letters():
    """Register `LETTERS_ENV`; returns a function that unregisters it."""
    pettingllms.register(LETTERS_ENV, entry_point=LettersEnv)
    return lambda: pettingllms.core.registration._REGISTRY.pop(LETTERS_ENV)


def build_tiny_model(folder) -> str:
    """Save an untrained tiny Qwen3 and a 300-token tokenizer for the letters env into `folder`."""
    from pettingllms.models.tiny import build_model, config_for_tokenizer
    from pettingllms.models.tokenizer import train_tokenizer

    tokenizer = train_tokenizer(
        [f"{a}: write a word like {w} eeee" for a in ("tool", "plan") for w in ("abcd", "efgh")] * 20,
        vocab_size=300,
    )
    build_model(config_for_tokenizer(tokenizer), seed=0).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def build_imitation_model(folder, env_id: str, episodes: int = 30, steps: int = 40) -> str:
    """Save into `folder` a tiny model fine-tuned for `steps` steps on `env_id`'s answers, half the solver's and half
    random ones (`episodes` training episodes), so that its samples are well-formed and differ; returns the folder."""
    import numpy as np

    from pettingllms.models.tiny import build_model, config_for_tokenizer
    from pettingllms.models.tokenizer import train_tokenizer
    from pettingllms.warmstart.sft import supervised_fine_tune

    rng, env, conversations = np.random.default_rng(0), pettingllms.make(env_id), []
    for seed in range(episodes):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            *_, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            raw = env.unwrapped
            answer = raw.solution(agent) if rng.random() < 0.5 else raw.random_answer(agent, rng)
            conversations.append([
                {"role": "user", "content": str(env.observe(agent))},
                {"role": "assistant", "content": answer},
            ])  # fmt: skip
            env.step(answer)
    tokenizer = train_tokenizer([turn["content"] for c in conversations for turn in c], vocab_size=400)
    model = build_model(config_for_tokenizer(tokenizer), seed=0)
    supervised_fine_tune(model, tokenizer, conversations, steps=steps, batch_size=16)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def train_one_step(model, output_dir, env_id: str, *extra) -> dict[str, bool]:
    """Train `model` one AT-GRPO step on `env_id` (the `args_for` settings plus `extra`); returns, per policy,
    whether any of its parameters changed."""
    from pettingllms.trainers.at_grpo import ATGRPOTrainer

    args = args_for(model, output_dir, "--env_id", env_id, "--max_steps", "1", *extra)
    trainer = ATGRPOTrainer(args, log=lambda _: None)
    updaters = trainer.policies.updaters
    before = {name: [p.detach().clone() for p in u.model.parameters()] for name, u in updaters.items()}
    trainer.train()
    assert trainer.step == 1
    return {
        name: any(not old.equal(new.detach()) for old, new in zip(before[name], updater.model.parameters()))
        for name, updater in updaters.items()
    }


def args_for(tiny_model, output_dir, *extra):
    """Trainer settings for a 2-step letters run of `tiny_model` in `output_dir` (more flags in `extra`)."""
    return parse(
        [
            "--env_id",
            LETTERS_ENV,
            "--model_name_or_path",
            tiny_model,
            "--output_dir",
            str(output_dir),
            "--max_steps",
            "2",
            "--instances_per_step",
            "2",
            "--num_generations",
            "4",
            "--per_device_train_batch_size",
            "8",
            "--max_completion_length",
            "8",
            "--eval_episodes",
            "2",
            "--learning_rate",
            "1e-2",
            "--save_steps",
            "1",
            "--seed",
            "3",
            *extra,
        ]
    )


def run_interrupted(tiny_model, output_dir, *extra):
    """Train 1 step in `output_dir`, then resume to the end in a new trainer; return the resumed trainer."""
    from pettingllms.trainers.at_grpo import ATGRPOTrainer

    ATGRPOTrainer(args_for(tiny_model, output_dir, *extra, "--max_steps", "1"), log=lambda _: None).train()
    resumed = ATGRPOTrainer(args_for(tiny_model, output_dir, *extra, "--resume", "true"), log=lambda _: None)
    assert resumed.step == 1
    resumed.train()
    return resumed


def without_wall_clock(row: dict) -> dict:
    """A metrics row without its wall-clock measures (keys naming time, `timing/...`, and seconds `..._s`), which
    differ between two runs of the same seed."""
    return {
        k: v
        for k, v in row.items()
        if "time" not in k and not k.startswith("timing") and not k.endswith("_s")
    }


def metric_rows(folder) -> list[dict]:
    """The rows of `folder/metrics.jsonl`, each without its wall-clock measures."""
    import json
    from pathlib import Path

    return [
        without_wall_clock(json.loads(line))
        for line in (Path(folder) / "metrics.jsonl").read_text().splitlines()
    ]


def unequal_samples():
    """Five samples of policy "plan" with unequal prompt and completion lengths and unequal advantages."""
    import torch

    from pettingllms.backends.base import Generation
    from pettingllms.rollout.samples import Sample

    rng = torch.Generator().manual_seed(0)
    out = []
    lengths, advantages = [(3, 6), (5, 1), (2, 4), (4, 2), (6, 5)], [1.0, -0.5, 0.25, -1.5, 2.0]
    for index, ((prompt_len, completion_len), advantage) in enumerate(zip(lengths, advantages, strict=True)):
        ids = torch.randint(5, 250, (prompt_len + completion_len,), generator=rng).tolist()
        generation = Generation("", tuple(ids[:prompt_len]), tuple(ids[prompt_len:]))
        sample = Sample(f"g{index}", 0, 0, "plan", "plan", "", "", 0.0, 0.0, 0.0, generation)
        sample.advantage = advantage
        out.append(sample)
    return out
