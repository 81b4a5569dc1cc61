"""`ATGRPOTrainer`: the AT-GRPO loop over policies, rollouts, updates, evaluations and checkpoints.

One step: the rollout engine plays `instances_per_step` training instances (their seeds follow from the step
number, so the data position needs no state, and start at `TRAIN_SEED_BASE`, clear of the warm start's
demonstration seeds); advantages are computed per group; every sample is routed to the
policy that produced it, and every policy takes one optimizer step on its own samples only. Evaluations play
`pettingllms-eval`'s suite of the env (`build_suite`: the same episodes, chunks, reseeding and completion budget)
with each policy's evaluation sampling (greedy by default), so that the trainer's `eval/success_rate` is the
figure `pettingllms-eval --policy RUN` reports for the same weights; the training generators are left as they
were.

Policy layouts: `shared` (one model serves every agent), `per_role` (one model per agent, each loaded from
`model_name_or_path` or its `agent_models` entry), `lora_per_role` (one base model, one LoRA adapter per agent;
each adapter is trained only by its agent's samples).

Outputs in `output_dir`: `metrics.jsonl` (one JSON object per step), `checkpoints/step_N/` (weights or adapters,
optimizer, scheduler, every random generator, the step), `learning_curve.png`, and with `dump_rollouts`
`rollouts/step_N.jsonl`. `resume=True` continues from the newest intact checkpoint exactly.

Under `torchrun` / `accelerate launch` (`pettingllms.parallel.world`) every rank runs this loop on its share of
each step's instances and evaluation chunks, its policies sharded over the ranks (`trainers.update.sharding`); the
metrics add every rank's samples up, and rank 0 alone writes the folder (log, checkpoints, dumps, curve).

The folder belongs to this run while the trainer lives (`run.lock`, released by `close()`, at the end of `train()`
or when the trainer is collected); a folder holding an earlier run needs `resume` or `overwrite_output_dir`, and a
resumed run must keep the saved settings that change results (`pettingllms.runs.folder`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
import weakref
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from tqdm.auto import tqdm

import pettingllms
from pettingllms.backends.base import SamplingConfig, SeededBackend
from pettingllms.backends.chat import supports_thinking_switch
from pettingllms.core.errors import ConfigError
from pettingllms.core.seeding import derive_seed
from pettingllms.eval.metrics import summary_figures, training_evaluation_metrics
from pettingllms.eval.runner import run_suite
from pettingllms.eval.suites import build_suite
from pettingllms.parallel.devices import visible_gpus
from pettingllms.parallel.world import current_world
from pettingllms.pools.env_pool import EnvPool
from pettingllms.pools.ray_cluster import NodeLostError
from pettingllms.rollout.engine import RolloutEngine
from pettingllms.rollout.grouping import GROUPINGS
from pettingllms.rollout.samples import Rollout, Sample, dump_rows
from pettingllms.runs import folder as run_folder
from pettingllms.runs.layout import CheckpointLayout, RunLayout, evaluation_settings
from pettingllms.trainers.advantages import compute_advantages, samples_with_signal, summed_turn_advantages
from pettingllms.trainers.outputs import checkpoint, metrics_log
from pettingllms.trainers.outputs.learning_curve import CurveLabels, save_learning_curve
from pettingllms.trainers.outputs.trackers import Trackers
from pettingllms.trainers.policies.build import build_policies
from pettingllms.trainers.policies.handles import PolicySet
from pettingllms.trainers.policies.memory_plan import Hardware, apply_plan, plan_run
from pettingllms.trainers.policies.update_phase import (
    RolloutAhead,
    TimedRollout,
    UpdatePhase,
    update_and_sync,
)
from pettingllms.trainers.schedule import after_step
from pettingllms.trainers.settings.config import ATGRPOConfig

TRAIN_SEED_BASE = 1_000_000
"""Training instances are reset with seeds from here on: disjoint from the warm start's demonstration seeds
(`0 .. demo_episodes - 1`, a few thousand), so RL never trains on the instances supervised fine-tuning saw."""
TRAIN_SEED_SPAN = 2**32
"""A run's instances are a contiguous block starting at a point of [TRAIN_SEED_BASE, TRAIN_SEED_BASE +
TRAIN_SEED_SPAN) derived from its seed: runs with different seeds train on different instances (two runs of a
hundred thousand instances each overlap with probability about 5e-5)."""


def training_seeds(args: ATGRPOConfig, step: int) -> list[int]:
    """The reset seeds of step `step`'s `instances_per_step` training instances (a function of the step alone,
    so a resumed run needs no data state)."""
    first = TRAIN_SEED_BASE + derive_seed(args.seed, "training_instances") % TRAIN_SEED_SPAN
    first += step * args.instances_per_step
    return list(range(first, first + args.instances_per_step))


class ATGRPOTrainer:
    """Runs AT-GRPO as `ATGRPOConfig` describes (see the module docstring)."""

    def __init__(self, args: ATGRPOConfig, *, log: Callable[[str], None] = print):
        args.check_before_work()  # a refused run leaves its output_dir as it found it
        self.args = args
        self.world = current_world()
        self.log = log if self.world.is_main else _silent
        self.output_dir = Path(args.output_dir)
        self.run = RunLayout(self.output_dir)
        if self.world.is_main:  # rank 0 owns the folder; the other ranks only read it
            self.output_dir.mkdir(parents=True, exist_ok=True)
            lock = run_folder.RunLock.acquire(self.output_dir, log)
            self._release_folder = weakref.finalize(self, lock.release)
        else:
            self._release_folder = weakref.finalize(self, _silent, "")
        try:
            self._start()
        except BaseException:
            self._release_folder()
            raise

    def _start(self) -> None:
        """Everything after taking the folder's lock: the folder's old run, the policies, the resumed state."""
        args, log, world = self.args, self.log, self.world
        if world.is_main:
            run_folder.prepare(
                self.output_dir, resume=args.resume, overwrite=args.overwrite_output_dir, log=log
            )
        world.barrier()
        self.env_fn = functools.partial(
            pettingllms.make,
            args.env_id,
            workflow=args.workflow,
            turns=args.turns,
            alpha=args.alpha,
            max_turns=args.max_turns,
            **args.env_kwargs,
        )
        self.agents = list(self.env_fn().possible_agents)
        if not args.use_cpu and visible_gpus() > 0:  # before any weight loads: refuse what cannot fit
            apply_plan(args, plan_run(args, self.agents, Hardware.visible()), log)
        self._prompt_warned = False
        last = self._checkpoint_to_resume() if args.resume else None
        world.barrier()  # every rank has read the folder before rank 0 writes the new config
        if world.is_main:
            self.run.config.write_text(json.dumps(config_summary(args), indent=2, default=str))
            if last is None:  # step 0 starts a fresh log (a resumed folder without checkpoints may hold one)
                self.run.metrics.unlink(missing_ok=True)
        self.policies: PolicySet = build_policies(args, self.agents, resume_from=last, log=log)
        self._check_thinking()
        self.pool = make_pool(args)
        self.engine = self._engine(train=True)
        self.ahead = RolloutAhead(self._collect) if args.off_policy_steps else None
        self.recovery: dict[str, int] = {}  # set by `recovery.train_with_recovery` for the next step's metrics
        self.trackers = Trackers(args, self.run, enabled=world.is_main)
        self.step = 0
        self.completions = 0
        """Completions sampled so far (every candidate or trajectory step, all policies, all ranks)."""
        if last is not None:
            loop = checkpoint.load(last, self.policies.handles, world)
            self.step, self.completions = loop.step, loop.completions
            self.engine.rng.bit_generator.state = loop.engine_rng
            if world.is_main:
                metrics_log.truncate_after(self.run.metrics, loop.step, log)
            log(f"resumed from {last.folder} at step {self.step}")

    def _checkpoint_to_resume(self) -> CheckpointLayout | None:
        """The newest intact checkpoint (None when the folder has no checkpoint: the run starts at step 0); raise
        `RunFolderError` when every checkpoint is corrupt or the saved settings differ in ones that change the
        run (unless `resume_with_changes`)."""
        skipped: list[str] = []

        def note(message: str) -> None:
            skipped.append(message)
            self.log(message)

        last = self.run.latest_intact(note)
        if last is None and skipped:
            raise run_folder.RunFolderError(
                f"--resume true: no intact checkpoint in {self.run.checkpoints} ({'; '.join(skipped)}); "
                "delete the corrupt folders, or start over with --overwrite_output_dir true"
            )
        if last is None:
            self.log(f"--resume true: {self.output_dir} has no checkpoint yet; the run starts at step 0")
            return None
        saved_path = self.run.config
        if not saved_path.is_file() and not self.args.resume_with_changes:
            raise run_folder.RunFolderError(
                f"--resume true: {saved_path} is missing, so this run's settings cannot be checked against those "
                "of the run that wrote the checkpoints; pass --resume_with_changes true to continue anyway"
            )
        try:
            saved = json.loads(saved_path.read_text()) if saved_path.is_file() else {}
        except json.JSONDecodeError as error:
            raise run_folder.RunFolderError(
                f"--resume true: {saved_path} is not valid JSON ({error}); restore it, or pass "
                "--resume_with_changes true after deleting it"
            ) from error
        changes = run_folder.changed_settings(saved, config_summary(self.args))
        if changes and not self.args.resume_with_changes:
            listed = ", ".join(f"{name}: {old!r} -> {new!r}" for name, (old, new) in changes.items())
            raise run_folder.RunFolderError(
                f"--resume true: this run's settings differ from the saved run's ({saved_path}) in ways that change "
                f"results: {listed}; resume with the saved settings, pass --resume_with_changes true to continue "
                "anyway, or start over with --overwrite_output_dir true"
            )
        if changes:
            self.log(
                f"resuming {self.output_dir} with changed settings (--resume_with_changes): {sorted(changes)}"
            )
        return last

    # ----------------------------------------------------------------- setup
    def _check_thinking(self) -> None:
        """A thinking setting for a policy whose chat template has no switch is a `ConfigError` before any step
        (policies served by Ray actors are checked by their servers)."""
        for name, backend in self.policies.backends.items():
            tokenizer = _tokenizer_of(backend)
            if tokenizer is None or supports_thinking_switch(tokenizer):
                continue
            for train in (True, False):
                value = self._sampling(name, train).enable_thinking
                if value is not None:
                    raise ConfigError(
                        f"enable_thinking={value} for policy {name!r}, but the chat template of "
                        f"{tokenizer.name_or_path!r} has no enable_thinking switch: leave enable_thinking (and its "
                        "policy_sampling / policy_eval_sampling key) unset for this model"
                    )

    def _sampling(self, policy: str, train: bool) -> SamplingConfig:
        args = self.args
        base = {
            "temperature": args.temperature if train else args.eval_temperature,
            "top_p": args.top_p if train else 1.0,
            "top_k": (args.top_k or 0) if train else 0,
            "max_new_tokens": args.max_completion_length,
            "stop": tuple(args.default_stop_strings),
            "enable_thinking": args.enable_thinking,
        }
        if not train:  # what pettingllms-eval --policy RUN reads from the saved config: the same function
            base.update(evaluation_settings(vars(args), policy))
        overrides = (
            args.policy_sampling.get(policy, {}) if train else args.policy_eval_sampling.get(policy, {})
        )
        return SamplingConfig(**{**base, **overrides})

    def _engine(self, *, train: bool) -> RolloutEngine:
        return RolloutEngine(
            self.env_fn,
            self.policies.backends,
            self.policies.agent_policy,
            {name: self._sampling(name, train) for name in self.policies.backends},
            num_generations=self.args.num_generations,
            grouping=self.args.grouping,
            commit=self.args.commit,
            team_credit=self.args.team_credit,
            seed=self.world.seed(self.args.seed, "rollout_engine"),
            pool=self.pool,
            schedule=self.args.rollout_schedule,
        )

    # ----------------------------------------------------------------- the loop
    def train(self) -> dict[str, Any]:
        """Run until `finished` (max_steps, or the sample budget); return the evaluations before and after."""
        args = self.args
        self.trackers.begin(self.step)
        summary: dict[str, Any] = {}
        if self.step == 0:
            summary.update(summary_figures("before", self._log_metrics({"step": 0, **self.evaluate()})))
        progress = tqdm(
            total=args.max_steps,
            initial=self.step,
            desc=f"AT-GRPO {args.env_id}",
            dynamic_ncols=True,
            disable=bool(args.disable_tqdm) or not self.world.is_main,
        )
        try:
            while not self.finished:
                metrics = {**self.train_step(), **self.recovery}
                self.recovery = {}  # said once: in the first step after the recovery
                then = after_step(args, self.step, self.completions)
                if then.evaluate:
                    metrics.update(self.evaluate())
                if then.stop:
                    summary.update(summary_figures("after", metrics))
                self._log_metrics(metrics)
                if then.save:
                    checkpoint.save(
                        self.run,
                        self.policies.handles,
                        self._loop_state(),
                        self.world,
                        keep=args.save_total_limit,
                    )
                progress.update(1)
                progress.set_postfix(  # committed: best-of-K training episodes; eval: greedy (learning_curve)
                    committed=f"{metrics['train/success_rate']:.2f}", eval=metrics.get("eval/success_rate", "")
                )
        except NodeLostError as lost:
            progress.close()
            self.close()
            raise NodeLostError(f"{lost}; {self._stopped_at()}") from None
        progress.close()
        self.trackers.end()
        if self.world.is_main:
            self._plot()
        self.close()
        return summary

    def _stopped_at(self) -> str:
        """Where a run that stopped in its next step can go on from: its newest intact checkpoint."""
        latest = self.run.latest_intact(log=lambda message: None)
        where = (
            f"its newest intact checkpoint is {latest.folder}"
            if latest is not None
            else "it has no checkpoint yet (a resume starts over)"
        )
        return f"the run stopped in step {self.step + 1}, {where}"

    def close(self) -> None:
        """Stop the env pool, release the policies' Ray actors (if any) and the run folder's lock; the trainer is
        done afterwards."""
        if self.ahead is not None:
            self.ahead.close()
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        self.policies.close()
        self._release_folder()

    @property
    def finished(self) -> bool:
        """True after `max_steps` steps, or once `max_completions` completions were sampled (if set)."""
        return after_step(self.args, self.step, self.completions).stop

    def _advantages(self, samples: list[Sample]) -> tuple[list[Sample], dict[str, float]]:
        """Set every sample's advantage as the settings ask; return the samples to train on (those of groups with
        signal, with `drop_zero_variance_groups`) and each group's reward standard deviation."""
        args = self.args
        if args.turn_baseline == "summed":
            stds = summed_turn_advantages(samples, scale_rewards=args.scale_rewards)
        else:
            stds = compute_advantages(
                samples,
                scale_rewards=args.scale_rewards,
                per_agent=args.per_agent_advantages,
                members=GROUPINGS[args.grouping].members,
                baseline=args.group_baseline,
            )
        if not args.drop_zero_variance_groups:
            return samples, stds
        return samples_with_signal(samples, stds, per_agent=args.per_agent_advantages), stds

    def train_step(self) -> dict[str, Any]:
        """One AT-GRPO step: rollout, advantages, routed updates. With `off_policy_steps=1` the rollout may be the
        one collected during the previous step's update, and the next step's may run during this one's
        (`update_phase`)."""
        timed = (self.ahead.take(self.step) if self.ahead else None) or self._collect(self.step, self.step)
        staleness = self.step - timed.version
        if staleness > self.args.off_policy_steps:
            raise RuntimeError(
                f"step {self.step} would train on samples {staleness} updates old (off_policy_steps="
                f"{self.args.off_policy_steps})"
            )
        rollout = timed.rollout
        self._check_prompt_lengths(rollout)
        train_samples, stds = self._advantages(rollout.samples)
        stats = StepStats.merge(self.world.gather(StepStats.of(rollout, stds)))
        self.completions += len(stats.samples)  # every rank's: the budget counts the whole step
        routed: dict[str, list[Sample]] = defaultdict(list)
        for sample in train_samples:
            routed[sample.policy].append(sample)
        names = list(self.policies.handles)

        def trained() -> dict[str, int]:  # over every rank: a policy no rank trained is not synced
            return dict(zip(names, self.world.sum([len(routed[name]) for name in names]), strict=True))

        # the next rollout may run during this update unless what follows this step needs the new weights synced
        overlap = (
            self.ahead is not None
            and not after_step(self.args, self.step + 1, self.completions).needs_synced_weights
        )
        if overlap:
            self.ahead.start(self.step + 1, version=self.step)
        phase = update_and_sync(
            self.policies.handles,
            routed,
            trained,
            self.world,
            before_sync=self.ahead.wait if overlap else None,
        )
        self.step += 1
        if self.args.dump_rollouts:
            self._dump(rollout)
        return self._step_metrics(timed, stats, phase, staleness)

    def _collect(self, step: int, version: int) -> TimedRollout:
        """The rollout of step `step` (0-based) from generators holding `version` synced updates, timed."""
        seeds = self.world.shard(training_seeds(self.args, step))
        start = time.perf_counter()
        with self.policies.full_weights():
            rollout = self.engine.collect(seeds, {"split": "train"})
        return TimedRollout(rollout, version, time.perf_counter() - start)

    def _step_metrics(
        self, timed: TimedRollout, stats: StepStats, phase: UpdatePhase, staleness: int
    ) -> dict[str, Any]:
        """A step's logged metrics (after `self.step` and `self.completions` have counted it): `stats` are every
        rank's."""
        rollout = timed.rollout
        metrics = {
            "step": self.step,
            "train/reward": float(np.mean([sample.reward for sample in stats.samples]))
            if stats.samples
            else 0.0,
            "train/success_rate": float(np.mean(stats.successes)) if stats.successes else 0.0,
            "train/groups": len(stats.group_stds),
            "train/completions_total": self.completions,
            "train/groups_with_signal": sum(std > 0 for std in stats.group_stds),
            "train/probe_completions": stats.probe_completions,
            "train/staleness": staleness,
            "timing/rollout_s": timed.seconds,
            "timing/env_s": rollout.env_seconds,
            "timing/update_s": phase.wall_seconds,  # syncs included
            "timing/sync_s": sum(phase.sync_seconds.values()),
            **self._idle_shares(rollout),
        }
        if self.pool is not None:
            metrics.update({"pool/restarts": self.pool.restarts, "pool/retried_jobs": self.pool.retried_jobs})
        for agent in self.agents:
            mine = [sample for sample in stats.samples if sample.agent == agent]
            for field in ("reward", "truncated", "parse_error"):  # train/parse_error/<agent>: nothing usable
                metrics[f"train/{field}/{agent}"] = (
                    float(np.mean([getattr(s, field) for s in mine])) if mine else 0.0
                )
        for name, values in phase.metrics.items():  # each policy's own seconds beside its update's figures
            own = {
                **values,
                "update_s": phase.update_seconds[name],
                "sync_s": phase.sync_seconds.get(name, 0.0),
            }
            metrics.update({f"policy/{name}/{key}": value for key, value in own.items()})
        return metrics

    def _idle_shares(self, rollout: Rollout) -> dict[str, float]:
        """`timing/idle/<server>`: the share of `rollout`'s wall time in which each of the engine's servers (a
        policy's generator; the env pool) had no call running."""
        stats, names = rollout.schedule, self.engine.server_names()
        return {
            f"timing/idle/{names[key]}": server.idle_share(stats.wall_s)
            for key, server in stats.servers.items()
        }

    def _check_prompt_lengths(self, rollout: Rollout) -> None:
        """Say once when a prompt is longer than the memory plan assumed (`plan_prompt_tokens`)."""
        longest = max((len(s.generation.prompt_ids) for s in rollout.samples), default=0)
        if longest > self.args.plan_prompt_tokens and not self._prompt_warned:
            self._prompt_warned = True
            self.log(
                f"step {self.step}: a prompt of {longest} tokens is longer than plan_prompt_tokens="
                f"{self.args.plan_prompt_tokens}, which the memory plan assumed: raise plan_prompt_tokens so that "
                "the plan holds"
            )

    def evaluate(self) -> dict[str, float]:
        """Success on `pettingllms-eval`'s suite of the env (see the module docstring), with evaluation sampling."""
        args = self.args
        start = time.perf_counter()
        make_kwargs = {"alpha": args.alpha, "max_turns": args.max_turns, **args.env_kwargs}
        suite = build_suite(
            args.env_id, args.eval_episodes, 0, make_kwargs, workflow=args.workflow, split=args.eval_split
        )
        backends = self.policies.backends
        self.log(
            f"step {self.step}: evaluating on {len(suite.episodes)} {args.eval_split} episodes of {args.env_id}"
        )
        saved = {name: b.get_rng_state() for name, b in backends.items() if isinstance(b, SeededBackend)}
        progress = tqdm(
            total=len(suite.episodes),
            desc=f"evaluation, step {self.step}",
            unit="episode",
            leave=False,
            mininterval=0,  # one refresh per chunk of episodes: each shows, however fast the chunks are
            dynamic_ncols=True,
            disable=bool(args.disable_tqdm) or not self.world.is_main,
        )
        try:
            with self.policies.full_weights():
                records = run_suite(
                    suite,
                    backends,
                    self.policies.agent_policy,
                    {name: self._sampling(name, train=False) for name in backends},
                    None,
                    workflow=args.workflow,
                    turns=args.turns,
                    pool=self.pool,
                    on_progress=progress.update,
                    world=self.world,
                )
        finally:
            progress.close()
            for name, state in saved.items():
                backends[name].set_rng_state(state)
        metrics = {
            **training_evaluation_metrics(records, self.agents),
            "timing/eval_s": time.perf_counter() - start,
        }
        self.log(
            f"step {self.step}: success {metrics['eval/success_rate']:.3f} ({metrics['timing/eval_s']:.0f} s)"
        )
        return metrics

    # ----------------------------------------------------------------- outputs
    def _loop_state(self) -> checkpoint.LoopState:
        engine_rng = self.world.gather(self.engine.rng.bit_generator.state)
        return checkpoint.LoopState(
            self.step, self.completions, engine_rng[0] if self.world.size == 1 else engine_rng
        )

    def _log_metrics(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Append `metrics` to metrics.jsonl; send them to the trackers every `logging_steps` steps and
        whenever they hold an evaluation (rank 0 only)."""
        if not self.world.is_main:
            return metrics
        metrics_log.append(self.run.metrics, metrics)
        if metrics["step"] % self.args.logging_steps == 0 or "eval/success_rate" in metrics:
            self.trackers.log(metrics["step"], metrics)
        return metrics

    def _dump(self, rollout: Rollout) -> None:
        """Write every rank's samples of this step (rank 0 writes, in rank order)."""
        parts = self.world.gather(dump_rows(rollout, self.step))
        if not self.world.is_main:
            return
        path = self.run.rollout_dump(self.step)
        path.parent.mkdir(exist_ok=True)
        with path.open("w") as handle:
            for rows in parts:
                for row in rows:
                    handle.write(json.dumps(row) + "\n")

    def _plot(self) -> None:
        rows = metrics_log.read(self.run.metrics, self.log)
        title = f"{self.args.env_id} ({self.args.policy_layout}, {self.args.grouping})"
        labels = CurveLabels.for_run(
            self.args.num_generations, self.args.temperature, self.args.eval_episodes, self.args.eval_split
        )
        save_learning_curve(rows, title, self.run.learning_curve, labels)


class SampleStat(NamedTuple):
    """One sample as a step's metrics count it: its agent, reward, whether its completion was cut at the token
    budget, and whether nothing in it was usable (`Sample.parse_error`)."""

    agent: str
    reward: float
    truncated: bool
    parse_error: bool


@dataclasses.dataclass
class StepStats:
    """What a step's metrics need of one rank's rollout: each sample's `SampleStat`, the episodes' successes,
    the groups' reward spreads and the probe completions; `merge` adds the ranks' up."""

    samples: list[SampleStat]
    successes: list[bool]
    group_stds: list[float]
    probe_completions: int

    @classmethod
    def of(cls, rollout: Rollout, stds: dict[Any, float]) -> StepStats:
        return cls(
            [
                SampleStat(s.agent, float(s.reward), bool(s.generation.truncated), bool(s.parse_error))
                for s in rollout.samples
            ],
            [bool(episode.success) for episode in rollout.episodes],
            [float(std) for std in stds.values()],
            rollout.probe_completions,
        )

    @classmethod
    def merge(cls, parts: list[StepStats]) -> StepStats:
        return cls(
            [row for part in parts for row in part.samples],
            [success for part in parts for success in part.successes],
            [std for part in parts for std in part.group_stds],
            sum(part.probe_completions for part in parts),
        )


def _silent(message: str) -> None:
    """The log of a rank other than 0 (rank 0 speaks for the run)."""


def config_summary(args: ATGRPOConfig) -> dict[str, Any]:
    """The run's settings that matter for reproduction (JSON-ready), with the number of ranks (`world_size`)."""
    fields = [f.name for f in dataclasses.fields(args)]
    summary = {
        name: getattr(args, name)
        for name in fields
        if isinstance(getattr(args, name), (str, int, float, bool, list, dict, type(None)))
    }
    return {**summary, "world_size": current_world().size}


def _tokenizer_of(backend: Any):
    """The tokenizer an in-process backend renders prompts with (HF, a LoRA adapter's or a vLLM engine's), or None."""
    for inner in (backend, getattr(backend, "backend", None), getattr(backend, "engine", None)):
        if inner is not None and getattr(inner, "tokenizer", None) is not None:
            return inner.tokenizer
    return None


def make_pool(args: ATGRPOConfig):
    """The env pool `args` ask for: Ray actors (`distributed="ray"`, `env_workers` of them, default 2), local
    processes (`env_workers` > 0), or None (envs step in-process)."""
    if args.distributed == "ray":
        from pettingllms.pools.ray_env_pool import RayEnvPool, ray_env_workers

        return RayEnvPool(ray_env_workers(args.env_workers), address=args.ray_address)
    return EnvPool(args.env_workers) if args.env_workers else None
