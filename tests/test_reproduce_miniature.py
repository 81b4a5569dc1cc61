"""The miniature-reproduction script's bookkeeping: equal budgets, rows in the documented schema, the report."""

import argparse
import json
import re

import pytest
from scripts_loader import load_script

from research import ledger

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def study():
    return load_script("reproduce_miniature")


def test_trained_rows_are_the_papers_methods(study):
    def flag(flags, name):
        return flags[flags.index(name) + 1]

    single_workflow, single = study.method_flags("single+grpo")
    assert single_workflow == "single" and flag(single, "--grouping") == "trajectory"
    assert (
        int(flag(single, "--instances_per_step")) == 2 * study.TEAM_INSTANCES
    )  # one agent: twice the instances
    for method, grouping, layout in (
        ("mas+trajectory-grpo", "trajectory", "per_role"),
        ("mas+at-grpo-shared", "agent_turn", "shared"),
        ("mas+at-grpo-per-role", "agent_turn", "per_role"),
    ):
        workflow, flags = study.method_flags(method)
        assert workflow == "mas" and flag(flags, "--grouping") == grouping
        assert flag(flags, "--policy_layout") == layout
    assert study.ABLATIONS["commit=greedy"] == ([], {})  # the main table's per-role run
    assert flag(study.ABLATIONS["commit=tool-random,plan-greedy"][0], "--commit") == "tool=random"
    assert study.ABLATIONS["reward=outcome"][1] == {"reward": "outcome"}
    assert flag(study.ABLATIONS["loss=dr_grpo"][0], "--loss_type") == "dr_grpo"
    assert (
        flag(study.COMMON, "--eval_split") == "val"
    )  # curves on the validation split, never the reported one


@pytest.mark.parametrize("env_id", ["plan-path-v0", "sokoban-v0", "sudoku-v0", "math-v0"])
def test_the_two_warm_starts_see_as_many_demonstrations_and_sft_steps_per_role(study, env_id):
    domain = study.DOMAINS[env_id]
    team, single = (study.warm_start_settings(domain, workflow) for workflow in ("mas", "single"))
    assert (team["workflow"], single["workflow"]) == ("mas", "single")
    assert team["demos_per_role"] == single["demos_per_role"]
    assert team["sft_steps"] == 2 * single["sft_steps"] == 2 * domain.sft_steps_per_role  # two roles
    assert team["plan_noise"] == single["plan_noise"] == domain.plan_noise
    assert (
        0 < team["tool_programs"] < 0.5 and 0 < team["program_bugs"] < 1
    )  # direct answers stay the majority


def test_the_puzzle_domains_keep_the_warm_start_their_tables_were_run_with(study):
    for env_id in ("plan-path-v0", "sudoku-v0"):
        settings = study.warm_start_settings(study.DOMAINS[env_id], "mas")
        assert (settings["sft_steps"], settings["plan_noise"]) == (400, 0.2)


def test_report_tables_curves_and_idempotent_section(study, tmp_path):
    rows = []
    for seed in (0, 1):
        for method, success in (("single", 0.3), ("mas", 0.2), ("mas+at-grpo-per-role", 0.4 + 0.1 * seed)):
            row = {
                "part": "main",
                "env": "plan-path-v0",
                "method": method,
                "seed": seed,
                "success_rate": success,
                # 10 episodes: single solves 0-2, the team 0-3 or 0-4 depending on the seed
                "episode_success": {"single": "1110000000", "mas": "1100000000"}.get(
                    method, "1111000000" if seed == 0 else "1111100000"
                ),
            }
            if method.startswith("mas+"):
                row.update(steps=10, sampled_completions=1600, train_wall_s=60.0,
                           curve=[[0, 0, 0.2], [5, 800, 0.3], [10, 1600, success]])  # fmt: skip
            rows.append(row)
    rows.append({"part": "ablations", "env": "plan-path-v0", "method": "commit=random", "seed": 0,
                 "success_rate": 0.25, "steps": 12, "sampled_completions": 1650, "probe_generations": 240})  # fmt: skip
    rows.append({"part": "warmstart", "env": "plan-path-v0", "method": "mas, oracle tool", "seed": 0,
                 "success_rate": 0.93})  # fmt: skip
    rows.append({"part": "warmstart", "env": "plan-path-v0", "method": "tool completions", "seed": 0,
                 "greedy_program_share": 0.0, "greedy_correct_program_share": 0.0, "sampled_program_share": 0.4,
                 "sampled_correct_program_share": 0.25})  # fmt: skip
    for seed, share in ((0, 0.97), (1, 0.99)):
        rows.append({"part": "mechanism", "env": "plan-path-v0", "method": "tool completions after AT-GRPO (per role)",
                     "seed": seed, "greedy_program_share": 1.0, "greedy_correct_program_share": share,
                     "sampled_program_share": 0.9, "sampled_correct_program_share": share - 0.1})  # fmt: skip
    args = argparse.Namespace(
        budget=1600,
        eval_episodes=300,
        curve_episodes=50,
        val_episodes=200,
        out=tmp_path / "miniature.json",
        env="plan-path-v0",
        env_kwargs=None,
    )
    results_md = tmp_path / "results.md"
    results_md.write_text("# Results\n\nkept text\n")
    study.write_report(rows, args, results_md)
    study.write_report(rows, args, results_md)
    text = results_md.read_text()
    assert text.count("<!-- miniature:start -->") == 1 and "kept text" in text
    # sample std (ddof=1) 7.1; t-interval 45 ± 12.706 * 7.07 / sqrt(2) = 45 ± 63.5, clipped to [0, 100]
    # its generations: 1600 sampled, and 3 greedy probes (step 0, 5, 10) whose generations these rows did not count
    assert "| mas+at-grpo-per-role | 45.0 ± 7.1 [0.0, 100.0] (n=2) | 1600 + 3 probes | 10.0 | 97 |" in text
    assert "| single | 30.0 ± 0.0 [30.0, 30.0] (n=2) | 0 (no RL) | 0 | 5 |" in text
    assert "| commit | random | 25.0 (n=1) | 1650 + 240 |" in text  # probes counted by the run
    assert "| mas, oracle tool | 93.0 (n=1) |" in text
    assert "sampled at temperature 1, 40% programs (25% the correct program)" in text
    assert (
        "writes the correct program on the first turn of 97-99% of validation grids greedily and in 87-89%"
        in text
    )
    # over seeds: the team +10 and +20 points above single on seeds 0 and 1, mean +15; 2 seeds: p >= 0.5
    line = next(line for line in text.splitlines() if line.startswith("| mas+at-grpo-per-role | single |"))
    assert (
        "| +15.0 [" in line
        and "p = 0.5 (the smallest possible with 2 seeds), 2 vs 2 seeds; per seed +10, +20 |" in line
    )
    assert (tmp_path / "miniature_curves.png").stat().st_size > 5_000


def test_the_main_table_runs_only_the_rows_asked_for(study):
    ran = []
    runner = study.Study.__new__(study.Study)
    runner.args, runner.rows = argparse.Namespace(seeds=[0, 1], methods=["mas", "mas+trajectory-grpo"]), []
    runner.untrained_row = lambda method, seed: ran.append((method, seed))
    runner.trained_row = lambda part, method, seed, flags, workflow: ran.append((method, seed, flags[-1]))
    runner.main_table()
    assert ran == [
        ("mas", 0),
        ("mas+trajectory-grpo", 0, "per_role"),
        ("mas", 1),
        ("mas+trajectory-grpo", 1, "per_role"),
    ]


def test_each_domain_and_setting_has_its_own_runs_rows_and_report_section(study, tmp_path):
    def args(env, env_kwargs=None):
        return argparse.Namespace(env=env, env_kwargs=env_kwargs, runs=tmp_path / "runs", out=tmp_path / "rows.json",
                                  budget=1600, eval_episodes=300, curve_episodes=50, val_episodes=200)  # fmt: skip

    assert study.runs_folder(args("plan-path-v0")) == tmp_path / "runs"
    assert study.runs_folder(args("plan-path-v0", '{"size": 7}')) == tmp_path / "runs"  # the domain's own
    assert study.runs_folder(args("sudoku-v0", '{"size": 9}')) == tmp_path / "runs" / "sudoku-v0_size9"
    suffix = study.setting_suffix(
        args("sokoban-v0", '{"width": 6, "min_solution_length": 6, "note": "a-b.c"}')
    )
    assert suffix == "_min_solution_length6_noteabc_width6"  # a warm-start tag: letters, digits, underscores
    assert study.setting_suffix(args("sokoban-v0")) == ""
    assert set(study.DOMAINS) == {"plan-path-v0", "sokoban-v0", "sudoku-v0", "math-v0", "code-v0"}

    runner = study.Study(args("sudoku-v0"))
    for kwargs, success in ((None, 0.2), ('{"size": 9}', 0.0)):
        runner.args, runner.env_kwargs = args("sudoku-v0", kwargs), study.setting(args("sudoku-v0", kwargs))
        runner.record({"part": "warmstart", "method": "mas", "seed": 0, "success_rate": success}, None)
    runner.args, runner.env_kwargs = args("sudoku-v0"), study.setting(args("sudoku-v0"))
    runner.record({"part": "main", "method": "mas", "seed": 0, "success_rate": 0.4, "episodes": 300}, None)
    assert len(runner.rows) == 3  # one row per setting: the 9x9 candidate did not replace the default's
    assert json.loads((tmp_path / "rows.json").read_text()) == runner.rows
    runner.record({"part": "main", "method": "mas", "seed": 0, "success_rate": 0.5, "episodes": 300}, None)
    assert [r["success_rate"] for r in runner.rows if r["part"] == "main"] == [
        0.5
    ]  # the rerun is in the table
    lines = (tmp_path / "ledger.jsonl").read_text().splitlines()
    assert (
        len(lines) == 4 and '"success_rate": 0.4' in lines[2]
    )  # and the row it supersedes stays on the record

    results_md = tmp_path / "results.md"
    results_md.write_text("<!-- miniature:start -->\nplan-path's section\n<!-- miniature:end -->\n")
    study.write_report(runner.rows, args("sudoku-v0", '{"size": 9}'), results_md)  # a candidate's invocation
    text = results_md.read_text()
    assert "plan-path's section" in text and text.count("<!-- miniature-sudoku:start -->") == 1
    section = text.split("<!-- miniature-sudoku:start -->")[1]
    assert "| `{}` | — | 20.0 | — |" in section and '| `{"size": 9}` | — | 0.0 | — |' in section
    assert "| mas | 20.0 (n=1) |" in section  # before RL: the default setting's rows only
    assert "| mas | 50.0 (n=1) |" in section  # the rerun


class _ScriptedPolicy:
    """Answers every prompt with `text` and records what it was asked."""

    def __init__(self, text):
        self.text, self.asked = text, []

    def generate(self, prompts, n, sampling):
        from pettingllms.backends.base import Generation

        self.asked.append(list(prompts))
        return [[Generation(text=self.text)] * n for _ in prompts]


@pytest.mark.parametrize("env_id", ["math-v0", "sokoban-v0"])
def test_the_tool_agents_first_prompts_follow_the_agents_before_it_and_pair_with_that_instances_program(
    study, tmp_path, env_id
):
    import pettingllms
    from pettingllms.warmstart.math_programs import write_program
    from pettingllms.warmstart.tool_programs import PROGRAMS, as_tool_call

    args = argparse.Namespace(env=env_id, env_kwargs=None, runs=tmp_path / "runs", out=tmp_path / "rows.json",
                              val_episodes=3)  # fmt: skip
    policy = _ScriptedPolicy("I think it is \\boxed{12345}")
    prompts, correct, _ = study.Study(args).first_tool_prompts(policy)
    assert len(prompts) == len(correct) == 3
    env = pettingllms.make(env_id, workflow="mas", **study.DOMAINS[env_id].env_kwargs)
    for seed, (prompt, call) in enumerate(zip(prompts, correct)):
        env.reset(seed=seed, options={"split": "val"})
        if env_id == "math-v0":  # the reasoner answered first; its answer is in the tool agent's prompt
            problem = env.unwrapped.problem.problem
            assert problem in prompt and "12345" in prompt
            assert call == as_tool_call(write_program(problem)).strip()
        else:  # the tool agent acts first: nobody else was asked
            assert (
                prompt == str(env.observe("tool")) and call == as_tool_call(PROGRAMS[env_id].correct).strip()
            )
    if env_id == "math-v0":
        assert len(policy.asked) == 1 and len(set(correct)) == 3  # one reasoner batch; a program per problem
    else:
        assert policy.asked == []


def test_the_sharing_table_pairs_per_role_with_shared_per_episode_and_per_seed(study, tmp_path):
    own = dict(study.DOMAINS["sokoban-v0"].env_kwargs)

    def row(method, seed, episodes, env="sokoban-v0", env_kwargs=None):
        return {"part": "main", "env": env, "env_kwargs": own if env_kwargs is None else env_kwargs,
                "method": method, "seed": seed,
                "episode_success": episodes, "success_rate": episodes.count("1") / len(episodes)}  # fmt: skip

    rows = [row("mas+at-grpo-per-role", 0, "1100"), row("mas+at-grpo-per-role", 1, "1110"),
            row("mas+at-grpo-shared", 0, "1000"), row("mas+at-grpo-shared", 1, "1010"),
            row("mas+at-grpo-shared", 2, "0000"),  # no per-role partner: left out
            row("mas+at-grpo-per-role", 0, "1111", env_kwargs={})]  # another setting: left out  # fmt: skip
    [line] = study.sharing_lines(rows)
    # per-role seeds 0, 1 at 50% and 75%, shared seeds 0, 1, 2 at 25%, 50% and 0%: means 62.5 and 25.0, +37.5;
    # different seeds, so the groups are compared: of the C(5, 2) = 10 splits of the five rates, 3 have a gap
    # of means at least 0.375 ({.5, .75}, {.75, .5} and {.25, 0} against the rest): p = 0.3
    assert line.startswith("| `sokoban-v0` | 62.5 | 25.0 | +37.5 [")
    assert "p = 0.30, 2 vs 3 seeds; per seed +25, +25 | — |" in line
    results_md = tmp_path / "results.md"
    study.write_sharing_report(rows, results_md)
    study.write_sharing_report(rows, results_md)
    assert (
        results_md.read_text().count("<!-- miniature-sharing:start -->") == 1
        and line in results_md.read_text()
    )


def test_ablations_without_greedy_rows_are_paired_with_the_main_per_role_run_of_their_seeds(study):
    def row(part, method, seed, successes):
        return {"part": part, "env": "sokoban-v0", "method": method, "seed": seed,
                "success_rate": sum(successes) / len(successes), "episode_success": "".join(map(str, successes))}  # fmt: skip

    main = [
        row("main", "mas+at-grpo-per-role", seed, s) for seed, s in ((0, [1, 1]), (1, [0, 0]), (2, [1, 0]))
    ]
    ablations = [row("ablations", "reward=outcome", 1, [1, 1]), row("ablations", "reward=outcome", 2, [1, 1])]
    compared, references = study.ablation_reference([*main, *ablations], ablations)
    reference = "mas+at-grpo-per-role (main table)"
    assert references == {"reward=outcome": reference}
    assert sorted(r["seed"] for r in compared if r["method"] == reference) == [1, 2]  # seed 0 ran no ablation
    [line] = study.paired_lines(compared, references.items())
    # seeds 1 and 2: +100 and +50 points, mean +75; the exact test over 2 seeds cannot go below 0.5
    assert line.startswith("| reward=outcome | mas+at-grpo-per-role (main table) | +75.0 [")
    assert line.endswith("p = 0.5 (the smallest possible with 2 seeds), 2 vs 2 seeds; per seed +100, +50 |")
    greedy = [*ablations, {**main[1], "part": "ablations", "method": "commit=greedy"}]
    assert study.ablation_reference(main + greedy, greedy) == (greedy, {"reward=outcome": "commit=greedy"})


def test_an_ablation_of_trajectory_grpo_is_paired_with_the_main_trajectory_run_of_its_seeds(study):
    def row(part, method, seed, successes):
        return {"part": part, "env": "plan-path-v0", "method": method, "seed": seed,
                "success_rate": sum(successes) / len(successes), "episode_success": "".join(map(str, successes))}  # fmt: skip

    main = [
        row("main", "mas+at-grpo-per-role", 1, [1, 1, 1, 1]),
        row("main", "mas+trajectory-grpo", 1, [0, 1, 0, 1]),
        row("main", "mas+trajectory-grpo", 2, [1, 1, 1, 0]),
    ]
    ablations = [
        row("ablations", "commit=greedy", 1, [1, 1, 1, 1]),
        row("ablations", "reward=outcome", 1, [1, 1, 0, 1]),
        row("ablations", "loss=dr_grpo (trajectory)", 1, [1, 1, 1, 1]),
    ]
    compared, references = study.ablation_reference([*main, *ablations], ablations)
    # the per-role ablation keeps its greedy rows; the trajectory one gets the main trajectory row of seed 1 only
    assert references == {
        "reward=outcome": "commit=greedy",
        "loss=dr_grpo (trajectory)": "mas+trajectory-grpo (main table)",
    }
    assert [(r["method"], r["seed"]) for r in compared[len(ablations) :]] == [
        ("mas+trajectory-grpo (main table)", 1)
    ]
    lines = study.paired_lines(compared, references.items())
    assert [line.split(" | ")[:2] for line in lines] == [
        ["| reward=outcome", "commit=greedy"],
        ["| loss=dr_grpo (trajectory)", "mas+trajectory-grpo (main table)"],
    ]
    assert lines[0].split(" | ")[2].startswith("-25.0 [") and lines[1].split(" | ")[2].startswith("+50.0 [")


def test_the_ablations_part_runs_only_the_ablations_asked_for(study):
    ran = []
    runner = study.Study.__new__(study.Study)
    runner.args = argparse.Namespace(
        ablation_seeds=[1, 2], ablations=["reward=outcome", "loss=dr_grpo (trajectory)"]
    )
    runner.trained_row = lambda part, method, seed, flags, workflow, env_kwargs=None: ran.append(
        (part, method, seed, env_kwargs, flags)
    )
    runner.ablations()
    _, per_role = study.method_flags("mas+at-grpo-per-role")
    _, trajectory = study.method_flags("mas+trajectory-grpo")
    dr_grpo = [*trajectory, "--loss_type", "dr_grpo"]
    assert ran == [
        ("ablations", "reward=outcome", 1, {"reward": "outcome"}, per_role),
        ("ablations", "loss=dr_grpo (trajectory)", 1, {}, dr_grpo),
        ("ablations", "reward=outcome", 2, {"reward": "outcome"}, per_role),
        ("ablations", "loss=dr_grpo (trajectory)", 2, {}, dr_grpo),
    ]
    assert "--grouping" in trajectory and trajectory[trajectory.index("--grouping") + 1] == "trajectory"


def test_every_trained_method_has_its_dr_grpo_ablation_in_its_own_workflow(study):
    ran = []
    runner = study.Study.__new__(study.Study)
    losses = [name for name in study.ABLATIONS if name.startswith("loss=dr_grpo")]
    runner.args = argparse.Namespace(ablation_seeds=[0], ablations=losses)
    runner.trained_row = lambda part, method, seed, flags, workflow, env_kwargs=None: ran.append(
        (method, workflow, flags)
    )
    runner.ablations()
    bases = {study.ablation_base(name) for name in losses}
    assert bases == {m for m in study.MAIN_ROWS if m not in ("single", "mas")}  # each trained method, once
    for method, workflow, flags in ran:
        base_workflow, base_flags = study.method_flags(study.ablation_base(method))
        assert workflow == base_workflow and flags == [*base_flags, "--loss_type", "dr_grpo"]
    assert ("loss=dr_grpo (single+grpo)", "single") in [(m, w) for m, w, _ in ran]


def test_the_mechanism_part_measures_both_losses_per_role_runs_that_exist(study, tmp_path, monkeypatch):
    from pettingllms.runs import layout

    class Checkpoint:  # the newest intact checkpoint of a run folder: its helper's model is the folder's name
        def __init__(self, folder):
            self.folder = folder

        def model(self, role):
            return f"{self.folder.name}/{role}"

    monkeypatch.setattr(layout.RunLayout, "latest_intact", lambda self, log: Checkpoint(self.root))
    runner = study.Study.__new__(study.Study)
    runner.args = argparse.Namespace(seeds=[0, 1], ablation_seeds=[2])
    runner.domain, runner.runs, recorded = study.DOMAINS["code-v0"], tmp_path, []
    for name in ("main_mas+at-grpo-per-role_s1", "ablations_loss-dr_grpo_s2", "ablations_loss-dr_grpo_s0"):
        (tmp_path / name).mkdir()  # seed 0 of the main table has no folder; dr_grpo's seed 0 is not asked for
    runner.helper_shares = lambda model: {"model": model}
    runner.warm_start = lambda workflow: workflow
    runner.record = lambda row, warm_start: recorded.append(
        (row["method"], row["seed"], row["model"], warm_start)
    )
    runner.helper_after_rl()
    assert recorded == [
        (study.TESTER_AFTER["grpo"], 1, "main_mas+at-grpo-per-role_s1/tester", "mas"),
        (study.TESTER_AFTER["dr_grpo"], 2, "ablations_loss-dr_grpo_s2/tester", "mas"),
    ]


def test_run_names_are_path_safe_unique_and_keep_the_recorded_runs_names(study):
    names = [study.run_name("main", m, 0) for m in study.MAIN_ROWS if m not in ("single", "mas")]
    names += [study.run_name("ablations", a, 0) for a in study.ABLATIONS]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9_.+-]+", name) for name in names)
    # the names of runs already on the ledger (their folders resume under them)
    assert study.run_name("main", "mas+at-grpo-per-role", 3) == "main_mas+at-grpo-per-role_s3"
    assert study.run_name("ablations", "loss=dr_grpo", 2) == "ablations_loss-dr_grpo_s2"
    assert study.run_name("ablations", "commit=tool-random,plan-greedy", 0) == (
        "ablations_commit-tool-random_plan-greedy_s0"
    )
    assert (
        study.run_name("ablations", "loss=dr_grpo (trajectory)", 1) == "ablations_loss-dr_grpo_trajectory_s1"
    )


def test_commit_greedy_reuses_a_main_per_role_run_of_this_warm_start_and_code_and_trains_the_others(
    study, tmp_path, monkeypatch
):
    from research import ledger

    warm = tmp_path / "warm"
    warm.mkdir()
    (warm / "model.safetensors").write_bytes(b"weights")
    out = tmp_path / "miniature.json"
    kwargs = dict(study.DOMAINS["plan-path-v0"].env_kwargs)

    def main_row(seed):
        return {"part": "main", "env": "plan-path-v0", "env_kwargs": kwargs, "method": "mas+at-grpo-per-role",
                "seed": seed, "success_rate": 0.5 + seed / 10, "episode_success": "10"}  # fmt: skip

    recorded = {0: ("same", ledger.folder_digest(warm)), 1: ("same", "another build"), 2: ("older", None)}
    for seed, (commit, digest) in recorded.items():
        ledger.append(out.with_name(ledger.LEDGER_NAME), "miniature", main_row(seed), code_commit=commit,
                      warm_start=digest)  # fmt: skip
    monkeypatch.setattr(study, "same_package_code", lambda commit, repo: commit == "same")
    runner = study.Study(argparse.Namespace(out=out, env="plan-path-v0", env_kwargs=None, runs=tmp_path / "runs",
                                            ablation_seeds=[0, 1, 2], ablations=["commit=greedy"]))  # fmt: skip
    runner.warm_start = lambda workflow: warm
    trained = []
    runner.trained_row = lambda part, method, seed, flags, workflow, env_kwargs=None: trained.append(seed)
    runner.ablations()
    assert trained == [1, 2]  # seed 1: another warm start; seed 2: other code
    greedy = [r for r in runner.rows if r["method"] == "commit=greedy"]
    assert [{k: v for k, v in r.items() if k != ledger.PROVENANCE} for r in greedy] == [
        {**main_row(seed), "part": "ablations", "method": "commit=greedy"} for seed in (0, 1, 2)
    ]
    assert {r[ledger.PROVENANCE] for r in greedy} == {ledger.code_version(study.ROOT)}  # each row's own line
    assert [e.warm_start for e in ledger.read_ledger(out.with_name(ledger.LEDGER_NAME))[3:]] == [
        ledger.folder_digest(warm)
    ] * 3


def test_same_package_code_compares_the_package_between_a_commit_and_a_clean_head(study, tmp_path):
    import subprocess

    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip

    def commit(path, text):
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(text)
        git("add", "-A")
        git("commit", "-qm", path)
        return git("rev-parse", "HEAD")

    git("init", "-q")
    first = commit("pettingllms/trainer.py", "step = 1\n")
    docs_only = commit("docs/results.md", "a table\n")
    assert study.same_package_code(first, tmp_path) and study.same_package_code(docs_only, tmp_path)
    assert not study.same_package_code(first + "+dirty", tmp_path)
    assert not study.same_package_code(None, tmp_path)
    assert not study.same_package_code("0" * 40, tmp_path)  # not a commit of this repository
    (tmp_path / "pettingllms" / "trainer.py").write_text("step = 2\n")
    assert not study.same_package_code(docs_only, tmp_path)  # the checkout's package is dirty
    changed = commit("pettingllms/trainer.py", "step = 2\n")
    assert study.same_package_code(changed, tmp_path) and not study.same_package_code(docs_only, tmp_path)


def test_a_trained_row_counts_its_probes_generations_where_the_run_logged_them(study, tmp_path):
    result = {"success_rate": 0.5, "episodes": 2, "ci95": [0.1, 0.9]}
    lines = [
        {"step": 0, "eval/success_rate": 0.1, "eval/generations": 40},
        {"step": 1, "train/completions_total": 64},
        {"step": 2, "train/completions_total": 128, "eval/success_rate": 0.4, "eval/generations": 30},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    row = study._row("main", "mas+at-grpo-per-role", 0, result, tmp_path)
    assert row["curve"] == [[0, 0, 0.1], [2, 128, 0.4]] and row["probe_generations"] == 70
    assert row["sampled_completions"] == 128 and row["steps"] == 2
    lines[0].pop("eval/generations")  # a run from before they were logged: no count, not a partial one
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert "probe_generations" not in study._row("main", "mas+at-grpo-per-role", 0, result, tmp_path)


def test_the_code_domain_checks_the_tester_and_counts_second_turn_solutions(study):
    code = study.DOMAINS["code-v0"]
    assert study.warmstart_checks(code) == ("single", "mas", "mas, oracle tester")
    assert study.warmstart_checks(study.DOMAINS["math-v0"])[2] == "mas, oracle tool"
    assert study.warm_start_settings(code, "mas")["program_bugs"] == code.program_bugs
    main = [
        {"method": "mas", "seed": 0, "episode_success": "1100", "episode_turns": [1, 2, 3, 3]},
        {
            "method": "mas+at-grpo-per-role",
            "seed": 0,
            "episode_success": "1110",
            "episode_turns": [2, 2, 1, 3],
        },
        {
            "method": "mas+at-grpo-per-role",
            "seed": 1,
            "episode_success": "0000",
            "episode_turns": [3, 3, 3, 3],
        },
    ]
    assert study.second_turn_lines(main)[2:] == [
        "| mas | 25.0 | 25.0 |",  # one of four solved in turn 1, one after the tester's feedback
        "| mas+at-grpo-per-role | 12.5 | 25.0 |",  # seed 0: 1 and 2 of 4; seed 1: none
    ]
    shares = {"greedy_catch_share": 0.5, "sampled_catch_share": 0.25, "greedy_right_case_share": 0.9}
    assert study.catch_words(shares, "The tester", 8) == (
        "The tester catches the near miss shown as the coder's program in 50% of 8 validation problems greedily "
        "and in 25% of samples at temperature 1; 90% of its greedy cases are right."
    )


def test_the_code_claims_are_each_pre_registered_comparison_against_hand_worked_figures(study, monkeypatch):
    def row(part, method, seed, successes, turns=None, commit="c1"):
        return {"part": part, "method": method, "seed": seed, "success_rate": successes.count("1") / len(successes),
                "episode_success": successes, "episode_turns": turns or [1] * len(successes),
                ledger.PROVENANCE: commit}  # fmt: skip

    rows = [
        {"part": "warmstart", "method": "tester completions", "greedy_catch_share": 0.30, ledger.PROVENANCE: "c0"},
        row("warmstart", "mas", 0, "0000", commit="c0"),  # a warm-start check: not a main-table row
        *(row("main", "single", s, "1000") for s in (0, 1, 2)),
        *(row("main", "single+grpo", s, "1100") for s in (0, 1, 2)),
        *(row("main", "mas", s, "1110", [1, 1, 2, 3]) for s in (0, 1, 2)),
        row("main", "mas+at-grpo-per-role", 0, "1111", [1, 2, 2, 3]),
        row("main", "mas+at-grpo-per-role", 1, "1110", [1, 1, 2, 3]),
        row("main", "mas+at-grpo-per-role", 2, "1111", [1, 1, 2, 2]),
        *(row("main", "mas+at-grpo-shared", s, "1110") for s in (0, 1, 2)),
        *({"part": "mechanism", "method": "tester completions after AT-GRPO (per role)", "seed": s,
           "greedy_catch_share": share, ledger.PROVENANCE: "c1"} for s, share in enumerate((0.50, 0.52, 0.48))),
        {"part": "mechanism", "method": "tester completions after AT-GRPO (per role, dr_grpo)", "seed": 0,
         "greedy_catch_share": 0.10, ledger.PROVENANCE: "c2"},
    ]  # fmt: skip
    claims = study.code_claims(rows)
    what, first = claims[("1", "grpo")]
    assert what == "mas+at-grpo-per-role minus the best baseline (mas)"  # mas: 75%, above the coder's 25%/50%
    assert (
        first["per_seed"] == {0: 0.25, 1: 0.0, 2: 0.25} and not first["across_builds"]
    )  # not the check at c0
    assert claims[("2", "grpo")][1]["difference"] == pytest.approx(1 / 6)  # 11/12 against 3/4
    third = claims[("3", "grpo")][1]
    assert third["per_seed"] == pytest.approx({0: 0.20, 1: 0.22, 2: 0.18}) and third["across_builds"]
    # solved after the feedback (turn 2 or later): mas 1 of 4 (turn 2; its turn-3 episode failed); per role 3, 1, 2
    assert claims[("4", "grpo")][1]["per_seed"] == {0: 0.5, 1: 0.0, 2: 0.25}
    # dr_grpo's tester against the warm start: its own row, not grpo's
    assert claims[("3", "dr_grpo")][1]["per_seed"] == pytest.approx({0: -0.20})
    assert all(claims[(c, "dr_grpo")][1] is None or not claims[(c, "dr_grpo")][1]["per_seed"] for c in "124")
    assert study.claims_lines(rows)[2].endswith("| not yet (3 of 5 seeds) |")  # the pre-registration runs 5
    monkeypatch.setattr(study, "CLAIM_SEEDS", 3)  # the verdicts as they read once every seed is in
    lines = study.claims_lines(rows)
    assert lines[2].endswith("| **no** (interval holds 0) |")  # +16.7 [-19.2, +52.5]
    # +20.0, sd 2 points, t(0.975, 2) = 4.303: [+15.0, +25.0], above 0
    assert (
        "| 3: " in lines[4]
        and "+20.0 [+15.0, +25.0]" in lines[4]
        and lines[4].endswith("| **yes** (interval above 0) |")
    )
    assert lines[-1].endswith("| not measured yet |")
    worse = [{**r, "episode_success": "0000"} if r["method"] == "mas+at-grpo-per-role" else r for r in rows]
    # 0 against mas's 75% on every seed: no spread, the difference itself below 0
    assert study.claims_lines(worse)[2].endswith("| **no**: the opposite (interval below 0) |")
