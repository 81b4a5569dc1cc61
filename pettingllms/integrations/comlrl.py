"""The envs under CoMLRL's trainer (`comlrl` 1.4.3, the `comlrl` extra): MAGRPO on a PettingLLMs team.

    from comlrl.trainers.reinforce import MAGRPOTrainer
    from datasets import Dataset
    from pettingllms.integrations.comlrl import MAGRPOBridge

    bridge = MAGRPOBridge("plan-path-v0")
    trainer = MAGRPOTrainer(
        agent_model="path/to/model", num_agents=len(bridge.agents), tokenizer=tokenizer,
        train_dataset=Dataset.from_list(bridge.dataset(range(64))), formatters=bridge.formatters,
        reward_func=bridge.reward, external_transition=bridge.transition,
        args=bridge.config(num_generations=4, max_new_tokens=64),
    )
    trainer.train()

CoMLRL's agents act *together* in each turn: every agent's prompt of turn t is written before any of them answers,
and the turn's reward scores their joint action. The env's agents act *in turn* (PettingZoo's AEC order): in
plan-path the plan agent's prompt holds the tool agent's proposal of the same turn. The bridge maps a CoMLRL turn to
one env turn: agent i of CoMLRL is `agents[i]` (the env's `possible_agents`, in its acting order); each agent's prompt
is its observation at the start of the turn (so the plan agent sees the board and the last turn's report, never a
proposal of the turn it answers in; plan-path's report names the plan agent's own answer only, so no tool proposal
reaches the plan agent and the tool agent's answers change no reward: `pettingllms.make(env_id, turns="joint")`
plays an env in these turns, `pettingllms-eval --turns joint` evaluates a team so); the joint action is then stepped in the AEC order (`agents[0]`'s completion,
then `agents[1]`'s, ...), and the turn's reward is the env's team reward summed over those steps (1 when the turn
solves the instance, else 0). An instance solved at turn t stays solved: CoMLRL may still expand its branch (its
tree has `num_turns` levels unless `early_termination_threshold` stops it), and those later turns pay 0 and step
nothing. The env is deterministic given its seed and the answers, so each branch's env is the instance's reset
replayed with the branch's answers (`transition`).

CoMLRL calls the three callables in an order the bridge relies on (1.4.3's, for training and for its evaluation):
the formatters of a tree's root (every agent's, with no external prompt) before the root's rewards, and
`external_transition` before each child's generation and rewards; `reward` scores the node the last of these set
up. A reward called otherwise is refused (`RuntimeError`), never scored against another node's env: before any
node was set up, or with a prompt that is neither the node's first agent's (training) nor the instance's first
prompt (CoMLRL's evaluation passes that one at every turn).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.core.extras import require_extra

Formatter = Callable[..., str]


class MAGRPOBridge:
    """An env's instances, prompts, rewards and transitions as CoMLRL's `MAGRPOTrainer` takes them (module
    docstring). `env_id` must be a team workflow (two or more agents); `split` is where `dataset` draws seeds.
    `prompt_text` writes an observation as the text CoMLRL tokenizes (it applies no chat template: for a model
    tuned on chat turns, e.g. `chat_prompt_text(tokenizer)`); None: the observation as it is."""

    def __init__(
        self,
        env_id: str,
        *,
        split: str = "train",
        env_kwargs: dict[str, Any] | None = None,
        prompt_text: Callable[[str], str] | None = None,
    ):
        if env_id not in pettingllms.registry:
            raise ConfigError(f"env_id={env_id!r} is not registered; allowed: {sorted(pettingllms.registry)}")
        if split not in ("train", "val", "eval"):
            raise ConfigError(f"split={split!r}: choose one of ['train', 'val', 'eval']")
        self.env_id, self.split, self.env_kwargs = env_id, split, dict(env_kwargs or {})
        self._text: Callable[[str], str] = prompt_text or str
        probe = pettingllms.make(env_id, **self.env_kwargs)
        self.agents: list[str] = list(probe.possible_agents)
        self.max_turns: int = int(probe.unwrapped.max_turns)
        if len(self.agents) < 2:
            raise ConfigError(
                f"{env_id} under {self.env_kwargs} has one agent, {self.agents}: MAGRPO trains a team"
            )
        self._node: Any = None  # the env whose turn the next `reward` scores (module docstring)
        self._first_prompts: dict[str, str] = {}  # instance key -> its first agent's prompt at the start
        self.formatters: list[Formatter] = [self._formatter(index) for index in range(len(self.agents))]

    # ----------------------------------------------------------------- what CoMLRL takes
    def dataset(self, seeds: Iterable[int]) -> list[dict[str, Any]]:
        """One row per seed: `prompt` names the instance (CoMLRL hands it to `transition`), `seed` and `split` reset
        it. The rows' prompts are never shown to a model: the formatters write the agents' prompts."""
        return [{"prompt": self._key(int(seed)), "seed": int(seed), "split": self.split} for seed in seeds]

    def config(self, **overrides: Any) -> Any:
        """CoMLRL's `MAGRPOConfig` for this env: `num_agents` its agents, `num_turns` its turn limit, and no early
        termination (its default, -0.2, ends every branch whose mean reward exceeds it: every branch here, whose
        rewards are 0 or 1); `overrides` go on top."""
        require_extra("comlrl", "MAGRPOBridge.config")
        from comlrl.trainers.reinforce import MAGRPOConfig

        settings = {
            "num_agents": len(self.agents),
            "num_turns": self.max_turns,
            "early_termination_threshold": None,
        }
        return MAGRPOConfig(**{**settings, **overrides})

    def reward(
        self, *completions: Sequence[str], batch_items: Any = None, prompts: Any = None
    ) -> list[float]:
        """The team reward of one joint action (one completion per agent, as CoMLRL passes them) stepped on a copy of
        the current node's env in the AEC order; 0 once the instance is solved or the turns are spent."""
        if self._node is None:
            raise RuntimeError(
                "MAGRPOBridge.reward was called before the formatters of a tree's root or an external_transition: "
                "CoMLRL's call order is not the one this bridge follows (module docstring)"
            )
        if len(completions) != len(self.agents):
            raise ValueError(
                f"{len(completions)} agents' completions for {self.env_id}'s agents {self.agents}"
            )
        if prompts is not None and batch_items:
            self._check_node(prompts[0], batch_items[0]["prompt"])
        env = self._node.clone()
        team = 0.0
        for agent, answers in zip(self.agents, completions):
            if _over(env):
                break
            [answer] = answers
            env.step(answer)
            team += float(env.infos[agent]["reward_team"])
        return [team]

    def transition(
        self,
        prompt: str,
        agent_completions: Sequence[str],
        num_agents: int,
        prompt_history_per_agent: Sequence[Sequence[str]],
        response_history_per_agent: Sequence[Sequence[str]],
    ) -> list[str]:
        """The agents' prompts of the next turn on a branch: the instance `prompt` names, reset and replayed with
        the branch's answers (`response_history_per_agent`, this turn's included); it becomes the node `reward`
        scores next."""
        if num_agents != len(self.agents):
            raise ValueError(f"num_agents={num_agents}: {self.env_id} has agents {self.agents}")
        env = self._fresh(prompt)
        for turn in range(len(response_history_per_agent[0])):
            for history in response_history_per_agent:  # the agents' answers of `turn`, in the AEC order
                if _over(env):
                    break
                env.step(history[turn])
        self._node = env
        return [self._text(str(env.observe(agent))) for agent in self.agents]

    # ----------------------------------------------------------------- helpers
    def _check_node(self, prompt: str, key: str) -> None:
        """Refuse to score `prompt`'s joint action on the current node unless `prompt` is that node's first
        agent's prompt or the instance's first one (module docstring)."""
        if prompt == self._text(str(self._node.observe(self.agents[0]))):
            return
        if key not in self._first_prompts:
            self._first_prompts[key] = self._text(str(self._fresh(key).observe(self.agents[0])))
        if prompt != self._first_prompts[key]:
            raise RuntimeError(
                "MAGRPOBridge.reward: the prompt is not the current node's (CoMLRL's call order is not the one this "
                "bridge follows, module docstring): refusing to score it against another node's env"
            )

    def _formatter(self, index: int) -> Formatter:
        agent = self.agents[index]

        def format_prompt(item: dict[str, Any], external_prompts: str | None = None) -> str:
            """`agent`'s prompt: the transition's, else its observation at the instance's start (the last agent's
            root formatter makes that start the node `reward` scores next)."""
            if external_prompts is not None:
                return external_prompts
            env = self._fresh(item["prompt"])
            if index == len(self.agents) - 1:
                self._node = env
            return self._text(str(env.observe(agent)))

        format_prompt.__name__ = f"format_{agent}"
        return format_prompt

    def _key(self, seed: int) -> str:
        return f"{self.env_id}|{self.split}|{seed}"

    def _fresh(self, key: str) -> Any:
        """The instance `key` names (a row's `prompt`), reset."""
        env_id, split, seed = key.rsplit("|", 2) if key.count("|") >= 2 else ("", "", "")
        if env_id != self.env_id or split != self.split or not seed.lstrip("-").isdigit():
            raise ValueError(
                f"row prompt {key!r} names no instance of this bridge ({self._key(0)!r} is one): build the "
                "dataset with MAGRPOBridge.dataset"
            )
        env = pettingllms.make(self.env_id, **self.env_kwargs)
        env.reset(seed=int(seed), options={"split": split})
        return env


def chat_prompt_text(tokenizer: Any, *, enable_thinking: bool | None = None) -> Callable[[str], str]:
    """An observation written as `tokenizer`'s chat template writes one user message with the generation prompt,
    as text (the prompt every backend of this package feeds a model, `pettingllms.backends.chat`): the
    `prompt_text` of a bridge whose model was tuned on chat turns."""
    from pettingllms.backends.chat import chat_prompt_ids

    def prompt_text(observation: str) -> str:
        ids = chat_prompt_ids(tokenizer, observation, enable_thinking=enable_thinking)
        return tokenizer.decode(ids, skip_special_tokens=False)

    return prompt_text


def _over(env: Any) -> bool:
    acting = env.agent_selection
    return not env.agents or env.terminations[acting] or env.truncations[acting]
