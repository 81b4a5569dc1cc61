"""pettingllms environments inside TRL's own `GRPOTrainer` (needs the `train` extra), in TRL's two ways.

`tool_environment(env_id, agent, others=...)` is an `environment_factory`: the trained agent answers through one
tool, `submit(answer)`, which steps the env (the other agents play through `others`) and returns its next
observation; `reset(**row)` takes the row's `seed` (and `split`) and returns the agent's first observation;
`get_reward()` is the agent's episode return. The model must emit tool calls (a tool-calling chat template).

`EpisodeRollout` is a `rollout_func`: `GRPOTrainer(rollout_func=rollout, reward_funcs=episode_return, ...)`
plays one whole multi-agent episode per dataset row, and one agent's turns are what TRL trains.

    rollout = EpisodeRollout("plan-path-v0", agent="plan")
    trainer = GRPOTrainer(model, reward_funcs=episode_return, train_dataset=rollout.dataset(range(64)),
                          rollout_func=rollout, args=GRPOConfig(num_generations=4, ...))

Each row names an instance (`dataset(seeds)`: a `prompt` key and its `seed`); TRL repeats it `num_generations`
times, so a group is K episodes of one instance. In an episode the trainer's model plays the trained `agent` and,
unless `others` gives them a policy (agent -> callable from observation text to answer), every other agent too.
The trained agent's turns become one sequence: its first observation (as a chat prompt) is `prompt_ids`; each of
its answers (`env_mask` 1) follows the observation that led to it (`env_mask` 0), and every answer is sampled
from exactly that context, so the tokens TRL scores are the tokens the model saw. The reward is the trained
agent's return over the episode (`episode_return`); `success` is passed along for logging.

When to use `pettingllms-train` instead: this is trajectory-level GRPO with one trained policy (groups of whole
episodes, the other agents' turns as context). AT-GRPO's groups per (instance, turn, agent) built from K candidates
of one shared state, its team/local reward mixing per step, and one policy per role (or LoRA adapter) each updated
on its own samples are `pettingllms-train`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pettingllms
from pettingllms.backends.base import SamplingConfig
from pettingllms.backends.chat import chat_prompt_ids
from pettingllms.backends.hf import HFPolicy
from pettingllms.core.errors import ConfigError
from pettingllms.core.seeding import check_reset_seed, derive_seed


class EpisodeRollout:
    """A TRL `rollout_func` playing whole episodes of `env_id` (see the module docstring)."""

    def __init__(
        self,
        env_id: str,
        agent: str,
        *,
        others: Mapping[str, Callable[[str], str]] | None = None,
        split: str = "train",
        max_new_tokens: int = 64,
        seed: int = 0,
        **env_kwargs: Any,
    ):
        self.env_fn = functools.partial(pettingllms.make, env_id, **env_kwargs)
        probe = self.env_fn()
        agents, self.stop = probe.possible_agents, tuple(probe.unwrapped.STOP_STRINGS)
        if agent not in agents:
            raise ConfigError(f"agent={agent!r} is not an agent of {env_id}; its agents: {agents}")
        unknown = sorted(set(others or {}) - set(agents) | ({agent} & set(others or {})))
        if unknown:
            raise ConfigError(
                f"others names {unknown}: give policies to {env_id}'s other agents only {agents}"
            )
        self.env_id, self.agent, self.others = env_id, agent, dict(others or {})
        self.split, self.max_new_tokens, self.seed = split, max_new_tokens, seed
        self._seeds: dict[str, int] = {}
        self._policy: HFPolicy | None = None

    def dataset(self, seeds: Iterable[int]):
        """A `datasets.Dataset` with one row per instance seed: `prompt` (a key this rollout knows) and `seed`."""
        from datasets import Dataset

        rows = [
            {"prompt": f"{self.env_id} {self.split} instance {seed}", "seed": int(seed)} for seed in seeds
        ]
        self._seeds.update((row["prompt"], row["seed"]) for row in rows)
        return Dataset.from_list(rows)

    def __call__(self, prompts: Sequence[str], trainer) -> dict[str, list]:
        """TRL's `rollout_func(prompts, trainer)`: one episode per prompt, in order."""
        unknown = [prompt for prompt in prompts if prompt not in self._seeds]
        if unknown:
            raise ConfigError(
                f"prompt {unknown[0]!r} is not a row of this rollout's dataset(); build it with dataset()"
            )
        policy = self._sampler(trainer)
        sampling = SamplingConfig(
            temperature=trainer.args.temperature,
            top_p=trainer.args.top_p,
            top_k=trainer.args.top_k or 0,
            max_new_tokens=self.max_new_tokens,
            stop=self.stop,
        )
        episodes = [_Episode(self.env_fn(), self._seeds[prompt], self.split) for prompt in prompts]
        while any(episode.live for episode in episodes):
            self._act(episodes, policy, sampling)
        for (
            episode
        ) in episodes:  # an episode that ended before the trained agent's first turn: nothing to train
            if episode.prompt_ids is None:
                episode.prompt_ids = chat_prompt_ids(
                    policy.tokenizer, str(episode.env.unwrapped.observe(self.agent))
                )
        return {
            "prompt_ids": [episode.prompt_ids for episode in episodes],
            "completion_ids": [episode.completion_ids for episode in episodes],
            "logprobs": [episode.logprobs for episode in episodes],
            "env_mask": [episode.env_mask for episode in episodes],
            "episode_return": [episode.returns.get(self.agent, 0.0) for episode in episodes],
            "success": [float(episode.success) for episode in episodes],
        }

    def _sampler(self, trainer) -> HFPolicy:
        """An `HFPolicy` over the trainer's current model, with its own seeded generator (made once)."""
        if self._policy is None:
            seed = derive_seed(self.seed, "trl_episode_rollout")
            self._policy = HFPolicy(
                trainer.model, trainer.processing_class, seed=seed, device=trainer.model.device
            )
        self._policy.model = trainer.model
        return self._policy

    def _act(self, episodes: list[_Episode], policy: HFPolicy, sampling: SamplingConfig) -> None:
        """One step of every live episode: the model answers for its agents in one batch, `others` for theirs."""
        tokenizer = policy.tokenizer
        by_model = [e for e in episodes if e.live and e.agent not in self.others]
        contexts = [e.context(tokenizer, trained=e.agent == self.agent) for e in by_model]
        generations = policy.generate_from_ids(contexts, 1, sampling) if by_model else []
        for episode, (generation,) in zip(by_model, generations, strict=True):
            if episode.agent == self.agent:
                episode.record(generation.completion_ids, generation.logprobs)
            episode.step(generation.action)
        for episode in episodes:
            if episode.live and episode.agent in self.others:
                episode.step(self.others[episode.agent](episode.observation))


class _Episode:
    """One episode being played, with the trained agent's token sequence so far."""

    def __init__(self, env, seed: int, split: str):
        self.env = env
        self.env.reset(seed=seed, options={"split": split})
        self.prompt_ids: list[int] | None = None
        self.completion_ids: list[int] = []
        self.logprobs: list[float] = []
        self.env_mask: list[int] = []
        self.returns: dict[str, float] = {}
        self.success = False
        self._advance()

    @property
    def live(self) -> bool:
        return bool(self.env.agents)

    @property
    def agent(self) -> str:
        return self.env.agent_selection

    @property
    def observation(self) -> str:
        return str(self.env.observe(self.agent))

    def context(self, tokenizer, *, trained: bool) -> list[int]:
        """What the model is fed for the current agent: its chat prompt, after the trained agent's sequence so
        far when it is the trained agent (the new prompt is then env tokens of that sequence)."""
        prompt = chat_prompt_ids(tokenizer, self.observation)
        if not trained:
            return prompt
        if self.prompt_ids is None:
            self.prompt_ids = prompt
        else:
            self.completion_ids += prompt
            self.logprobs += [0.0] * len(prompt)
            self.env_mask += [0] * len(prompt)
        return self.prompt_ids + self.completion_ids

    def record(self, completion_ids: Sequence[int], logprobs: Sequence[float]) -> None:
        self.completion_ids += list(completion_ids)
        self.logprobs += list(logprobs)
        self.env_mask += [1] * len(completion_ids)

    def step(self, action: str) -> None:
        self.env.step(action)
        self._advance()

    def _advance(self) -> None:
        """Collect rewards and step finished agents until a live agent is to act (or the episode is over)."""
        while self.env.agents:
            agent = self.env.agent_selection
            _, reward, termination, truncation, info = self.env.last()
            self.returns[agent] = self.returns.get(agent, 0.0) + float(reward)
            self.success = bool(info.get("success", self.success))
            if not (termination or truncation):
                return
            self.env.step(None)


class ToolEnvironment:
    """One agent of a pettingllms env behind TRL's `environment_factory` protocol (see the module docstring).

    Its public methods are what TRL shows the model as tools: only `submit`."""

    def __init__(self, env_id: str, agent: str, others: Mapping[str, Callable[[str], str]], env_kwargs: dict):
        self._env = pettingllms.make(env_id, **env_kwargs)
        agents = self._env.possible_agents
        missing = sorted(set(agents) - {agent} - set(others))
        if agent not in agents or missing or set(others) - set(agents):
            raise ConfigError(
                f"agent={agent!r} and others={sorted(others)}: {env_id}'s agents are {agents}; train one and give "
                f"every other one a policy (missing: {missing})"
            )
        self._agent, self._others = agent, dict(others)
        self._episode: _Episode | None = None

    def reset(self, seed: int, split: str = "train", **row: Any) -> str:
        """Start the episode of instance `seed` (other columns of the row are ignored); the agent's observation.
        A seed that is not a non-negative integer is a `ConfigError` naming it."""
        checked = check_reset_seed(seed)
        if checked is None:
            raise ConfigError(
                "reset(seed=None): each dataset row carries its instance's seed (dataset(seeds))"
            )
        self._episode = _Episode(self._env, checked, split)
        return self._play_others()

    def submit(self, answer: str) -> str:
        """Submit your answer for this turn.

        Args:
            answer: Your complete answer, in the format the observation asks for.

        Returns:
            Your next observation, or the episode's result once it is over.
        """
        if self._episode is None or not self._episode.live:
            return "The episode is over: nothing more to submit."
        if not isinstance(answer, str):  # JSON arguments of a tool call: stalling must not be free
            self._episode.step("")  # unusable text: the env's penalty and its explanation in the observation
            note = (
                f"Your answer must be text, not {type(answer).__name__}: it counts as an unusable answer.\n"
            )
            return note + self._play_others()
        self._episode.step(answer)
        return self._play_others()

    def get_reward(self) -> float:
        """The agent's return over the episode so far (its rewards summed)."""
        return self._episode.returns.get(self._agent, 0.0) if self._episode is not None else 0.0

    def _play_others(self) -> str:
        episode = self._episode
        while episode.live and episode.agent != self._agent:
            episode.step(self._others[episode.agent](episode.observation))
        if episode.live:
            return episode.observation
        outcome = "solved" if episode.success else "not solved"
        return f"The episode is over ({outcome}); your return: {self.get_reward():.3f}."


def tool_environment(
    env_id: str, agent: str, *, others: Mapping[str, Callable[[str], str]] | None = None, **env_kwargs: Any
) -> Callable[[], ToolEnvironment]:
    """TRL's `environment_factory` for `agent` of `env_id`: a callable building a fresh `ToolEnvironment`."""
    return functools.partial(ToolEnvironment, env_id, agent, dict(others or {}), env_kwargs)


def episode_return(completions: Sequence[Any], episode_return: Sequence[float], **kwargs: Any) -> list[float]:
    """TRL reward function: the trained agent's episode return, as `EpisodeRollout` measured it."""
    return [float(value) for value in episode_return]
