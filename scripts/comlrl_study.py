"""Learning side by side: our AT-GRPO and CoMLRL's MAGRPO, from the same warm start, at equal sampled completions
(issue 62).

    .venv/bin/python scripts/comlrl_study.py                 # both envs, 5 seeds, both trainers; resumes
    .venv/bin/python scripts/comlrl_study.py --envs math-v0 --seeds 0
    .venv/bin/python scripts/comlrl_study.py --report        # rebuild the table and the report from the rows

For each env of `ENVS`, in its miniature setting and from the miniature's team warm start
(`reproduce_miniature.DOMAINS`: the same weights as that study's team rows), and each seed:

- `ours`: `pettingllms-train`, per-role AT-GRPO with the miniature's flags (`mas+at-grpo-per-role`), until the
  domain's budget of sampled completions (the step that reaches it completes).
- `ours-joint`: the same with joint turns (`--turns joint`: every agent observes the env as its turn began, as
  CoMLRL's agents do), the control that separates the trainer from the turn structure.
- `comlrl`: CoMLRL 1.4.3's `MAGRPOTrainer` through `pettingllms.integrations.comlrl.MAGRPOBridge`, one full model
  per agent loaded from the same warm start, prompts written with the chat template (`chat_prompt_text`, as our
  backends write them), `COMLRL_TURNS` turns (its tree: 1 + K nodes of agents x K completions per instance), its
  defaults otherwise (`advantage_mode="mean"`, normalized advantages, an update every 2 nodes per agent), on
  training instances until at least the same budget was sampled. Its sampling draws from Python's and torch's
  global generators (CoMLRL has no seed setting): this script seeds both with the run's seed before the trainer is
  built. It has no checkpoint within one pass: a killed run starts again.

- `start`: the warm start itself, no RL (one row per env: a greedy model on a fixed suite needs no seeds), the
  point both trainers' gains are measured from.

Common: K = 4, temperature 1.0, learning rate 1e-4, the domain's completion length. Both trained teams and the
start are then played greedily by `pettingllms-eval` on the miniature's evaluation suite, twice (`--turns`): in the
env's AEC order, and with joint turns (every agent observing the env as the turn began, as CoMLRL trains;
`pettingllms-eval --turns joint`). Rows (study `comlrl` on the ledger, one per env, trainer, seed and way of playing
the turns; a row with joint turns names `"turns": "joint"`) hold each episode's success, so the report compares the
trainers seed by seed (`research.method_comparison`).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import reproduce_miniature as miniature

from pettingllms.core.registration import TURNS
from research import cycle, ledger
from research.arguments import add_output_arguments, positive_int, refuse_mixed_settings
from research.markdown import replace_section, seed_cell
from research.method_comparison import COMPARISON_WORDS, compare_methods, found
from research.method_comparison import cell as comparison_cell

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "comlrl"
OUT = ROOT / "docs" / "results" / "comlrl.json"
START, END = "<!-- comlrl:start -->", "<!-- comlrl:end -->"
ENVS = ("plan-path-v0", "math-v0")
TRAINERS = ("ours", "comlrl", "ours-joint")
NAMES = {"ours": "Ours", "comlrl": "CoMLRL's", "ours-joint": "Ours trained with joint turns"}
"""Each trainer's name in the report's comparisons."""
NO_RL = "start"
"""The `trainer` of the warm start's own row (module docstring)."""
K = 4
COMLRL_TURNS = 2
LEARNING_RATE = 1e-4
JOINT_WORDS = {
    "plan-path-v0": "Played with joint turns (`pettingllms-eval --turns joint`, the turn structure CoMLRL trains "
    "in: every agent observes the grid as its turn began). `plan-path-v0` shows the tool agent's proposal to the plan "
    "agent only within their turn (the next turn's report names the plan agent's own answer), so with joint turns no "
    "proposal ever reaches the plan agent: these rows are the plan agent's success alone, the task CoMLRL's plan "
    "agent trains on, and its tool agent's answers change no reward.",
    "math-v0": "Played with joint turns (`pettingllms-eval --turns joint`, the turn structure CoMLRL trains in): "
    "`math-v0`'s tool agent, second in a turn, reads the reasoner's answer of the same turn in the AEC order, and "
    "only the last turn's with joint turns; an episode ends when their answers agree, so here agreement must come "
    "from two answers written independently in one turn.",
}
"""The paragraph above each env's table of evaluations with joint turns."""
PREDICTIONS = {"plan-path-v0": ({"Ours minus CoMLRL's": "gains", "Ours minus the start": "gains",
                                 "CoMLRL's minus the start": "gains"}, 90)}  # fmt: skip
"""docs/results/preregistration_comlrl.md by env: each comparison's predicted direction ("gains": its interval
above 0; `found`'s words) and the floor, in %, of ours' mean success."""
PREDICTION_SEEDS = (0, 1, 2, 3, 4)
"""The seeds the prediction is judged on."""
DONE = "done.json"
"""A finished CoMLRL run's record in its folder: sampled completions, instances and training seconds."""
SPENT = ("sampled_completions", "train_wall_s", "updates_per_agent", "probe_completions")
"""What a trained row records of its run: sampled completions, training seconds, optimizer steps per agent and
greedy probe completions."""
SMOKE_SETTINGS = ("budget", "max_steps", "eval_episodes", "demos_per_role", "warm_start_steps")
"""The flags that change what a row measures: runs with other values go to folders and tables of their own."""
RULE = ledger.Rule("comlrl", ("env", "trainer", "seed", "turns"))
"""How the table (`OUT`) is built from the ledger beside it: one row per env, trainer, seed and turns, the last recorded
(`research.ledger`)."""


def comlrl_instances(budget: int, agents: int) -> int:
    """Training instances CoMLRL needs to sample at least `budget` completions: each instance's tree samples
    agents x K completions at its root and at each of its K children (`COMLRL_TURNS` = 2).

    >>> comlrl_instances(2500, 2)  # 40 completions an instance
    63
    """
    per_instance = agents * K * sum(K**turn for turn in range(COMLRL_TURNS))
    return math.ceil(budget / per_instance)


class Study:
    """Runs, evaluations and the rows of one invocation."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rows = ledger.table_rows(args.out, RULE)

    def warm_start(self, env_id: str) -> Path:
        """The miniature's team warm start of `env_id` (the same cache tag: the same folder); `--demos_per_role`
        and `--warm_start_steps` (smoke runs) build a variant under its own tag."""
        domain = miniature.DOMAINS[env_id]
        settings = {
            **miniature.warm_start_settings(domain, "mas"),
            "env_kwargs": dict(domain.env_kwargs),
            "tag": domain.tag,
        }
        variant = None
        if self.args.demos_per_role != miniature.DEMOS_PER_ROLE or self.args.warm_start_steps is not None:
            variant = (self.args.demos_per_role, self.args.warm_start_steps or settings["sft_steps"])
        return cycle.warm_start(env_id, settings, variant, keep=self.args.out.parent)

    def budget(self, env_id: str) -> int:
        return self.args.budget or miniature.DOMAINS[env_id].budget

    def train_ours(self, env_id: str, seed: int, model: Path, trainer: str) -> Path:
        """Per-role AT-GRPO as the miniature trains it (`cycle.train`: resumed, or skipped once finished); for
        `ours-joint`, with joint turns (`--turns joint`)."""
        domain = miniature.DOMAINS[env_id]
        _, flags = miniature.method_flags("mas+at-grpo-per-role")
        argv = [
            "--output_dir", str(self.args.runs / env_id / f"{trainer}_s{seed}"), "--env_id", env_id,
            "--turns", "joint" if trainer == "ours-joint" else "aec",
            "--env_kwargs", json.dumps(dict(domain.env_kwargs)),
            "--max_completion_length", str(domain.max_completion_tokens), "--model_name_or_path", str(model),
            "--seed", str(seed), "--max_steps", str(self.args.max_steps),
            "--max_completions", str(self.budget(env_id)), "--eval_every", "0", "--eval_episodes", "1",
            *miniature.COMMON, *flags,
        ]  # fmt: skip
        return cycle.train(argv, final_evaluation=False, wall_time=True)

    def train_comlrl(self, env_id: str, seed: int, model: Path) -> Path:
        """CoMLRL's `MAGRPOTrainer` on `env_id` from `model` (module docstring), its agents' models saved under
        the run folder as `agent_<i>`; skipped when the folder records a finished run (`DONE`)."""
        folder = self.args.runs / env_id / f"comlrl_s{seed}"
        if (folder / DONE).is_file():
            return folder
        import torch
        from comlrl.trainers.reinforce import MAGRPOTrainer
        from datasets import Dataset
        from transformers import AutoTokenizer

        from pettingllms.integrations.comlrl import MAGRPOBridge, chat_prompt_text

        domain = miniature.DOMAINS[env_id]
        tokenizer = AutoTokenizer.from_pretrained(model)
        bridge = MAGRPOBridge(
            env_id, env_kwargs=dict(domain.env_kwargs), prompt_text=chat_prompt_text(tokenizer)
        )
        sampled = [0]

        def reward(*completions, **kwargs):
            sampled[0] += len(completions)  # one completion per agent: one joint action
            return bridge.reward(*completions, **kwargs)

        instances = comlrl_instances(self.budget(env_id), len(bridge.agents))
        first = 1_000_000 * (seed + 1)  # each seed's own training instances
        random.seed(seed)
        torch.manual_seed(seed)
        trainer = MAGRPOTrainer(
            agent_model=str(model), num_agents=len(bridge.agents), tokenizer=tokenizer,
            train_dataset=Dataset.from_list(bridge.dataset(range(first, first + instances))),
            formatters=bridge.formatters, reward_func=reward, external_transition=bridge.transition,
            args=bridge.config(
                num_turns=COMLRL_TURNS, num_generations=K, max_new_tokens=domain.max_completion_tokens,
                temperature=1.0, top_p=1.0, top_k=None, agent_learning_rate=LEARNING_RATE, eval_interval=0,
                num_train_epochs=1, logging_steps=10**9,
            ),
        )  # fmt: skip
        updates = [0]
        for optimizer in trainer.optimizers:  # one count per AdamW step of any agent
            optimizer.register_step_post_hook(lambda *_: updates.__setitem__(0, updates[0] + 1))
        started = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - started
        trainer.save_model(str(folder))
        record = {"sampled_completions": sampled[0], "instances": instances, "train_wall_s": round(seconds, 1),
                  "agents": bridge.agents, "updates_per_agent": updates[0] / len(bridge.agents),
                  "probe_completions": 0}  # fmt: skip
        (folder / DONE).write_text(json.dumps(record) + "\n")
        return folder

    def evaluate(self, env_id: str, policy: str, name: str, turns: str) -> dict:
        """`pettingllms-eval` of `policy` on the miniature's evaluation suite of `env_id`, its agents' turns played
        as `turns` says (cached by name)."""
        domain = miniature.DOMAINS[env_id]
        output = self.args.runs / "eval" / f"{env_id}_{name}{'' if turns == 'aec' else '_' + turns}.json"
        argv = [
            "--env", env_id, "--policy", policy, "--workflow", "mas", "--episodes", str(self.args.eval_episodes),
            "--seed", "0", "--split", "eval", "--env_kwargs", json.dumps(dict(domain.env_kwargs)),
            "--max_new_tokens", str(domain.max_completion_tokens), "--output", str(output), "--no_progress",
            "--turns", turns,
        ]  # fmt: skip
        return cycle.evaluate(argv, output, env_id)

    def record(
        self, env_id: str, trainer: str, seed: int | None, turns: str, result: dict, model: Path, **spent
    ) -> None:
        """The row of `trainer`'s evaluation `result` on `env_id` with `turns` (what its run `spent`), on the
        ledger; a row of the AEC order names no `turns` (as the first rows were recorded)."""
        played = {} if turns == "aec" else {"turns": turns}
        row = {"env": env_id, "env_kwargs": dict(miniature.DOMAINS[env_id].env_kwargs), "trainer": trainer,
               "seed": seed, **played, **spent, "success_rate": result["success_rate"], "episodes": result["episodes"],
               "episode_success": "".join(str(int(s)) for s in result["per_episode"]["success"])}  # fmt: skip
        self.rows = cycle.record(self.args.out, RULE, row, warm_start=model)

    def run(self) -> None:
        trainers = [t for t in self.args.trainers if t != NO_RL]
        for env_id in self.args.envs:
            model = self.warm_start(env_id)
            for turns in self.args.turns if NO_RL in self.args.trainers else ():
                self.record(
                    env_id, NO_RL, None, turns, self.evaluate(env_id, str(model), NO_RL, turns), model
                )
            # seed by seed: an interrupted study has both trainers for its first seeds
            for seed in self.args.seeds:
                for trainer in trainers:
                    if trainer != "comlrl":
                        folder = self.train_ours(env_id, seed, model, trainer)
                        spent = _ours_spent(folder)
                        policy = str(folder)
                    else:
                        folder = self.train_comlrl(env_id, seed, model)
                        spent = json.loads((folder / DONE).read_text())
                        policy = ",".join(
                            f"{a}={folder / f'agent_{i}'}" for i, a in enumerate(spent["agents"])
                        )
                    for turns in self.args.turns:
                        result = self.evaluate(env_id, policy, f"{trainer}_s{seed}", turns)
                        self.record(
                            env_id, trainer, seed, turns, result, model, budget=self.budget(env_id),
                            **{key: spent[key] for key in SPENT},
                        )  # fmt: skip
                write_report(self.rows, self.args)


def _ours_spent(folder: Path) -> dict[str, Any]:
    """The sampled completions, training seconds, optimizer steps per policy and greedy probes of our run
    `folder`."""
    steps = cycle.training_steps(folder / "metrics.jsonl")
    last = max(steps)
    return {
        "sampled_completions": steps[last]["train/completions_total"],
        "train_wall_s": cycle.training_seconds(folder),
        "updates_per_agent": last,  # one optimizer step per policy and training step (per role)
        "probe_completions": sum(row.get("train/probe_completions", 0) for row in steps.values()),
    }


# ----------------------------------------------------------------- the report
def _by_seed(rows: list[dict], env_id: str, trainer: str) -> dict[int, list[int]]:
    return {
        r["seed"]: [int(c) for c in r["episode_success"]]
        for r in rows
        if (r["env"], r["trainer"]) == (env_id, trainer)
    }


def _commits(rows: list[dict], env_id: str, trainer: str) -> list[str | None]:
    return [r[ledger.PROVENANCE] for r in rows if (r["env"], r["trainer"]) == (env_id, trainer)]


def env_lines(rows: list[dict], env_id: str, *, judge: bool) -> list[str]:
    """`env_id`'s table from `rows` (one way of playing the turns): the start's success, each trainer's over seeds,
    its budget and training time, each seed's success; then ours minus CoMLRL's, paired by seed, and each trainer
    minus the start (its success standing for every seed of the trainer); with `judge`, the env's prediction."""
    lines = [
        "| trainer | success %, mean ± sd [95% t-interval, clipped to [0, 100]] (n) | sampled completions + greedy probes per run "
        "| optimizer steps per agent | training minutes per run | per seed |",
        "|---|---|---|---|---|---|",
    ]
    start = next((r for r in rows if (r["env"], r["trainer"]) == (env_id, NO_RL)), None)
    if start is not None:
        lines.append(
            f"| the warm start, no RL | {100 * start['success_rate']:.1f} (one greedy model) | 0 + 0 | 0 | 0 | — |"
        )
    for trainer in TRAINERS:
        runs = sorted(
            (r for r in rows if (r["env"], r["trainer"]) == (env_id, trainer)), key=lambda r: r["seed"]
        )
        if not runs:
            continue
        minutes = [r["train_wall_s"] / 60 for r in runs if r.get("train_wall_s") is not None]
        lines.append(
            f"| {trainer} | {seed_cell([r['success_rate'] for r in runs])} "
            f"| {np.mean([r['sampled_completions'] for r in runs]):.0f} + "
            f"{np.mean([r.get('probe_completions', 0) for r in runs]):.0f} "
            f"| {np.mean([r.get('updates_per_agent', np.nan) for r in runs]):.0f} "
            f"| {np.mean(minutes):.1f} | "
            + ", ".join(f"s{r['seed']} {100 * r['success_rate']:.1f}" for r in runs)
            + " |"
        )
    comparisons = _comparisons(rows, env_id, start)
    lines += ["", *(f"{label}: {comparison_cell(result)}." for label, result in comparisons.items())]
    if judge and env_id in PREDICTIONS:
        lines += ["", *prediction_lines(env_id, comparisons, _by_seed(rows, env_id, "ours"))]
    return lines


def _comparisons(rows: list[dict], env_id: str, start: dict | None) -> dict[str, dict | None]:
    """Each of our trainers with rows minus CoMLRL's, paired by seed, then (with the `start` row) each trainer minus
    the start, its success standing for every seed of the trainer: `compare_methods`' results by label."""
    trained = {t: (_by_seed(rows, env_id, t), _commits(rows, env_id, t)) for t in TRAINERS}
    trained = {t: sides for t, sides in trained.items() if sides[0]}  # the trainers with rows
    theirs = trained.get("comlrl", ({}, []))
    results = {
        f"{NAMES[t]} minus CoMLRL's": compare_methods(seeds, theirs[0], builds=(commits, theirs[1]))
        for t, (seeds, commits) in trained.items()
        if t != "comlrl"
    }
    if start is not None:
        outcomes = [int(c) for c in start["episode_success"]]
        for t, (seeds, commits) in trained.items():
            results[f"{NAMES[t]} minus the start"] = compare_methods(
                seeds, dict.fromkeys(seeds, outcomes), builds=(commits, [start[ledger.PROVENANCE]])
            )
    return results


def prediction_lines(
    env_id: str, comparisons: dict[str, dict | None], ours: dict[int, list[int]]
) -> list[str]:
    """`PREDICTIONS[env_id]` judged once every comparison holds `PREDICTION_SEEDS` (before that, said to wait):
    each comparison's predicted direction against what its interval shows (`found`), and ours' mean success
    against its predicted floor."""
    directions, floor = PREDICTIONS[env_id]
    intro = (f"The prediction (docs/results/preregistration_comlrl.md, committed before any `{env_id}` run "
             "finished), judged")  # fmt: skip
    if any(
        comparisons.get(label) is None or set(comparisons[label]["per_seed"]) != set(PREDICTION_SEEDS)
        for label in directions
    ):
        return [
            f"{intro} once both trainers and the start hold seeds {PREDICTION_SEEDS[0]}-{PREDICTION_SEEDS[-1]}."
        ]
    lines = [f"{intro}:", ""]
    for label, predicted in directions.items():
        shown = found(comparisons[label])
        mark = "as predicted" if shown == predicted else "not as predicted"
        lines.append(f"- {label}: predicted {predicted}, found {shown}: **{mark}**.")
    mean = 100 * np.mean([np.mean(outcomes) for outcomes in ours.values()])
    mark = "as predicted" if mean >= floor else "not as predicted"
    lines.append(f"- Ours' mean success: predicted {floor}% or more, found {mean:.1f}%: **{mark}**.")
    return lines


def write_report(rows: list[dict], args: argparse.Namespace) -> None:
    """The CoMLRL section of `--results_md`."""
    lines = [
        START,
        "## Side by side with CoMLRL: AT-GRPO and MAGRPO from the same warm start (issue 62)",
        "",
        "Each env in its miniature setting, from the miniature's team warm start (the same weights), K = 4, "
        f"temperature 1.0, learning rate {LEARNING_RATE:g}, the same budget of sampled completions (the domain's "
        "miniature budget; CoMLRL's run stops at the first tree that reaches it). Ours: per-role AT-GRPO as the "
        "miniature's main table trains it; `ours-joint`, where it ran: the same trained with joint turns "
        "(`--turns joint`: each agent observes the env as its turn began, as CoMLRL's agents do), the control "
        "that separates the trainer from the turn structure. CoMLRL 1.4.3: `MAGRPOTrainer` through "
        f"`MAGRPOBridge`, one full model per agent, {COMLRL_TURNS} turns, its own defaults (advantage mode `mean`, normalized, an update every "
        "2 nodes per agent); its agents answer each turn jointly (the plan or tool agent does not read the other's "
        "answer of the same turn while it trains). Both teams played greedily by `pettingllms-eval` on the "
        f"miniature's {args.eval_episodes} evaluation-split instances. " + COMPARISON_WORDS,
        "",
        "What else differs, each trainer as it ships (read from CoMLRL 1.4.3's `magrpo.py`): CoMLRL takes an "
        "AdamW step every 2 tree nodes per agent, split by turn (the table's optimizer steps: many more than ours "
        "at the same learning rate); its loss sums each completion's log-probabilities with normalized advantages "
        "and no clipping, and its generation has no stop string (an answer runs to `max_new_tokens` or the end "
        "token); the bridge pays it the team reward only (1 when a turn solves the instance), where ours mixes "
        "in each agent's local shaping and penalties; it trains on 2 joint turns, where ours and the evaluation "
        "play the env's turn limit in the AEC order. Ours samples greedy probes beside its budget (the table's "
        "probes, not trained on). Training minutes: ours from its trainer's start (model loading and a "
        "one-episode evaluation included; the last segment only, for a resumed run), CoMLRL's from `train()`. "
        "The warm start, evaluated alone, is the point both gains are measured from: one greedy model on one "
        "suite, its success standing for every seed of the trainer it is set against.",
        "",
    ]
    for env_id in ENVS:
        played = {
            turns: [r for r in rows if r["env"] == env_id and r.get("turns", "aec") == turns]
            for turns in TURNS
        }
        if played["aec"]:
            lines += [f"### `{env_id}` with `{json.dumps(dict(miniature.DOMAINS[env_id].env_kwargs))}`", "",
                      *env_lines(played["aec"], env_id, judge=True), ""]  # fmt: skip
        if played["joint"]:
            lines += [JOINT_WORDS[env_id], "", *env_lines(played["joint"], env_id, judge=False), ""]
    if not rows:
        lines += ["No run yet.", ""]
    lines += ["Regenerate: `.venv/bin/python scripts/comlrl_study.py` (resumable; `--report` rebuilds this section).",
              END]  # fmt: skip
    replace_section(args.results_md, START, END, "\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    parser.add_argument("--trainers", nargs="+", default=[NO_RL, *TRAINERS], choices=[NO_RL, *TRAINERS],
                        help=f"'{NO_RL}' evaluates the warm start itself (module docstring)")  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(5)))
    parser.add_argument("--budget", type=positive_int, default=None,
                        help="sampled completions per run (default: the domain's miniature budget)")  # fmt: skip
    parser.add_argument(
        "--max_steps", type=positive_int, default=200, help="cap on our optimizer steps per run"
    )
    parser.add_argument("--eval_episodes", type=positive_int, default=300, help="pettingllms-eval suite size")
    parser.add_argument("--demos_per_role", type=positive_int, default=miniature.DEMOS_PER_ROLE)
    parser.add_argument("--warm_start_steps", type=positive_int, default=None,
                        help="SFT steps (default: the study's)")  # fmt: skip
    parser.add_argument("--turns", nargs="+", default=list(TURNS), choices=list(TURNS),
                        help="how each team is evaluated: 'aec' (the env's order) and/or 'joint' (CoMLRL's)")  # fmt: skip
    add_output_arguments(parser, out=OUT, runs=RUNS)
    args = parser.parse_args()
    refuse_mixed_settings(parser, args, SMOKE_SETTINGS, out=OUT, runs=RUNS)
    study = Study(args)
    if args.report:
        study.rows = ledger.write_table(args.out, RULE)
    else:
        study.run()
    write_report(study.rows, args)
    print(f"wrote {args.out} and the CoMLRL section of {args.results_md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
