"""The paper's central comparison in miniature: MAS + AT-GRPO against single-agent and trajectory-GRPO baselines.

    .venv/bin/python scripts/reproduce_miniature.py              # everything; resumes finished and killed runs
    .venv/bin/python scripts/reproduce_miniature.py --parts main --seeds 0 --budget 300 --eval_episodes 20  # short
    .venv/bin/python scripts/reproduce_miniature.py --parts main --seeds 0 --methods mas mas+at-grpo-per-role \
        --budget 16 --max_steps 1 --eval_episodes 4 --demos_per_role 40 --warm_start_steps 2 \
        --runs /tmp/mini --out /tmp/mini/rows.json --results_md /tmp/mini/results.md   # smoke (tests/test_study_smoke.py)
    .venv/bin/python scripts/reproduce_miniature.py --report     # rebuild the tables and plots from the JSON
    .venv/bin/python scripts/reproduce_miniature.py --parts main --methods mas+trajectory-grpo  # rerun some rows
    .venv/bin/python scripts/reproduce_miniature.py --env sokoban-v0          # another domain (DOMAINS)
    .venv/bin/python scripts/reproduce_miniature.py --env sudoku-v0 --env_kwargs '{"size": 9}' --parts warmstart
        # a candidate setting, compared with the domain's own on the validation split

The miniature is built so that the paper's mechanism can exist: the team's tool agent can *compute*. Its warm
start mixes programs (a compact solver that reads the board on standard input,
`pettingllms.warmstart.tool_programs`: a BFS for plan-path and Sokoban, backtracking for Sudoku, and imperfect
variants of each) with direct answers, and the team's plan agent learns to keep a proposal that solves the puzzle
and to answer from the board otherwise. The single agent cannot run code. Each workflow has its
own warm start with the same number of demonstrations per role (`TEAM_WARM_START`, `SINGLE_WARM_START`), and the
same SFT steps per role.

Every run is a `pettingllms-train` run under `runs/miniature/`; every reported number is `pettingllms-eval`
(greedy, the same fixed evaluation-split suite for every row). Recipes were chosen, and the learning curves are
drawn, on the validation split (`--eval_split val`), never on the reported suite. Parts:

1. `warmstart`: before any RL, on `--val_episodes` validation instances: the single agent, the team, the team
   with an oracle tool (the plan agent's ceiling: it must reach at least 90%), and what the tool agent writes
   (share of programs, of the correct program; greedy and sampled at the training temperature).
2. `main` (the domain's setting, `DOMAINS`: plan-path 7x7 by default): six rows x `--seeds` - `single` and `mas`
   (the warm starts, no RL), `single+grpo` (the plan agent alone, trajectory-grouped GRPO),
   `mas+trajectory-grpo` (the team, trajectory-grouped GRPO, one policy per role), `mas+at-grpo-shared` and
   `mas+at-grpo-per-role` (AT-GRPO with one shared policy or one per role). Every RL run samples `--budget`
   completions (the domain's `Domain.budget` by default: 5,000 for plan-path, where the team is at 98% by
   1,000, and 2,500 for the others, to fit the CPU budget; `max_completions`: a run stops after the step that
   reaches it), K=4 candidates or episodes per step, 8 instances per step for the team and 16 for the single
   agent.
3. `mechanism`: what the per-role AT-GRPO runs' helpers write after RL (as in `warmstart`): the main table's runs, and
   the `loss=dr_grpo` ablation's runs this runs folder holds.

The code domain (`--env code-v0`, generated problems) has a tester where the others have a tool agent: its
`warmstart` ceiling is the team with an oracle tester (every hidden test as a case), and what it measures of the
helper is how often the tester catches a wrong program (a fixed set: each validation problem with its first near
miss shown as the coder's code; `Study.tester_catch_shares`), before and after RL; its report adds the share of
episodes solved in the first turn and after the tester's feedback, per method.
4. `ablations` (`mas+at-grpo-per-role` with one knob changed, `--ablation_seeds`; `--ablations` picks some): the
   commit — greedy (the main per-role run, reused where the ledger holds it from this warm start and package
   code, `Study.holds_main_run`), random, random for the tool and greedy for the plan —, outcome-only rewards
   (`reward="outcome"`), and the loss averaged over a constant length (`loss_type="dr_grpo"`) instead of each
   completion's own (`scripts/length_bias_probe.py` measures why that can matter), also for `mas+trajectory-grpo`
   (`loss=dr_grpo (trajectory)`), `mas+at-grpo-shared` and `single+grpo` (`ABLATION_BASES`): with the main table's
   per-role run, every trained method under both losses. Each is compared with the run it changes.

Rows (`{"part", "env", "env_kwargs", "method", "seed", "success_rate", ...}`) are appended to the ledger
`docs/results/ledger.jsonl` after every run, so an interrupted study keeps what it finished, and the table
`docs/results/miniature.json` is rebuilt from the ledger by `RULE`; each domain's tables, learning curves
(`docs/results/miniature[_<env>]_curves.png`) and commands go to its own section of `docs/results.md`
(`Domain.section`). Runs of plan-path's setting are under `runs/miniature/`, the others under
`runs/miniature/<env id>[_<setting>]/`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pettingllms.warmstart.demos import PLAN_NOISE
from research import cycle, ledger
from research.markdown import replace_section, seed_cell
from research.method_comparison import COMPARISON_WORDS, compare_methods
from research.method_comparison import cell as comparison_cell

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "miniature"
OUT = ROOT / "docs" / "results" / "miniature.json"
RULE = ledger.Rule(
    "miniature",
    ("part", "env", "env_kwargs", "method", "seed"),
    keep=lambda row: "env_kwargs" in row,
    refusal="recorded before commit e7c23c9, when rows did not name their env setting (env_kwargs): its part, "
    "method and seed were rerun or retired since, and it cannot be matched to a setting",
)
"""How the table (`OUT`) is built from the ledger beside it: one row per part, env, setting, method and seed, the
last recorded, among the rows that name their setting (`research.ledger`)."""
COMMON = [
    "--scale_rewards", "none", "--learning_rate", "1e-4", "--num_generations", "4", "--temperature", "1.0",
    "--per_device_train_batch_size", "32", "--save_steps", "5", "--resume", "true", "--eval_split", "val",
]  # fmt: skip
DEMOS_PER_ROLE = 3200
TEAM_WARM_START = {"workflow": "mas", "demos_per_role": DEMOS_PER_ROLE, "tool_programs": 0.4, "program_bugs": 0.4,
                   "eval_episodes": 0}  # fmt: skip
SINGLE_WARM_START = {"workflow": "single", "demos_per_role": DEMOS_PER_ROLE, "eval_episodes": 0}
"""The two warm starts' settings; `warm_start_settings` adds a domain's SFT steps (per role: twice the steps for
two roles, so as many passes over each role's demonstrations either way) and its `plan_noise`."""


@dataclasses.dataclass(frozen=True)
class Domain:
    """One environment of the miniature: its setting, the length budget of a completion, and the report's words."""

    env_kwargs: Mapping[str, Any]
    tag: str  # the warm starts' cache tag
    max_completion_tokens: int  # the solver program's tool call fits, with room; answers stop at </answer>
    budget: int  # sampled completions per training run (`--budget` replaces it)
    instances: str  # what the report calls the instances ("grids")
    section: str  # the marker name of its section in docs/results.md
    paper: Mapping[str, str]  # the paper's figure (Qwen3-1.7B) per main row, where it reports one
    why: str  # why this setting
    sft_steps_per_role: int = 200  # each warm start's SFT steps per role (the team's: twice as many)
    plan_noise: float = (
        PLAN_NOISE  # the demonstrations' share of perturbed non-tool answers (warmstart.demos)
    )
    helper: str = "tool"  # the team's helper role: its oracle makes the ceiling check; its output is measured
    program_bugs: float = (
        0.4  # the team's warm start: the share of imperfect programs among those demonstrated
    )


DOMAINS = {
    "plan-path-v0": Domain(
        {"size": 7}, "mini7", 112, 5000, "grids", "miniature",
        {"single": "5", "single+grpo": "11", "mas": "10", "mas+at-grpo-shared": "96", "mas+at-grpo-per-role": "97"},
        "7x7 grids (shortest paths of 7 moves or more): on 5x5 the single agent's greedy guesses already solved 56% "
        "of the validation grids before RL (the paper's single agent: 5%), leaving little to learn but to copy.",
    ),
    "sokoban-v0": Domain(
        {"width": 6, "height": 6, "num_boxes": 1, "min_solution_length": 6}, "minisoko6", 320, 2500, "levels",
        "miniature-sokoban", {},
        "6x6 levels with one box (solutions of 6 moves or more, 10 on average). On the env's default levels (7x7, "
        "2 boxes, 19 moves on average) the plan agent carried out an oracle tool's solving proposal in only 8% "
        "of the validation levels before RL (the tiny model does not copy 19-move sequences after 400 SFT "
        "steps). On these, before RL, the single agent solves 4.5% of the validation levels and the team 44.0%; "
        "with an oracle tool the team solves 62.0% (the warm start of the rows below; 50.0% and 72.0% for the "
        "build of 2026-12-03), below the miniature's 90% bar: in the other levels the plan "
        "agent's first answer departs from the proposal and pushes the box into a dead end (every later "
        "proposal is then empty: the level cannot be solved), so RL must teach the plan agent to copy as well "
        "as the tool agent to write its program (18% of its samples at temperature 1, never greedily).",
    ),
    "sudoku-v0": Domain(
        {}, "minisudoku", 400, 2500, "puzzles", "miniature-sudoku", {},
        "The env's default 4x4 puzzles (6 empty cells): on the validation split before RL the single agent solves "
        "1% of them and the team none, while the team's plan agent carries out an oracle tool's answer in all of "
        "them; the tool agent writes the correct backtracking program in 16% of its samples at temperature 1 "
        "(never greedily), so the team can learn only by finding the program.",
    ),
    "math-v0": Domain(
        {"difficulty": 2}, "minimath", 96, 2500, "problems", "miniature-math", {},
        "Generated problems of difficulty 2 (arithmetic, modular powers, counting, divisors, roots, equations): "
        "the reasoner must compute in its head what the tool agent's few-line program computes exactly. On the "
        "validation split before RL the single agent solves 6.0% and the team 4.5%; the tool agent writes the "
        "exact program for the problem in 15.6% of its samples at temperature 1 (4% greedily). The reasoner "
        "answers first in each turn and sees the tool's answer only from the second, so its warm start perturbs "
        "90% of the demonstrations' executed first answers (not 20%: most of them reach a second turn) and runs "
        "1,200 SFT steps per role. Even so the team with an oracle tool solves only 32.5% (the tiny reasoner "
        "blends the tool's number with its own earlier answer: 1231 against its 130 becomes 1230), below the "
        "miniature's 90% bar for the ceiling: the main table is run anyway, and RL must teach the reasoner to "
        "copy as well as the tool agent to write its program. Warm starts tried (SFT steps per role, share of "
        "perturbed first answers: single / team / team with an oracle tool, % of the validation split; the "
        "tool's correct program in % of samples): 200, 20%: 5.0 / 4.5 / 7.0, 0%; 800, 60%: 4.5 / 5.5 / 28.5, "
        "7.9%; 1,200, 90%: 6.0 / 4.5 / 32.5, 15.6%.",
        sft_steps_per_role=1200, plan_noise=0.9,
    ),
    "code-v0": Domain(
        {"dataset": "generated", "difficulty": 2}, "minicode", 192, 2500, "problems", "miniature-code", {},
        "Generated function problems of difficulty 2 (`dataset=\"generated\"`: two steps of the grammar of "
        "small programs, hidden tests that reject every near miss). The coder writes the function; the tester "
        "writes assert cases, run on the coder's code; a case the code fails is shown to both, and the coder may "
        "revise in the next turn. The warm start's coder demonstrations are the reference programs, its first "
        "program a near miss (a realistic bug) in 40% of them and the fix after the tester's mismatches; the "
        "tester's are cases from the hidden tests.",
        sft_steps_per_role=300, helper="tester",
    ),
}  # fmt: skip
"""Env id -> its `Domain`; `--env` picks one and `--env_kwargs` may replace its setting (compared on the validation
split by the `warmstart` part, whose rows record the setting)."""
MAIN_ROWS = (
    "single",
    "single+grpo",
    "mas",
    "mas+trajectory-grpo",
    "mas+at-grpo-shared",
    "mas+at-grpo-per-role",
)
PROGRAM_WORDS = {
    "math-v0": "a program written for the problem at hand (`pettingllms.warmstart.math_programs`: its numbers "
    "in a few lines of `sympy` or `math`)",
    None: "a compact solver program (`pettingllms.warmstart.tool_programs`; it reads the board on standard input)",
}
"""What the report calls the tool agent's demonstrated programs, per env (None: the puzzles')."""
TEAM_INSTANCES = 8  # instances per step for the two-agent team; the single agent gets twice as many


def warm_start_settings(domain: Domain, workflow: str) -> dict[str, Any]:
    """`ensure_tiny_model` settings of `domain`'s warm start for `workflow` ("mas" or "single"): the same
    demonstrations and SFT steps per role (the team has two roles), the domain's `plan_noise` and, for the team,
    its `program_bugs`."""
    if workflow == "mas":
        base, roles = {**TEAM_WARM_START, "program_bugs": domain.program_bugs}, 2
    else:
        base, roles = SINGLE_WARM_START, 1
    return {**base, "sft_steps": roles * domain.sft_steps_per_role, "plan_noise": domain.plan_noise}


def method_flags(method: str) -> tuple[str, list[str]]:
    """(workflow, trainer flags) of a trained row."""
    team = ["--workflow", "mas", "--instances_per_step", str(TEAM_INSTANCES)]
    return {
        "single+grpo": ("single", ["--workflow", "single", "--instances_per_step", str(2 * TEAM_INSTANCES),
                                   "--grouping", "trajectory", "--policy_layout", "shared"]),
        "mas+trajectory-grpo": ("mas", [*team, "--grouping", "trajectory", "--policy_layout", "per_role"]),
        "mas+at-grpo-shared": ("mas", [*team, "--grouping", "agent_turn", "--policy_layout", "shared"]),
        "mas+at-grpo-per-role": ("mas", [*team, "--grouping", "agent_turn", "--policy_layout", "per_role"]),
    }[method]  # fmt: skip


def warmstart_checks(domain: Domain) -> tuple[str, str, str]:
    """The `warmstart` part's teams (besides what the helper writes): the single agent, the team, and the team
    with an oracle helper (the other role's ceiling)."""
    return ("single", "mas", f"mas, oracle {domain.helper}")


UNTRAINED = ("single", "mas")
"""The main table's rows without RL: each workflow's warm start as it is."""
BASELINES = ("single", "single+grpo", "mas")
"""The paper's baselines (its main table): the best of them is what AT-GRPO is compared against, paired per
episode. The team trained with trajectory-grouped GRPO (an ablation in the paper) is compared separately: it
isolates the grouping, not the team."""
ABLATIONS = {  # name -> (flags added to its base method's (`ablation_base`), env kwargs)
    "commit=greedy": ([], {}),
    "commit=random": (["--commit", "random"], {}),
    "commit=tool-random,plan-greedy": (["--commit", "tool=random"], {}),
    "reward=outcome": ([], {"reward": "outcome"}),
    "loss=dr_grpo": (["--loss_type", "dr_grpo"], {}),
    "loss=dr_grpo (trajectory)": (["--loss_type", "dr_grpo"], {}),
    "loss=dr_grpo (shared)": (["--loss_type", "dr_grpo"], {}),
    "loss=dr_grpo (single+grpo)": (["--loss_type", "dr_grpo"], {}),
}
ABLATION_BASES = {
    "loss=dr_grpo (trajectory)": "mas+trajectory-grpo",
    "loss=dr_grpo (shared)": "mas+at-grpo-shared",
    "loss=dr_grpo (single+grpo)": "single+grpo",
}
"""The main row an ablation changes one knob of, where it is not `mas+at-grpo-per-role`."""


def run_name(part: str, method: str, seed: int) -> str:
    """The folder name of a trained row's run and evaluation: `part_method_sSEED`, "=" written "-" and any other
    character outside letters, digits and "_.+-" written "_" (so a name holds no space, comma or bracket).

    >>> run_name("ablations", "commit=tool-random,plan-greedy", 0)
    'ablations_commit-tool-random_plan-greedy_s0'
    >>> run_name("ablations", "loss=dr_grpo (trajectory)", 1)
    'ablations_loss-dr_grpo_trajectory_s1'
    """
    slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", f"{part}_{method}".replace("=", "-")).strip("_")
    return f"{slug}_s{seed}"


def ablation_base(name: str) -> str:
    """The main table's method that ablation `name` changes one knob of."""
    return ABLATION_BASES.get(name, "mas+at-grpo-per-role")


class Study:
    """Runs, evaluations and the rows file of one invocation."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rows = ledger.table_rows(args.out, RULE)
        self.env_id, self.domain = args.env, DOMAINS[args.env]
        self.env_kwargs = setting(args)
        self.runs = runs_folder(args)

    # ----------------------------------------------------------------- building blocks
    def warm_start(self, workflow: str) -> Path:
        """The warm start of `workflow` ("mas" or "single"), built on first use (cached); `--demos_per_role` and
        `--warm_start_steps` (smoke runs) build a variant under its own tag, beside the study's
        (`cycle.warm_start`)."""
        settings = {
            **warm_start_settings(self.domain, workflow),
            "env_kwargs": self.env_kwargs,
            "tag": self.domain.tag + setting_suffix(self.args),
        }
        variant = None
        if self.args.demos_per_role != DEMOS_PER_ROLE or self.args.warm_start_steps is not None:
            variant = (self.args.demos_per_role, self.args.warm_start_steps or settings["sft_steps"])
        return cycle.warm_start(self.env_id, settings, variant, keep=self.args.out.parent)

    def train(self, name: str, workflow: str, seed: int, flags: list[str], env_kwargs: dict) -> Path:
        """One training run (`cycle.train`: resumed if it has a checkpoint, skipped once it ended with its
        final evaluation at `--max_steps` or the budget), its training seconds in `cycle.WALL_TIME`; returns
        its folder."""
        argv = [
            "--output_dir", str(self.runs / name), "--env_id", self.env_id,
            "--env_kwargs", json.dumps({**self.env_kwargs, **env_kwargs}),
            "--max_completion_length", str(self.domain.max_completion_tokens),
            "--model_name_or_path", str(self.warm_start(workflow)), "--seed", str(seed),
            "--max_steps", str(self.args.max_steps), "--max_completions", str(self.args.budget),
            "--eval_every", str(self.args.curve_every),
            "--eval_episodes", str(self.args.curve_episodes), *COMMON, *flags,
        ]  # fmt: skip
        return cycle.train(argv, wall_time=True)

    def evaluate(
        self, policy: str, workflow: str, name: str, *, split: str = "eval", label: str | None = None
    ) -> dict:
        """`pettingllms-eval` of `policy` (a spec: run or model folder, or agent=spec pairs) on the fixed suite of
        `split`, under `label` (the leaderboard's row name) when given (`cycle.evaluate`, cached by name);
        returns its env result."""
        output = self.eval_output(name)
        episodes = self.args.eval_episodes if split == "eval" else self.args.val_episodes
        argv = [
            "--env", self.env_id, "--policy", policy, "--workflow", workflow, "--episodes", str(episodes),
            "--seed", "0", "--split", split, "--env_kwargs", json.dumps(self.env_kwargs),
            "--max_new_tokens", str(self.domain.max_completion_tokens),
            "--output", str(output), "--no_progress", *(["--label", label] if label else []),
        ]  # fmt: skip
        return cycle.evaluate(argv, output, self.env_id)

    def eval_output(self, name: str) -> Path:
        return self.runs / "eval" / f"{name}.json"

    def publish(self, name: str, method: str, row: dict) -> None:
        """Copy evaluation `name` (a main row's, seed 0) to the leaderboard's results under a label naming the
        ledger line that holds `row` (`leaderboard_label`; the line it was first recorded on when a resumed study
        records it again), one file per domain, setting, method and line: a rerun is a new row of the board, never
        an old row's name on other figures. `main` rebuilds the board."""
        entry = holding_entry(self.args.out, row)
        report = json.loads(self.eval_output(name).read_text())
        report["label"] = leaderboard_label(method, entry)
        folder = self.args.leaderboard / "results"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"miniature_{self.env_id}{setting_suffix(self.args)}_{method}_line{entry.n}.json"
        target.write_text(json.dumps(report, indent=2) + "\n")

    def record(self, row: dict, warm_start: Path | None) -> dict:
        """Append `row` (this invocation's env and setting; measured on a run that started from `warm_start`) to the
        ledger; the table is rebuilt by `RULE` (`cycle.record`). Returns the row as recorded."""
        row = {**row, "env": self.env_id, "env_kwargs": dict(self.env_kwargs)}
        self.rows = cycle.record(self.args.out, RULE, row, warm_start=warm_start)
        return row

    def untrained_row(self, method: str, seed: int) -> None:
        workflow = method  # "single" or "mas": the warm start played by that team
        name, label = f"{method}_warmstart", f"tiny miniature: {method} (warm start, no RL)"
        result = self.evaluate(str(self.warm_start(workflow)), workflow, name, label=label)
        row = self.record(_row("main", method, seed, result, None), self.warm_start(workflow))
        if seed == 0:
            self.publish(name, method, row)

    def trained_row(self, part: str, method: str, seed: int, flags: list[str], workflow: str,
                    env_kwargs: dict | None = None) -> None:  # fmt: skip
        name = run_name(part, method, seed)
        folder = self.train(name, workflow, seed, flags, env_kwargs or {})
        label = f"tiny miniature: {method} (seed {seed})" if part == "main" else None
        result = self.evaluate(str(folder), workflow, name, label=label)
        row = self.record(_row(part, method, seed, result, folder), self.warm_start(workflow))
        if part == "main" and seed == 0:
            self.publish(name, method, row)

    def tool_completion_shares(self, model: Path) -> dict:
        """What `model` writes as the tool agent on the first turn of `--val_episodes` validation instances: the
        share of programs and of the exact correct solver program
        (`pettingllms.warmstart.demos.correct_program`), greedy and sampled (temperature 1, 4 samples per instance)."""
        from pettingllms.backends.base import SamplingConfig
        from pettingllms.backends.hf import HFPolicy

        policy = HFPolicy.from_pretrained(model, seed=0, max_batch_rows=64)
        prompts, correct, stop = self.first_tool_prompts(policy)
        shares = {}
        for label, temperature, n in (("greedy", 0.0, 1), ("sampled", 1.0, 4)):
            sampling = SamplingConfig(
                temperature=temperature, max_new_tokens=self.domain.max_completion_tokens, stop=stop
            )
            groups = policy.generate(prompts, n, sampling)
            texts = [(g.text, right) for group, right in zip(groups, correct) for g in group]
            shares[f"{label}_program_share"] = float(
                np.mean([t.lstrip().startswith("```") for t, _ in texts])
            )
            shares[f"{label}_correct_program_share"] = float(np.mean([t.strip() == r for t, r in texts]))
        return shares

    def first_tool_prompts(self, policy: Any) -> tuple[list[str], list[str], tuple[str, ...]]:
        """(the tool agent's first prompt, its correct tool call) per validation instance, and the env's stop
        strings. Agents that act before the tool agent in a turn (`math-v0`'s reasoner) answer greedily with
        `policy`; instances are replayed from their seeds, so one env serves them all."""
        import pettingllms
        from pettingllms.backends.base import SamplingConfig
        from pettingllms.warmstart.demos import correct_program
        from pettingllms.warmstart.tool_programs import as_tool_call

        env = pettingllms.make(self.env_id, workflow="mas", **self.env_kwargs)
        stop = tuple(env.unwrapped.STOP_STRINGS)
        greedy = SamplingConfig(temperature=0.0, max_new_tokens=self.domain.max_completion_tokens, stop=stop)
        answers: list[list[str]] = [[] for _ in range(self.args.val_episodes)]
        for _ in env.possible_agents:  # each pass lets one more agent of the first turn answer
            prompts, correct, pending = [], [], []
            for seed, before in enumerate(answers):
                env.reset(seed=seed, options={"split": "val"})
                for text in before:
                    env.step(text)
                if env.agent_selection == "tool":
                    prompts.append(str(env.observe("tool")))
                    correct.append(as_tool_call(correct_program(env.unwrapped)).strip())
                else:
                    pending.append((seed, str(env.observe(env.agent_selection))))
            if not pending:
                env.close()
                return prompts, correct, stop
            groups = policy.generate([prompt for _, prompt in pending], 1, greedy)
            for (seed, _), [generation] in zip(pending, groups):
                answers[seed].append(generation.text)
        raise RuntimeError(
            f"{self.env_id}: the tool agent does not act in the first turn; no prompts to measure"
        )

    # ----------------------------------------------------------------- parts
    def warm_start_checks(self) -> None:
        """Part `warmstart` (module docstring), on the validation split."""
        import pettingllms

        team, single = self.warm_start("mas"), self.warm_start("single")
        helper = self.domain.helper
        env = pettingllms.make(self.env_id, workflow="mas", **self.env_kwargs)
        others = ",".join(f"{agent}={team}" for agent in env.possible_agents if agent != helper)
        env.close()
        policies = {"single": (str(single), "single"), "mas": (str(team), "mas"),
                    f"mas, oracle {helper}": (f"{helper}=oracle,{others}", "mas")}  # fmt: skip
        for method, (policy, workflow) in policies.items():
            name = "val_" + method.replace(", ", "_").replace(" ", "_")
            result = self.evaluate(policy, workflow, name, split="val")
            self.record(_row("warmstart", method, 0, result, None), single if workflow == "single" else team)
        self.record({"part": "warmstart", "method": f"{helper} completions", "seed": 0,
                     **self.helper_shares(team)}, team)  # fmt: skip

    def helper_shares(self, model: Path) -> dict:
        """What the helper role writes (`tool_completion_shares` or `tester_catch_shares`)."""
        if self.domain.helper == "tester":
            return self.tester_catch_shares(model)
        return self.tool_completion_shares(model)

    def tester_catch_shares(self, model: Path) -> dict:
        """How often `model` as the tester catches a wrong program: on the first `--val_episodes` validation
        problems, the coder's first program replaced by the problem's first near miss (a fixed set), the share of
        the tester's answers with a right case the near miss fails (`info["cases_caught"] > 0`), greedy and
        sampled (temperature 1, 4 samples per problem); and the share of its cases that are right."""
        import pettingllms
        from pettingllms.backends.base import SamplingConfig
        from pettingllms.backends.hf import HFPolicy

        policy = HFPolicy.from_pretrained(model, seed=0, max_batch_rows=64)
        env = pettingllms.make(self.env_id, workflow="mas", **self.env_kwargs)
        prompts, states = [], []
        for seed in range(self.args.val_episodes):
            env.reset(seed=seed, options={"split": "val"})
            env.step(f"```python\n{env.unwrapped.generated.near_misses[0].code}\n```")
            prompts.append(str(env.observe("tester")))
            states.append(env.unwrapped.clone())
        env.close()
        shares = {}
        for label, temperature, n in (("greedy", 0.0, 1), ("sampled", 1.0, 4)):
            sampling = SamplingConfig(
                temperature=temperature, max_new_tokens=self.domain.max_completion_tokens
            )
            caught, right = [], []
            for state, group in zip(states, policy.generate(prompts, n, sampling)):
                for generation in group:
                    trial = state.clone()
                    trial.step(generation.text)
                    info = trial.infos["tester"]
                    caught.append(info.get("cases_caught", 0) > 0)
                    right.append(info.get("cases_right", 0) / max(1, info.get("cases", 0)))
            shares[f"{label}_catch_share"] = float(np.mean(caught))
            shares[f"{label}_right_case_share"] = float(np.mean(right))
        return shares

    def helper_after_rl(self) -> None:
        """Part `mechanism`: what the per-role AT-GRPO runs' helpers write after RL (as in `warmstart`): the main
        table's runs of `--seeds`, then the `dr_grpo` ablation's runs of `--ablation_seeds` that this runs folder
        holds (`MECHANISM_RUNS`)."""
        from pettingllms.runs.layout import RunLayout

        helper = self.domain.helper
        for (part, method), suffix in MECHANISM_RUNS.items():
            for seed in self.args.seeds if part == "main" else self.args.ablation_seeds:
                folder = self.runs / run_name(part, method, seed)
                checkpoint = RunLayout(folder).latest_intact(log=lambda _: None) if folder.is_dir() else None
                if checkpoint is not None:
                    shares = self.helper_shares(checkpoint.model(helper))
                    self.record({"part": "mechanism", "method": f"{helper} completions after AT-GRPO ({suffix})",
                                 "seed": seed, **shares}, self.warm_start("mas"))  # fmt: skip

    def main_table(self) -> None:
        for seed in self.args.seeds:  # seed by seed: an interrupted study has every row for its first seeds
            for method in self.args.methods:
                if method in UNTRAINED:
                    self.untrained_row(method, seed)
                else:
                    workflow, flags = method_flags(method)
                    self.trained_row("main", method, seed, flags, workflow)

    def holds_main_run(self, method: str, seed: int) -> bool:
        """Whether the main table's row of trained `method` and `seed` in this domain and setting was measured from
        this study's warm start (its digest) with this checkout's package code (`same_package_code`): training it
        again would repeat it (same seed, code and weights), so the ablations' `commit=greedy` reuses it. The recipe
        (`COMMON`, `method_flags`) is this script's and is not compared: a change to it must come with a rerun of
        the main table."""
        entries = ledger.select(ledger.read_ledger(self.args.out.with_name(ledger.LEDGER_NAME)), RULE).entries
        warm_start = ledger.folder_digest(self.warm_start(method_flags(method)[0]))
        return any(
            (entry.row["part"], entry.row["method"], entry.row["seed"]) == ("main", method, seed)
            and domain_rows([entry.row], self.args)
            and entry.warm_start == warm_start
            and same_package_code(entry.code_commit, ROOT)
            for entry in entries
        )

    def ablations(self) -> None:
        for seed in self.args.ablation_seeds:
            for name in self.args.ablations:
                flags, env_kwargs = ABLATIONS[name]
                workflow, base = method_flags(ablation_base(name))
                if name == "commit=greedy":  # the default setting: the main table's per-role run
                    if not self.holds_main_run("mas+at-grpo-per-role", seed):
                        self.trained_row("main", "mas+at-grpo-per-role", seed, base, "mas")
                    reference = next(
                        r for r in domain_rows(self.rows, self.args)
                        if r["part"] == "main" and r["method"] == "mas+at-grpo-per-role" and r["seed"] == seed
                    )  # fmt: skip
                    self.record({**reference, "part": "ablations", "method": name}, self.warm_start("mas"))
                else:
                    self.trained_row("ablations", name, seed, [*base, *flags], workflow, env_kwargs)


PACKAGE = "pettingllms"
"""The code a run's result depends on: the trainer, rollout, envs and evaluation."""


def same_package_code(commit: str | None, repo: Path) -> bool:
    """Whether a ledger entry's `code_commit` ran the package code (`PACKAGE`) that the checkout at `repo` has now:
    neither is dirty and `git diff` between the commit and HEAD leaves `PACKAGE` unchanged (False for None, an
    unknown commit, or no git)."""
    import subprocess

    now = ledger.code_version(repo)
    if commit is None or now is None or "+dirty" in commit + now:
        return False
    diff = subprocess.run(["git", "-C", str(repo), "diff", "--quiet", commit, "HEAD", "--", PACKAGE],
                          capture_output=True, check=False)  # fmt: skip
    return diff.returncode == 0


def _row(part: str, method: str, seed: int, result: dict, folder: Path | None) -> dict:
    row = {
        "part": part, "method": method, "seed": seed, "success_rate": result["success_rate"],
        "episodes": result["episodes"], "interval_95": result.get("ci95"),
        "parse_error_rate": result.get("parse_error_rate"), "eval_wall_s": result.get("wall_time_s"),
    }  # fmt: skip
    if "per_episode" in result:  # one 0/1 per suite episode, in suite order: for paired comparisons
        row["episode_success"] = "".join(str(int(s)) for s in result["per_episode"]["success"])
        if "turns" in result["per_episode"]:  # each episode's turns (reports since 2026-12-06)
            row["episode_turns"] = result["per_episode"]["turns"]
    if folder is not None:
        metrics = cycle.read_metrics(folder / "metrics.jsonl")
        row["steps"] = metrics[-1]["step"]
        row["sampled_completions"] = metrics[-1]["train/completions_total"]
        probes = [m for m in metrics if "eval/success_rate" in m]  # the run's greedy validation evaluations
        row["curve"] = [  # [step, completions sampled so far, validation success]
            [m["step"], m.get("train/completions_total", 0), m["eval/success_rate"]] for m in probes
        ]
        if probes and all("eval/generations" in m for m in probes):  # counted by runs since 2026-12-06
            row["probe_generations"] = sum(m["eval/generations"] for m in probes)
        row["train_wall_s"] = cycle.training_seconds(folder)
        row["run"] = str(folder.relative_to(ROOT)) if folder.is_relative_to(ROOT) else str(folder)
    return row


def setting(args: argparse.Namespace) -> dict[str, Any]:
    """The env kwargs of this invocation: `--env_kwargs` when given, else the domain's."""
    return dict(DOMAINS[args.env].env_kwargs if args.env_kwargs is None else json.loads(args.env_kwargs))


def setting_suffix(args: argparse.Namespace) -> str:
    """ "" for the domain's own setting, else `_k1v1_k2v2` (run folders and warm-start tags of a candidate:
    letters, digits and underscores, as tags must be; values keep their letters and digits only)."""
    kwargs = setting(args)
    if kwargs == dict(DOMAINS[args.env].env_kwargs):
        return ""
    return "".join(
        f"_{key}{re.sub(r'[^A-Za-z0-9]', '', str(value))}" for key, value in sorted(kwargs.items())
    )


def runs_folder(args: argparse.Namespace) -> Path:
    """Where this invocation's runs go: `--runs` for plan-path's own setting (the study's first domain), else
    `--runs/<env id><setting suffix>`."""
    if args.env == "plan-path-v0" and not setting_suffix(args):
        return args.runs
    return args.runs / f"{args.env}{setting_suffix(args)}"


# --------------------------------------------------------------------- report
def matching(rows: list[dict], **match) -> list[dict]:
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def cell(rows: list[dict], **match) -> str:
    """Mean success over seeds ± the sample standard deviation (ddof=1), the seeds' 95% t-interval, and n."""
    return seed_cell([r["success_rate"] for r in matching(rows, **match)])


def per_episode(rows: list[dict], **match) -> np.ndarray | None:
    """Each suite episode's success averaged over the matching rows' seeds (None without per-episode results)."""
    found = [r["episode_success"] for r in matching(rows, **match) if "episode_success" in r]
    if not found or len({len(f) for f in found}) != 1:
        return None
    return np.array([[int(c) for c in f] for f in found], dtype=np.float64).mean(axis=0)


def best_baseline(rows: list[dict]) -> str | None:
    """The baseline row with the highest mean success."""
    means = {m: np.mean([r["success_rate"] for r in matching(rows, method=m)]) for m in BASELINES
             if matching(rows, method=m)}  # fmt: skip
    return max(means, key=means.get) if means else None


def holding_entry(table: Path, row: dict) -> ledger.Entry:
    """The ledger line (beside `table`) that the table holds for `row`'s identity (`RULE.identity`): the line
    `Study.record` appended, or the earlier line a resumed study found holding the same row (not the ledger's last
    line, which a resumed study's cached rows did not write)."""
    entries = ledger.select(ledger.read_ledger(table.with_name(ledger.LEDGER_NAME)), RULE).entries
    return next(entry for entry in entries if RULE.identity(entry.row) == RULE.identity(row))


def leaderboard_label(method: str, entry: ledger.Entry) -> str:
    """A miniature row's name on the leaderboard: the method, its seed (or "warm start, no RL") and the ledger line
    it is, with the date it was recorded."""
    what = "warm start, no RL" if method in UNTRAINED else f"seed {entry.row['seed']}"
    return f"tiny miniature: {method} ({what}; ledger line {entry.n}, {entry.recorded})"


def by_seed(rows: list[dict], **match) -> dict[int, list[int]]:
    """seed -> the per-episode successes of the matching row of that seed (rows with per-episode results)."""
    return {
        r["seed"]: [int(c) for c in r["episode_success"]]
        for r in matching(rows, **match)
        if "episode_success" in r
    }


def compared(rows: list[dict], ours: Mapping[str, Any], reference: Mapping[str, Any]) -> dict | None:
    """The rows matching `ours` against those matching `reference`, over seeds (`method_comparison`: the
    interval and test over seeds, marked when the rows' code commits differ)."""
    return compare_methods(
        by_seed(rows, **ours),
        by_seed(rows, **reference),
        builds=tuple(
            [r.get(ledger.PROVENANCE) for r in matching(rows, **side) if "episode_success" in r]
            for side in (ours, reference)
        ),
    )


def paired_lines(rows: list[dict], pairs: Iterable[tuple[str, str | None]]) -> list[str]:
    """Markdown rows: each `(method, reference method)` of `pairs` (a None reference is skipped) compared over seeds
    (`compared`), and each seed's difference."""
    lines = []
    for method, against in pairs:
        comparison = None if against is None else compared(rows, {"method": method}, {"method": against})
        if comparison is not None:
            lines.append(f"| {method} | {against} | {comparison_cell(comparison)} |")
    return lines


def ablation_reference(rows: list[dict], ablations: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """(rows to compare, each ablation's reference method among them): an ablation of per-role AT-GRPO against the
    `commit=greedy` rows (the main per-role run, recorded with the ablations); any other ablation, and every one
    where those were not recorded, against the main table's rows of the method it changes (`ablation_base`), named
    "<method> (main table)", of the seeds its ablations ran."""
    compared, references = list(ablations), {}
    greedy = any(r["method"] == "commit=greedy" for r in ablations)
    for name in dict.fromkeys(r["method"] for r in ablations if r["method"] != "commit=greedy"):
        base = ablation_base(name)
        if greedy and base == "mas+at-grpo-per-role":
            references[name] = "commit=greedy"
            continue
        references[name] = reference = f"{base} (main table)"
        seeds = {r["seed"] for r in ablations if r["method"] == name}
        known = {r["seed"] for r in compared if r["method"] == reference}
        compared += [{**r, "method": reference} for r in rows if r["part"] == "main" and r["method"] == base
                     and r["seed"] in seeds - known]  # fmt: skip
    return compared, references


def span(values: list[float]) -> str:
    """ "a-b" for the range of `values` (rounded to integers), or "a" when they round alike."""
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    return low if low == high else f"{low}-{high}"


def budget(rows: list[dict], **match) -> str:
    """The generations of a run, mean over the matching rows: `sampled` (training) ` + probes` (its greedy
    validation evaluations: their generations where counted, else how many evaluations of how many episodes)."""
    found = [r for r in matching(rows, **match) if "sampled_completions" in r]
    if not found:  # an untrained row, or a trained method not run yet
        return "0 (no RL)" if match.get("method") in UNTRAINED else "—"
    sampled = f"{np.mean([r['sampled_completions'] for r in found]):.0f}"
    if all("probe_generations" in r for r in found):
        return f"{sampled} + {np.mean([r['probe_generations'] for r in found]):.0f}"
    evaluations = np.mean([len(r.get("curve", [])) for r in found])
    return f"{sampled} + {evaluations:.0f} probes" if evaluations else sampled


def budget_words(args: argparse.Namespace, domain: Domain) -> str:
    """What the tables' generation counts hold, for the report."""
    return (
        "Generations per run: the completions sampled for training (the RL budget, equal across methods) plus "
        "the greedy probes, the run's validation evaluations for the learning curves, counted where the run "
        f"recorded them, else given as evaluations of {args.curve_episodes} validation {domain.instances} (runs "
        "before 2026-12-06: one greedy completion per agent and turn, so 1 to max-turns completions per episode and "
        "agent). Every trained row is then evaluated once on the "
        f"{args.eval_episodes} evaluation-split {domain.instances} (greedy, the same for every row)."
    )


def steps(rows: list[dict], **match) -> str:
    values = [r["steps"] for r in matching(rows, **match) if "steps" in r]
    if not values:  # an untrained row, or a trained method not run yet
        return "0" if match.get("method") in UNTRAINED else "—"
    return f"{np.mean(values):.1f}"


def plot_curves(rows: list[dict], path: Path, args: argparse.Namespace, domain: Domain) -> None:
    """Learning curves (validation success against sampled completions) of the main table's runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    trained = [r for r in rows if r["part"] == "main" and "curve" in r]
    for method in [m for m in MAIN_ROWS if any(r["method"] == m for r in trained)]:
        curves = [
            {step: (done, ok) for step, done, ok in r["curve"]} for r in trained if r["method"] == method
        ]
        shared = sorted(set.intersection(*(set(c) for c in curves)))  # steps every seed evaluated
        done = np.array([[c[s][0] for s in shared] for c in curves]).mean(0)
        values = np.array([[c[s][1] for s in shared] for c in curves]) * 100
        axis.plot(done, values.mean(0), marker="o", label=f"{method} (n={len(curves)})")
        axis.fill_between(done, values.min(0), values.max(0), alpha=0.15)
    axis.set_xlabel("sampled completions")
    axis.set_ylabel(f"greedy success (%), {args.curve_episodes} validation {domain.instances}")
    axis.set_title(f"{args.env} {json.dumps(setting(args))}, budget {args.budget} (mean, min-max over seeds)")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def domain_rows(rows: list[dict], args: argparse.Namespace) -> list[dict]:
    """The rows of `--env` in this invocation's setting (rows written before settings were recorded: the
    domain's own setting)."""
    own = dict(DOMAINS[args.env].env_kwargs)
    return [r for r in rows if r["env"] == args.env and r.get("env_kwargs", own) == setting(args)]


def setting_lines(rows: list[dict], args: argparse.Namespace) -> list[str]:
    """The `warmstart` rows of every setting of `--env` that was tried (the choice on the validation split)."""
    own = dict(DOMAINS[args.env].env_kwargs)
    tried = {}
    for row in rows:
        if row["env"] == args.env and row["part"] == "warmstart" and "success_rate" in row:
            tried.setdefault(json.dumps(row.get("env_kwargs", own), sort_keys=True), {})[row["method"]] = row
    if len(tried) < 2:
        return []
    lines = ["", "Settings tried (validation split, greedy success %; the chosen one is the domain's):", "",
             "| setting | " + " | ".join(warmstart_checks(DOMAINS[args.env])) + " |", "|---|---|---|---|"]  # fmt: skip
    for kwargs, found in tried.items():
        cells = [
            f"{100 * found[m]['success_rate']:.1f}" if m in found else "—"
            for m in warmstart_checks(DOMAINS[args.env])
        ]
        lines.append(f"| `{kwargs}` | " + " | ".join(cells) + " |")
    return lines


def helper_words(env_id: str, domain: Domain) -> str:
    """What the team's helper brings and how its warm start demonstrates it, for the report."""
    if domain.helper == "tester":
        return (
            "The single agent is the coder alone (no tester, no cases: its code meets the hidden tests only); the "
            f"team's coder demonstrations show a near miss first in {domain.program_bugs:.0%} of them."
        )
    return (
        f"The team's tool agent can run code: its warm start mixes {PROGRAM_WORDS.get(env_id, PROGRAM_WORDS[None])} "
        f"with imperfect variants and direct answers (programs {TEAM_WARM_START['tool_programs']:.0%} of its "
        f"demonstrations, {domain.program_bugs:.0%} of them imperfect); the single agent cannot run code."
    )


def catch_words(shares: Mapping[str, float], who: str, problems: int) -> str:
    """A sentence on a tester's catches (`Study.tester_catch_shares`)."""
    return (
        f"{who} catches the near miss shown as the coder's program in {100 * shares['greedy_catch_share']:.0f}% "
        f"of {problems} validation problems greedily and in {100 * shares['sampled_catch_share']:.0f}% of samples "
        f"at temperature 1; {100 * shares['greedy_right_case_share']:.0f}% of its greedy cases are right."
    )


def second_turn_lines(main: list[dict]) -> list[str]:
    """Per main method with episode turns: the share of the suite's episodes solved in a later turn than the first
    (after the tester's mismatches), mean over seeds."""
    lines = [
        "| method | solved in turn 1 % | solved after the tester's feedback (turn 2 or later) % |",
        "|---|---|---|",
    ]
    for method in MAIN_ROWS:
        found = [r for r in matching(main, method=method) if "episode_turns" in r]
        if not found:
            continue
        first, later = (
            np.mean([np.mean([int(s) and t == 1 for s, t in zip(r["episode_success"], r["episode_turns"])])
                     for r in found]),
            np.mean([np.mean([int(s) and t > 1 for s, t in zip(r["episode_success"], r["episode_turns"])])
                     for r in found]),
        )  # fmt: skip
        lines.append(f"| {method} | {100 * first:.1f} | {100 * later:.1f} |")
    return lines if len(lines) > 2 else []


LOSS_ROWS = {
    "grpo": {"per-role": "mas+at-grpo-per-role", "shared": "mas+at-grpo-shared", "single+grpo": "single+grpo"},
    "dr_grpo": {"per-role": "loss=dr_grpo", "shared": "loss=dr_grpo (shared)",
                "single+grpo": "loss=dr_grpo (single+grpo)"},
}  # fmt: skip
"""Per loss, the methods of the code domain's claims: `grpo` in the main table, `dr_grpo` among the ablations."""
MECHANISM_RUNS = {
    ("main", "mas+at-grpo-per-role"): "per role",
    ("ablations", "loss=dr_grpo"): "per role, dr_grpo",
}
"""The runs whose helpers the `mechanism` part measures (part, method) and the words its rows' methods end with."""
TESTER_AFTER = {
    "grpo": "tester completions after AT-GRPO (per role)",
    "dr_grpo": "tester completions after AT-GRPO (per role, dr_grpo)",
}
"""Per loss, the `mechanism` rows of the trained testers' catches (`MECHANISM_RUNS`)."""


def _after_feedback(rows: list[dict], method: str) -> dict[int, list[int]]:
    """seed -> per episode, 1 when `method`'s run solved it after the tester's feedback (turn 2 or later)."""
    return {
        r["seed"]: [int(s == "1" and t > 1) for s, t in zip(r["episode_success"], r["episode_turns"])]
        for r in matching(rows, method=method)
        if "episode_turns" in r
    }


def code_claims(rows: list[dict]) -> dict[tuple[str, str], tuple[str, dict | None]]:
    """The code miniature's four pre-registered claims (docs/results/preregistration_code.md) under each loss of
    `LOSS_ROWS`: (claim, loss) -> (what is compared, its seed-level comparison, marked across builds where its
    rows' code commits differ; None where a side has no row). 1: per-role AT-GRPO minus the best baseline (by
    mean success: the untrained coder, the coder after GRPO under the same loss, the untrained team); 2: per role
    minus shared; 3: the trained tester's greedy catch share minus the warm start's (one figure, against every
    seed); 4: the share of the suite solved after the tester's feedback, per role minus the untrained team."""
    trained = [r for r in rows if r["part"] in ("main", "ablations")]

    def builds(*methods: str | None, pool: list[dict] = trained) -> tuple[list, list]:
        """The code commits of the rows of each of two methods in `pool`."""
        first, second = ([r.get(ledger.PROVENANCE) for r in matching(pool, method=m)] for m in methods)
        return first, second

    claims: dict[tuple[str, str], tuple[str, dict | None]] = {}
    warm = next(iter(matching(rows, part="warmstart", method="tester completions")), None)
    for loss, names in LOSS_ROWS.items():
        per_role = names["per-role"]
        means = {m: np.mean([r["success_rate"] for r in matching(trained, method=m)])
                 for m in ("single", names["single+grpo"], "mas") if matching(trained, method=m)}  # fmt: skip
        best = max(means, key=means.get) if means else None
        claims[("1", loss)] = (
            f"{per_role} minus the best baseline ({best})",
            compare_methods(by_seed(trained, method=per_role), by_seed(trained, method=best),
                            builds=builds(per_role, best)) if best else None,
        )  # fmt: skip
        claims[("2", loss)] = (
            f"{per_role} minus {names['shared']}",
            compare_methods(by_seed(trained, method=per_role), by_seed(trained, method=names["shared"]),
                            builds=builds(per_role, names["shared"])),
        )  # fmt: skip
        tester = TESTER_AFTER.get(loss)
        after = (
            {r["seed"]: [r["greedy_catch_share"]] for r in matching(rows, method=tester)} if tester else {}
        )
        claims[("3", loss)] = (
            "the trained tester's greedy catch share minus the warm start's",
            compare_methods(after, {s: [warm["greedy_catch_share"]] for s in after},
                            builds=builds(tester, "tester completions", pool=rows)) if warm and after else None,
        )  # fmt: skip
        claims[("4", loss)] = (
            f"solved after the tester's feedback, {per_role} minus the untrained team",
            compare_methods(_after_feedback(trained, per_role), _after_feedback(trained, "mas"),
                            builds=builds(per_role, "mas")),
        )  # fmt: skip
    return claims


CLAIMS = {
    "1": "MAS + AT-GRPO (per role) above the best baseline",
    "2": "per role above shared",
    "3": "the trained tester catches more of the coder's wrong programs than the warm start's",
    "4": "more episodes solved after the tester's feedback than by the untrained team",
}
"""The code miniature's pre-registered claims, as the report names them."""


CLAIM_SEEDS = 5
"""The seeds the code miniature's pre-registration runs per trained method: no claim is judged on fewer."""


def claims_lines(rows: list[dict]) -> list[str]:
    """The claims table: each claim under each loss, its comparison, and whether it reproduces (the pre-registered
    criterion: the 95% interval above zero), judged once both sides hold `CLAIM_SEEDS` paired seeds."""
    lines = ["| claim | loss | compared | difference in points [95% interval], seed-level p, seeds; per seed "
             "| reproduces? |", "|---|---|---|---|---|"]  # fmt: skip
    for (claim, loss), (what, comparison) in code_claims(rows).items():
        if comparison is None or not comparison["per_seed"]:
            verdict = "not measured yet"
        elif not comparison["paired"] or min(comparison["seeds"]) < CLAIM_SEEDS:
            verdict = f"not yet ({min(comparison['seeds'])} of {CLAIM_SEEDS} seeds)"
        else:  # no interval: every seed's difference the same, the difference itself
            low, high = comparison["ci95"] or (comparison["difference"], comparison["difference"])
            if low > 0:
                verdict = "**yes** (interval above 0)"
            elif high < 0:
                verdict = "**no**: the opposite (interval below 0)"
            else:
                verdict = "**no** (interval holds 0)"
        lines.append(
            f"| {claim}: {CLAIMS[claim]} | `{loss}` | {what} | {comparison_cell(comparison)} | {verdict} |"
        )
    return lines


def write_report(all_rows: list[dict], args: argparse.Namespace, results_md: Path) -> None:
    """The domain's section of `results_md`, from the rows of its own setting; rows of candidate settings
    (`--env_kwargs`) appear only in its "Settings tried" table."""
    args = argparse.Namespace(**{**vars(args), "env_kwargs": None})
    domain = DOMAINS[args.env]
    rows = domain_rows(all_rows, args)
    suffix = "" if args.env == "plan-path-v0" else f"_{args.env}"
    curves = args.out.with_name(f"miniature{suffix}{setting_suffix(args)}_curves.png")
    if any("curve" in r for r in rows if r["part"] == "main"):
        plot_curves(rows, curves, args, domain)
    checks = [r for r in rows if r["part"] == "warmstart"]
    main = [r for r in rows if r["part"] == "main"]
    ablations = [r for r in rows if r["part"] == "ablations"]
    runs = {r["run"]: r.get("train_wall_s") or 0.0 for r in rows if "run" in r}  # each run once
    start, end = f"<!-- {domain.section}:start -->", f"<!-- {domain.section}:end -->"
    units = domain.instances
    noise = (
        ""
        if domain.plan_noise == PLAN_NOISE
        else f" (the demonstrations' non-tool answers perturbed in {domain.plan_noise:.0%} of steps, not "
        f"{PLAN_NOISE:.0%}, so that more episodes show a later turn)"
    )
    lines = [
        start,
        f"## Miniature reproduction, `{args.env}`: MAS + AT-GRPO against single-agent and trajectory-GRPO baselines",
        "",
        f"The built-in tiny model on CPU, `{args.env}` with `{json.dumps(setting(args))}`. {domain.why} "
        f"{helper_words(args.env, domain)} Each workflow has its own warm start, "
        f"{DEMOS_PER_ROLE} demonstrations per role and {domain.sft_steps_per_role} SFT steps per role{noise}. Every RL "
        f"run stops at a budget of {args.budget} sampled completions (the step that reaches it completes), K=4, lr "
        "1e-4, `scale_rewards: none`, temperature 1.0. Success rate in % on "
        f"{args.eval_episodes} evaluation-split {units} (greedy, `pettingllms-eval`, the same suite for every row): mean "
        "± sample std (ddof=1) over seeds, the seeds' 95% t-interval (clipped to [0, 100]), n. Rows without RL are one deterministic model "
        "on one suite, so their seeds agree.",
        "",
        f"Regenerate: `.venv/bin/python scripts/reproduce_miniature.py --env {args.env}` (resumable; rows in "
        "`docs/results/miniature.json`, runs in `runs/miniature/`; `--report` rebuilds this section). Learning "
        f"curves and every choice of recipe use the validation split ({args.curve_episodes} {units} per point), "
        "never the reported suite.",
        *setting_lines(all_rows, args),
    ]
    if checks:
        lines += ["", f"### Before RL (validation split, {args.val_episodes} {units}, greedy)", "",
                  "| warm start | success % |", "|---|---|"]  # fmt: skip
        for method in warmstart_checks(domain):
            lines.append(f"| {method} | {cell(checks, method=method)} |")
        shares = next(iter(matching(checks, method=f"{domain.helper} completions")), None)
        if shares and domain.helper == "tester":
            lines += ["", catch_words(shares, "The warm start's tester", args.val_episodes)]
        elif shares:
            lines += ["", "What the team's tool agent writes on the first turn: "
                      f"greedy, {100 * shares['greedy_program_share']:.0f}% programs "
                      f"({100 * shares['greedy_correct_program_share']:.0f}% the correct program); sampled at "
                      f"temperature 1, {100 * shares['sampled_program_share']:.0f}% programs "
                      f"({100 * shares['sampled_correct_program_share']:.0f}% the correct program)."]  # fmt: skip
    if main:
        lines += ["", "### Main table", "", budget_words(args, domain), "",
                  "| method | success % | generations per run: sampled + greedy probes | optimizer steps | paper (Qwen3-1.7B) |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for method in MAIN_ROWS:
            lines.append(f"| {method} | {cell(main, method=method)} | {budget(main, method=method)} "
                         f"| {steps(main, method=method)} | {domain.paper.get(method, '—')} |")  # fmt: skip
    else:
        lines += ["", "### Main table", "", "No run of the main table yet."]
    team = ("mas+at-grpo-shared", "mas+at-grpo-per-role")
    paired = paired_lines(
        main, [(m, ref) for ref in (best_baseline(main), "mas+trajectory-grpo") for m in team]
    )
    if paired:
        lines += ["", COMPARISON_WORDS, "",
                  "| method | against | difference in points [95% interval], seed-level p, seeds; per seed |",
                  "|---|---|---|", *paired]  # fmt: skip
    after = [r for r in rows if r["part"] == "mechanism"]
    if after and domain.helper == "tester":
        lines += ["", *(catch_words(r, f"After {r['method'].removeprefix('tester completions after ')}, seed "
                                       f"{r['seed']}, the tester", args.val_episodes)
                        for r in after)]  # fmt: skip
        lines += ["", *second_turn_lines(main)]
    if domain.helper == "tester" and main:
        lines += ["", "### The pre-registered claims (docs/results/preregistration_code.md)", "",
                  "Each under each loss: `grpo` in the main table, `dr_grpo` among the ablations. A claim reproduces "
                  "when its 95% interval over seeds lies above zero. " + COMPARISON_WORDS, "",
                  *claims_lines(rows)]  # fmt: skip
    elif after := matching(after, method=f"{domain.helper} completions after AT-GRPO (per role)"):
        greedy = span([100 * r["greedy_correct_program_share"] for r in after])
        sampled = span([100 * r["sampled_correct_program_share"] for r in after])
        lines += ["", f"After per-role AT-GRPO ({len(after)} seeds), the tool agent writes the correct program on the "
                  f"first turn of {greedy}% of validation {units} greedily and in {sampled}% of samples at "
                  "temperature 1 (the warm start: see above)."]  # fmt: skip
    if curves.is_file():
        lines += ["", f"![learning curves](results/{curves.name})"]
    if ablations:
        lines += ["", "### Ablations (one knob at a time, of `mas+at-grpo-per-role` unless the setting names another)", "",
                  "| knob | setting | success % | generations per run: sampled + greedy probes |", "|---|---|---|---|"]  # fmt: skip
        for name in [n for n in ABLATIONS if matching(ablations, method=n)]:
            knob, value = name.split("=", 1)
            lines.append(
                f"| {knob} | {value} | {cell(ablations, method=name)} | {budget(ablations, method=name)} |"
            )
        compared, references = ablation_reference(rows, ablations)
        paired = paired_lines(compared, [(n, references[n]) for n in ABLATIONS if n in references])
        if paired:
            against = (
                "the run it changes: commit=greedy where recorded, else the main table's row of its method"
            )
            lines += ["", f"Each ablation against {against}, over the seeds both ran. {COMPARISON_WORDS}", "",
                      "| setting | against | difference in points [95% interval], seed-level p, seeds; per seed |",
                      "|---|---|---|", *paired]  # fmt: skip
    if runs:
        lines += ["", f"Wall time on this 2-core CPU: {sum(runs.values()) / 60:.1f} minutes of training over "
                  f"{len(runs)} runs ({np.mean(list(runs.values())):.0f} s per run)."]  # fmt: skip
    lines += ["", end]
    replace_section(results_md, start, end, "\n".join(lines))


SHARING_SECTION = "miniature-sharing"
PAPER_SHARING = {
    "plan-path-v0": "+1 (97 against 96)",
    "math-v0": "− on some benchmarks (shared sometimes better)",
    "code-v0": "about +3 (coder and tester)",
}
"""The paper's per-role minus shared figure (Qwen3-1.7B) per domain, where it reports both, or its sign as the
paper's summary states it (math: a shared policy sometimes outperformed specialized ones; code: specialized
policies about 3 points above a shared one)."""


def sharing_lines(all_rows: list[dict]) -> list[str]:
    """Markdown rows, one per domain with both AT-GRPO layouts in its main table (the domain's own setting):
    per-role minus shared over seeds (`method_comparison`)."""
    lines = []
    for env_id, domain in DOMAINS.items():
        rows = [r for r in all_rows if r["env"] == env_id and r["part"] == "main"
                and r.get("env_kwargs", dict(domain.env_kwargs)) == dict(domain.env_kwargs)]  # fmt: skip
        per_role, shared = (
            by_seed(rows, method="mas+at-grpo-per-role"),
            by_seed(rows, method="mas+at-grpo-shared"),
        )
        comparison = compared(rows, {"method": "mas+at-grpo-per-role"}, {"method": "mas+at-grpo-shared"})
        if comparison is None:
            continue
        means = [100 * np.mean([np.mean(v) for v in runs.values()]) for runs in (per_role, shared)]
        lines.append(
            f"| `{env_id}` | {means[0]:.1f} | {means[1]:.1f} | {comparison_cell(comparison)} | "
            f"{PAPER_SHARING.get(env_id, '—')} |"
        )
    return lines


def write_sharing_report(all_rows: list[dict], results_md: Path) -> None:
    """The role-sharing table across the domains (its own section of `results_md`)."""
    start, end = f"<!-- {SHARING_SECTION}:start -->", f"<!-- {SHARING_SECTION}:end -->"
    rows = sharing_lines(all_rows)
    lines = [
        start, "## Role sharing against role specialization, per domain (miniature)", "",
        "Per-role AT-GRPO minus shared AT-GRPO on each domain's evaluation suite (its main table above): success "
        "in % (mean over seeds), then the difference. " + COMPARISON_WORDS + " The paper finds "
        "specialization helps where the roles differ (coding) and sharing can help where they overlap (math)"
        + ("." if any("`code-v0`" in line for line in rows) else "; the miniature has no coding domain yet."), "",
        "| domain | per-role | shared | per-role minus shared in points [95% interval], seed-level p, seeds; per seed | paper |",
        "|---|---|---|---|---|", *rows, "", end,
    ]  # fmt: skip
    replace_section(results_md, start, end, "\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", default=["warmstart", "main", "mechanism", "ablations"],
                        choices=["warmstart", "main", "mechanism", "ablations"], help="run in this order")  # fmt: skip
    parser.add_argument("--env", default="plan-path-v0", choices=list(DOMAINS), help="the domain (DOMAINS)")
    parser.add_argument("--env_kwargs", default=None,
                        help="JSON env kwargs replacing the domain's setting (a candidate, compared by `warmstart`)")  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=list(MAIN_ROWS), choices=MAIN_ROWS,
                        help="the main table's rows to run (the others keep their recorded rows)")  # fmt: skip
    parser.add_argument("--ablation_seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--ablations", nargs="+", default=list(ABLATIONS), choices=list(ABLATIONS),
                        help="the ablations to run (the others keep their recorded rows)")  # fmt: skip
    parser.add_argument("--budget", type=int, default=None,
                        help="sampled completions per training run (default: the domain's, DOMAINS)")  # fmt: skip
    parser.add_argument("--max_steps", type=int, default=200, help="cap on optimizer steps per run")
    parser.add_argument("--curve_every", type=int, default=10, help="evaluate every N steps for the curves")
    parser.add_argument("--curve_episodes", type=int, default=50, help="validation instances per curve point")
    parser.add_argument(
        "--val_episodes", type=int, default=200, help="validation instances of the warm-start checks"
    )
    parser.add_argument("--eval_episodes", type=int, default=300, help="pettingllms-eval suite size")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--runs", type=Path, default=RUNS, help="folder of the runs and evaluations")
    parser.add_argument("--results_md", type=Path, default=ROOT / "docs" / "results.md")
    parser.add_argument("--leaderboard", type=Path, default=ROOT / "leaderboard",
                        help="seed 0's evaluation of each main row goes to its results/, and the board is rebuilt")  # fmt: skip
    parser.add_argument(
        "--report", action="store_true", help="only rebuild the table (--out) and the report from the ledger"
    )
    parser.add_argument(
        "--demos_per_role", type=int, default=DEMOS_PER_ROLE, help="warm-start demonstrations per role"
    )
    parser.add_argument(
        "--warm_start_steps",
        type=int,
        default=None,
        help="SFT steps of both warm starts (default: the study's)",
    )
    args = parser.parse_args()
    args.budget = DOMAINS[args.env].budget if args.budget is None else args.budget
    study = Study(args)
    if args.report:  # the table, rebuilt from the ledger by the rule
        study.rows = ledger.write_table(args.out, RULE)
    if not args.report:
        started = time.perf_counter()
        parts = {
            "warmstart": study.warm_start_checks,
            "main": study.main_table,
            "mechanism": study.helper_after_rl,
            "ablations": study.ablations,
        }
        for part in args.parts:
            parts[part]()
            write_report(study.rows, args, args.results_md)
        print(f"study finished in {(time.perf_counter() - started) / 60:.1f} minutes")
    write_report(study.rows, args, args.results_md)
    write_sharing_report(study.rows, args.results_md)
    if (args.leaderboard / "results").is_dir():
        from pettingllms.presentation.leaderboard import build_leaderboard

        build_leaderboard(args.leaderboard / "results", args.leaderboard)
    print(f"wrote {args.out}, the miniature section of {args.results_md} and {args.leaderboard}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
