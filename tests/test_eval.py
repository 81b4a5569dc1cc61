"""`pettingllms-eval`: suites, baselines, metrics (against hand-computed values), resume, policy specs."""

import dataclasses
import json
import math
import re

import pytest

pytest.importorskip("evaluate")

from markers import needs_bwrap  # noqa: E402

import pettingllms  # noqa: E402
from pettingllms.backends.base import SamplingConfig, ScriptedPolicy  # noqa: E402
from pettingllms.backends.baselines import OraclePolicy, RandomPolicy  # noqa: E402
from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.eval import metrics  # noqa: E402
from pettingllms.eval.cli import main as eval_main  # noqa: E402
from pettingllms.eval.episode_cache import EpisodeCache, EpisodeCacheError, EpisodeRecord  # noqa: E402
from pettingllms.eval.policy_specs import load_policies, parse_policy_arg  # noqa: E402
from pettingllms.eval.runner import run_suite  # noqa: E402
from pettingllms.eval.suites import build_suite  # noqa: E402

GRID_ENVS = ("plan-path-v0", "sokoban-v0", "sudoku-v0")


def _play(env_id, policy, tmp_path, episodes=12, chunk_size=6, **kwargs):
    suite = build_suite(env_id, episodes, seed=3)
    agents = pettingllms.make(env_id).possible_agents
    cache = EpisodeCache(tmp_path / f"{env_id}.jsonl", "fp")
    return run_suite(
        suite,
        {"p": policy},
        dict.fromkeys(agents, "p"),
        {"p": SamplingConfig(temperature=0.0)},
        cache,
        chunk_size=chunk_size,
        **kwargs,
    )


@pytest.mark.parametrize("env_id", GRID_ENVS)
def test_oracle_solves_every_grid_episode_and_random_rarely_does(env_id, tmp_path):
    oracle = _play(env_id, OraclePolicy(), tmp_path / "o")
    assert all(record.success for record in oracle)
    assert all(sum(record.errors.values()) == 0 for record in oracle)
    random = _play(env_id, RandomPolicy(seed=0), tmp_path / "r")
    assert sum(record.success for record in random) / len(random) <= 0.25
    assert all(sum(record.errors.values()) == 0 for record in random)  # well-formed, if often illegal, moves


def _copy_the_proposal(prompt, rng):
    """The plan agent that answers with the tool agent's proposal when its prompt shows one."""
    found = re.search(r"proposed ([UDLR ]+);", prompt)
    return f"<answer>{found.group(1)}</answer>" if found else "no idea"


def test_joint_turns_hide_an_answer_from_the_agents_acting_in_its_turn(tmp_path, capsys):
    suite = build_suite("plan-path-v0", 6, seed=3)
    backends = {"oracle": OraclePolicy(), "copy": ScriptedPolicy(_copy_the_proposal)}
    sampling = dict.fromkeys(backends, SamplingConfig(temperature=0.0))

    def play(turns):
        return run_suite(suite, backends, {"tool": "oracle", "plan": "copy"}, sampling, None, turns=turns)

    # in the AEC order the plan agent reads the proposal and copies it
    assert all(r.success and r.turns == 1 for r in play("aec"))
    # with joint turns the plan agent observes each turn as it began: plan-path shows a proposal only within its
    # turn, so none ever reaches it
    assert not any(r.success for r in play("joint"))
    output = tmp_path / "joint.json"
    argv = ["--env", "plan-path-v0", "--policy", "oracle", "--episodes", "2", "--output", str(output), "--no_progress"]  # fmt: skip
    assert eval_main([*argv, "--turns", "joint"]) == 0
    report = json.loads(output.read_text())
    assert report["turns"] == "joint" and report["results"]["plan-path-v0"]["turns"] == "joint"
    aec = tmp_path / "aec.json"
    assert eval_main([*argv[:-3], "--output", str(aec), "--no_progress"]) == 0
    assert json.loads(aec.read_text())["results"]["plan-path-v0"]["turns"] == "aec"  # the default


def test_a_bad_turns_setting_is_one_line_naming_it_and_writes_nothing(tmp_path, capsys):
    refused = tmp_path / "refused"
    argv = [
        "--env",
        "plan-path-v0",
        "--policy",
        "oracle",
        "--episodes",
        "2",
        "--output",
        str(refused / "r.json"),
    ]
    with pytest.raises(SystemExit) as exited:
        eval_main([*argv, "--turns", "parallel"])
    assert exited.value.code == 2
    err = capsys.readouterr().err  # argparse's own line (Python 3.12 stopped quoting the choices)
    assert "error: argument --turns: invalid choice: 'parallel' (choose from" in err and "joint" in err
    assert (
        eval_main([*argv, "--env_kwargs", '{"turns": "joint", "workflow": "mas"}']) == 2
    )  # flags of their own
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "--env_kwargs names ['workflow', 'turns']: give --workflow and --turns" in err
    )
    assert not refused.exists()  # refused before any episode played or file written


def test_random_baseline_is_seeded(tmp_path):
    first = _play("plan-path-v0", RandomPolicy(seed=5), tmp_path / "a")
    second = _play("plan-path-v0", RandomPolicy(seed=99), tmp_path / "b")
    again = _play("plan-path-v0", RandomPolicy(seed=5), tmp_path / "c")
    assert first == again  # reseeded per chunk from the run's seed: the policy's own seed does not matter
    assert first == second
    other_run = _play("plan-path-v0", RandomPolicy(seed=5), tmp_path / "d", seed=4)
    assert other_run != first  # the run's seed does matter


def test_resume_skips_finished_episodes(tmp_path):
    class CountingOracle(OraclePolicy):
        def __init__(self):
            self.envs_seen = 0

        def generate_from_state(self, envs, agent, n):
            self.envs_seen += len(envs)
            return super().generate_from_state(envs, agent, n)

    class Interrupt(Exception):
        pass

    def stop_after_first_chunk(count):
        raise Interrupt

    policy = CountingOracle()
    with pytest.raises(Interrupt):
        _play("plan-path-v0", policy, tmp_path, episodes=12, chunk_size=6, on_progress=stop_after_first_chunk)
    first_chunk_calls = policy.envs_seen
    assert len((tmp_path / "plan-path-v0.jsonl").read_text().splitlines()) == 6
    resumed_policy = CountingOracle()
    records = _play("plan-path-v0", resumed_policy, tmp_path, episodes=12, chunk_size=6)
    assert len(records) == 12 and all(r.success for r in records)
    assert 0 < resumed_policy.envs_seen <= first_chunk_calls  # only the second chunk was played
    final_policy = CountingOracle()
    assert _play("plan-path-v0", final_policy, tmp_path, episodes=12, chunk_size=6) == records
    assert final_policy.envs_seen == 0


def test_cache_rows_of_other_settings_are_ignored(tmp_path):
    path = tmp_path / "cache.jsonl"
    record = EpisodeRecord("seed/1", True, 1, {"plan": 1}, {"plan": 0}, None, {"plan": 1.0})
    EpisodeCache(path, "one").add([record])
    assert EpisodeCache(path, "one").records == {"seed/1": record}
    assert EpisodeCache(path, "two").records == {}


def _rows(path):
    return path.read_text().splitlines()


def test_a_truncated_last_cache_row_is_dropped_with_a_message_and_played_again(tmp_path):
    _play("plan-path-v0", OraclePolicy(), tmp_path, episodes=4, chunk_size=2)
    path = tmp_path / "plan-path-v0.jsonl"
    rows = _rows(path)
    path.write_text("\n".join(rows[:3]) + "\n" + rows[3][: len(rows[3]) // 2])  # killed while writing row 4
    said = []
    cache = EpisodeCache(path, "fp", log=said.append)
    assert sorted(cache.records) == ["seed/3", "seed/4", "seed/5"] and _rows(path) == rows[:3]
    assert said == [f"{path}: dropped a truncated last line (line 4, {len(rows[3]) // 2} characters; the process "
                    "that wrote it was killed): its episode is played again"]  # fmt: skip
    assert [r.key for r in _play("plan-path-v0", OraclePolicy(), tmp_path, episodes=4, chunk_size=2)] == [
        "seed/3", "seed/4", "seed/5", "seed/6"
    ]  # fmt: skip
    assert _rows(path)[:3] == rows[:3] and len(_rows(path)) == 4


@pytest.mark.parametrize(
    "damage, line, reason",
    [
        ("tamper", 2, "its checksum does not match"),
        ("duplicate", 5, "episode 'seed/4' of the same run key is already at line 2: a duplicated row"),
        ("remove", 1, "its checksum does not match"),  # the first row is gone: the new first breaks the chain
        ("garbage", 3, "not valid JSON"),
        ("old format", 1, "not an episode row"),
    ],
)
def test_a_damaged_cache_row_is_named_by_file_and_line(tmp_path, capsys, damage, line, reason):
    output = tmp_path / "oracle.json"
    argv = ["--env", "plan-path-v0", "--policy", "oracle", "--episodes", "4", "--seed", "3"]
    argv += ["--output", str(output), "--no_progress"]
    assert eval_main(argv) == 0
    path = tmp_path / "oracle.json.episodes.jsonl"
    rows = _rows(path)
    if damage == "tamper":  # a failure turned into a success, nothing else changed
        row = json.loads(rows[1])
        rows[1] = json.dumps({**row, "success": not row["success"]})
    elif damage == "duplicate":
        rows.append(rows[1])
    elif damage == "remove":
        del rows[0]
    elif damage == "garbage":
        rows[2] = rows[2][:-5]
    else:
        row = json.loads(rows[0])
        rows[0] = json.dumps(
            {"fingerprint": "abc", **{k: v for k, v in row.items() if k not in ("run", "chain")}}
        )
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(EpisodeCacheError, match=rf"^{re.escape(str(path))}, line {line}: {reason}.*delete "):
        EpisodeCache(path, "fp")
    assert eval_main(argv) == 2
    assert f"{path}, line {line}: " in capsys.readouterr().err


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"returns": {"plan": float("nan"), "tool": 1.0}}, "returns .* are not agent -> finite number"),
        ({"turns": -1}, "turns -1 is not a whole number >= 0"),
        ({"steps": {"plan": "2"}}, "steps .* is not agent -> whole number >= 0"),
        ({"errors": {"plan": 9}}, r"errors of \['plan'\] exceed their steps"),
        ({"tokens": -5}, "tokens -5 is not"),
        ({"first_programs": {"tool": "wins"}}, "first_programs .* are not agent -> one of"),
        ({"progress": 150.0}, r"progress 150.0 is not a number in \[0, 100\]"),
        ({"progress": True}, r"fields \['progress'\] have the wrong type"),
        ({"key": ""}, "key is empty"),
    ],
)
def test_an_ill_typed_cache_row_is_refused_even_with_a_valid_chain(tmp_path, change, reason):
    """The chain only says the rows are as written; a writer who recomputes it still cannot make the metrics
    read a NaN return, a negative turn count or steps that are strings."""
    from pettingllms.eval.episode_cache import _link

    _play("plan-path-v0", OraclePolicy(), tmp_path, episodes=2, chunk_size=2)
    path = tmp_path / "plan-path-v0.jsonl"
    rows = [json.loads(line) for line in _rows(path)]
    chain, rewritten = "", []
    for number, row in enumerate(rows):
        body = {k: v for k, v in row.items() if k != "chain"} | (change if number == 1 else {})
        chain = _link(chain, body)
        rewritten.append(json.dumps({**body, "chain": chain}))
    path.write_text("\n".join(rewritten) + "\n")
    with pytest.raises(EpisodeCacheError, match=rf"line 2: {reason}"):
        EpisodeCache(path, "fp")


def test_success_rate_metric_matches_the_wilson_interval_by_hand():
    result = metrics.load("success_rate").compute(successes=[1, 1, 1, 0])
    p, n, z = 0.75, 4, 1.959963984540054
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert result["success_rate"] == 0.75 and result["episodes"] == 4
    assert result["ci95_low"] == pytest.approx(centre - half) and result["ci95_high"] == pytest.approx(
        centre + half
    )
    assert result["ci95_low"] == pytest.approx(0.3006, abs=1e-4)
    perfect = metrics.load("success_rate").compute(successes=[1] * 10)
    assert perfect["ci95_high"] == 1.0 and perfect["ci95_low"] == pytest.approx(0.7225, abs=1e-4)


def test_pass_at_k_metric_matches_the_unbiased_estimator_by_hand():
    result = metrics.load("pass_at_k").compute(num_samples=[5, 5, 4], num_correct=[1, 0, 4], k=[1, 2, 5])
    # problem 1: pass@1 = 1/5, pass@2 = 1 - C(4,2)/C(5,2) = 0.4; problem 3 is always right
    assert result["pass@1"] == pytest.approx((0.2 + 0.0 + 1.0) / 3)
    assert result["pass@2"] == pytest.approx((0.4 + 0.0 + 1.0) / 3)
    assert "pass@5" not in result  # problem 3 has only 4 samples


def test_turns_parse_errors_and_tokens_metrics_by_hand():
    turns = metrics.load("turns_to_success").compute(successes=[1, 0, 1, 1], turns=[1, 4, 2, 3])
    assert turns == {"mean_turns_to_success": 2.0, "successful_episodes": 3}
    errors = metrics.load("parse_error_rate").compute(
        agents=["tool", "plan", "tool", "plan", "plan"], errors=[1, 0, 0, 1, 1]
    )
    assert errors["parse_error_rate"] == {"plan": pytest.approx(2 / 3), "tool": 0.5}
    tokens = metrics.load("tokens_per_episode").compute(tokens=[10, 40, 20, 30])
    assert tokens == {
        "tokens_per_episode": 25.0,
        "tokens_per_episode_median": 25.0,
        "tokens_per_episode_max": 40,
    }


def test_summary_of_records():
    records = [
        EpisodeRecord("humaneval/0#0", True, 1, {"coder": 1, "tester": 1}, {"coder": 0, "tester": 1}, 30, {}),
        EpisodeRecord(
            "humaneval/0#1", False, 3, {"coder": 3, "tester": 3}, {"coder": 1, "tester": 0}, 90, {}
        ),
        EpisodeRecord(
            "humaneval/1#0", False, 3, {"coder": 3, "tester": 3}, {"coder": 0, "tester": 0}, 60, {}
        ),
        EpisodeRecord(
            "humaneval/1#1", False, 3, {"coder": 3, "tester": 3}, {"coder": 3, "tester": 0}, 60, {}
        ),
    ]
    summary = metrics.summarize("code-v0", records, samples_per_problem=2)
    assert summary["success_rate"] == 0.25 and summary["mean_turns_to_success"] == 1.0
    assert summary["parse_error_rate"] == {"coder": 0.4, "tester": 0.1}
    assert summary["pass@1"] == pytest.approx(0.25) and summary["pass@2"] == pytest.approx(0.5)
    assert summary["tokens_per_episode"] == 60.0
    assert "mean_progress" not in summary  # rows cached before the score was kept


def test_mean_progress_is_reported_when_every_episode_has_a_score():
    base = EpisodeRecord("seed/0", True, 1, {"plan": 1}, {}, None, {"plan": 1.0})
    scored = [
        dataclasses.replace(base, key=f"seed/{i}", progress=p) for i, p in enumerate([100.0, 50.0, 0.0])
    ]
    assert metrics.summarize("sokoban-v0", scored)["mean_progress"] == 50.0
    unscored = [*scored, dataclasses.replace(base, key="seed/3")]
    assert "mean_progress" not in metrics.summarize("sokoban-v0", unscored)


def test_played_episodes_record_their_progress(tmp_path):
    """The oracle's episodes end at 100; the random baseline's at the env's own score, recorded in the cache."""
    assert {
        record.progress for record in _play("sokoban-v0", OraclePolicy(), tmp_path / "o", episodes=4)
    } == {100.0}
    random = _play("sokoban-v0", RandomPolicy(seed=0), tmp_path / "r", episodes=4)
    assert all(0.0 <= record.progress <= 100.0 for record in random)
    reread = EpisodeCache(tmp_path / "r" / "sokoban-v0.jsonl", "fp").records
    assert [reread[record.key].progress for record in random] == [record.progress for record in random]


def test_solving_program_rate_counts_each_tool_agents_first_step_by_hand():
    def record(key, programs):
        return EpisodeRecord(key, False, 2, {"tool": 2, "plan": 2}, {}, None, {}, {}, programs)

    records = [
        record("a", {"tool": "solves"}),
        record("b", {"tool": "fails"}),
        record("c", {"tool": "absent"}),
        record("d", {"tool": "solves"}),
    ]
    assert metrics.summarize("plan-path-v0", records)["solving_program_rate"] == {"tool": 0.5}
    assert "solving_program_rate" not in metrics.summarize("plan-path-v0", [record("a", {}), record("b", {})])
    assert metrics.solving_program_rates([*records, record("e", None)]) == {}  # a row cached before the field


def test_a_training_runs_evaluation_figures_by_hand():
    """Two episodes: tool 3 + 1 steps with returns 0.5 + 0.3 and one cut step; plan 2 + 2 with returns 1.0 + 0.0."""
    solved = EpisodeRecord("a", True, 2, {"tool": 3, "plan": 2}, {}, None, {"tool": 0.5, "plan": 1.0}, {"tool": 1},
                           {"tool": "solves"})  # fmt: skip
    failed = EpisodeRecord("b", False, 1, {"tool": 1, "plan": 2}, {}, None, {"tool": 0.3, "plan": 0.0}, {},
                           {"tool": "fails"})  # fmt: skip
    figures = metrics.training_evaluation_metrics([solved, failed], ["tool", "plan"])
    assert figures == pytest.approx(
        {
            "eval/success_rate": 0.5,
            "eval/episodes": 2,
            "eval/generations": 8,  # 3 + 2 + 1 + 2 agent steps, one completion each
            "eval/reward/tool": 0.8 / 4,
            "eval/truncated/tool": 1 / 4,
            "eval/reward/plan": 1.0 / 4,
            "eval/truncated/plan": 0.0,
            "eval/solving_program/tool": 0.5,
        }
    )
    assert metrics.summary_figures("after", figures) == {
        "eval/success_rate_after": 0.5,
        "eval/solving_program_after/tool": 0.5,
    }


class _ProgramTool:
    """The tool agent writes the warm start's correct solver program; the plan agent carries out its proposal."""

    def generate_from_state(self, envs, agent, n):
        from pettingllms.backends.base import Generation
        from pettingllms.warmstart.tool_programs import PROGRAMS, as_tool_call

        if agent == "tool":
            return [
                [Generation(as_tool_call(PROGRAMS[env.unwrapped.metadata["name"]].correct))] * n
                for env in envs
            ]
        return [[Generation(env.unwrapped.solution(agent))] * n for env in envs]


@needs_bwrap
def test_the_first_programs_of_an_evaluation_are_what_the_env_reported(tmp_path):
    """A tool agent that always writes the solver program solves with it in every episode; the oracle, which
    answers directly, writes none."""
    with_program = _play("plan-path-v0", _ProgramTool(), tmp_path / "p", episodes=6)
    assert [r.first_programs for r in with_program] == [{"tool": "solves"}] * 6
    assert metrics.solving_program_rates(with_program) == {"tool": 1.0}
    direct = _play("plan-path-v0", OraclePolicy(), tmp_path / "o", episodes=6)
    assert metrics.solving_program_rates(direct) == {"tool": 0.0}


def test_policy_argument_mixes_roles_and_names_bad_parts():
    assert parse_policy_arg("oracle", ["tool", "plan"]) == {"tool": "oracle", "plan": "oracle"}
    assert parse_policy_arg("tool=random, plan=oracle", ["tool", "plan"]) == {
        "tool": "random",
        "plan": "oracle",
    }
    with pytest.raises(ConfigError, match="no spec for agents \\['plan'\\]"):
        parse_policy_arg("tool=random", ["tool", "plan"])
    with pytest.raises(ConfigError, match="agent 'coder'"):
        parse_policy_arg("coder=oracle,plan=oracle", ["tool", "plan"])


def test_policy_specs_that_name_nothing_loadable_are_one_line_errors(tmp_path, monkeypatch):
    """Run folders are resolved in tests/test_run_round_trip.py, on real runs; here the specs that cannot load."""
    from pettingllms.eval.policy_specs import _model_source

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(ConfigError, match="no such folder in 'runs'"):  # a mistyped run folder, not a hub id
        _model_source("runs/tpyo", "plan", "plan-path-v0", "mas", {})
    with pytest.raises(ConfigError, match="neither an existing folder nor a Hugging Face id"):
        _model_source("oracel", "plan", "plan-path-v0", "mas", {})
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="neither a run folder"):
        _model_source(str(tmp_path / "empty"), "plan", "plan-path-v0", "mas", {})


def test_baselines_load_once_for_every_agent():
    loaded = load_policies({"tool": "random", "plan": "random"}, "plan-path-v0")
    assert list(loaded.backends) == ["random"] and loaded.agent_policy == {"tool": "random", "plan": "random"}


def test_dataset_suites_walk_problems_in_order():
    suite = build_suite("code-v0", 500, seed=0)
    assert len(suite.episodes) == 164  # HumanEval, capped at its size
    env = pettingllms.make("code-v0", **suite.env_kwargs)
    env.reset(seed=suite.episodes[7].seed, options=dict(suite.episodes[7].options))
    assert env.unwrapped.problem.id == "humaneval/HumanEval/7"
    with pytest.raises(ConfigError, match="index"):
        env.reset(seed=0, options={"split": "eval", "index": 164})


def test_a_validation_suite_holds_other_grids_than_the_reported_one(tmp_path):
    from pettingllms.core.splits import split_of

    reported, validation = build_suite("plan-path-v0", 20), build_suite("plan-path-v0", 20, split="val")
    assert reported.to_json()["split"] == "eval" and validation.to_json()["split"] == "val"
    assert {e.key for e in reported.episodes}.isdisjoint(e.key for e in validation.episodes)
    grids = {}
    for suite in (reported, validation):
        env = pettingllms.make("plan-path-v0").unwrapped
        keys = set()
        for episode in suite.episodes:
            env.reset(seed=episode.seed, options=dict(episode.options))
            assert split_of(env.puzzle.key(env.initial_state)) == suite.split
            keys.add(env.puzzle.key(env.initial_state))
        grids[suite.split] = keys
    assert not grids["eval"] & grids["val"]
    with pytest.raises(ValueError, match="no validation split"):
        build_suite("code-v0", 5, split="val")
    with pytest.raises(ValueError, match="allowed values"):
        build_suite("plan-path-v0", 5, split="train")
    output = tmp_path / "val.json"
    argv = ["--env", "plan-path-v0", "--policy", "oracle", "--episodes", "3", "--split", "val",
            "--output", str(output), "--no_progress"]  # fmt: skip
    assert eval_main(argv) == 0
    assert json.loads(output.read_text())["results"]["plan-path-v0"]["success_rate"] == 1.0


def test_cli_writes_results_with_settings_and_resumes(tmp_path, capsys):
    output = tmp_path / "results" / "mixed.json"
    argv = [
        "--env", "plan-path-v0,sudoku-v0", "--policy", "tool=random,plan=oracle", "--episodes", "6",
        "--output", str(output), "--label", "mixed", "--no_progress",
    ]  # fmt: skip
    assert eval_main(argv) == 0
    report = json.loads(output.read_text())
    assert report["format"] == "pettingllms-eval/1" and report["label"] == "mixed"
    for env_id in ("plan-path-v0", "sudoku-v0"):
        result = report["results"][env_id]
        assert (
            result["success_rate"] == 1.0 and result["episodes"] == 6
        )  # the oracle plan agent always solves
        assert result["policies"] == {"tool": "random", "plan": "oracle"}
        assert result["sampling"]["decoding"] == "greedy" and result["suite"]["split"] == "eval"
        assert result["per_episode"] == {
            "keys": [f"seed/{i}" for i in range(6)],
            "success": [1] * 6,
            "parse_errors": [0] * 6,
            "turns": [1] * 6,  # the oracle plan agent solves in the first turn
            "progress": [100.0] * 6,  # the env's progression score at the episode's end
        }
    cached = (tmp_path / "results" / "mixed.json.episodes.jsonl").read_text().splitlines()
    assert len(cached) == 12
    assert eval_main(argv) == 0  # a rerun finds every episode cached
    assert (tmp_path / "results" / "mixed.json.episodes.jsonl").read_text().splitlines() == cached
    pooled = tmp_path / "results" / "pooled.json"
    assert (
        eval_main(
            [*argv[:-5], "--output", str(pooled), "--label", "mixed", "--no_progress", "--env_workers", "2"]
        )
        == 0
    )
    assert json.loads(pooled.read_text())["results"]["plan-path-v0"]["success_rate"] == 1.0
    assert eval_main(["--env", "nope-v0", "--policy", "oracle", "--output", str(output)]) == 2
    assert "unknown ids ['nope-v0']" in capsys.readouterr().err


@pytest.mark.parametrize("env_id", ["plan-path-v0", "sokoban-v0", "sudoku-v0", "code-v0", "math-v0"])
def test_every_env_has_baseline_answers_for_every_agent(env_id):
    """Both baselines answer in every agent's format: never a parse error."""
    import numpy as np

    env = pettingllms.make(env_id)
    env.reset(seed=1, options={"split": "eval"})
    rng = np.random.default_rng(0)
    for agent in env.agent_iter():
        _, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            continue
        assert env.unwrapped.solution(agent).strip()
        env.step(env.unwrapped.random_answer(agent, rng))
        assert set(env.infos[agent]) >= {"reward_team", "reward_local", "turn", "parse_error"}
        assert env.infos[agent]["parse_error"] is False
        if env.unwrapped.turn >= 1:
            break


def test_cli_samples_give_pass_at_k_on_humaneval(tmp_path):
    output = tmp_path / "code.json"
    argv = ["--env", "code-v0", "--policy", "coder=oracle,tester=random", "--episodes", "2", "--samples", "2"]
    assert eval_main([*argv, "--output", str(output), "--no_progress"]) == 0
    result = json.loads(output.read_text())["results"]["code-v0"]
    assert result["episodes"] == 4 and result["pass@1"] == 1.0 and result["pass@2"] == 1.0
    keys = [
        json.loads(line)["key"]
        for line in output.with_name("code.json.episodes.jsonl").read_text().splitlines()
    ]
    assert keys == ["humaneval/0#0", "humaneval/0#1", "humaneval/1#0", "humaneval/1#1"]


@pytest.mark.usefixtures("letters_env")
def test_new_weights_at_the_same_path_play_the_episodes_again(tiny_model, tmp_path):
    import shutil

    import torch
    from letters import LETTERS_ENV
    from transformers import AutoModelForCausalLM

    model = shutil.copytree(tiny_model, tmp_path / "model")
    output = tmp_path / "tiny.json"
    argv = ["--env", LETTERS_ENV, "--policy", str(model), "--episodes", "2", "--max_new_tokens", "3"]
    argv += ["--output", str(output), "--no_progress"]
    cache = tmp_path / "tiny.json.episodes.jsonl"
    assert eval_main(argv) == 0 and len(_rows(cache)) == 2
    first = json.loads(output.read_text())["results"][LETTERS_ENV].get("weights_sha256")
    assert eval_main(argv) == 0 and len(_rows(cache)) == 2  # same weights: every episode from the cache
    retrained = AutoModelForCausalLM.from_pretrained(model)
    with torch.no_grad():
        next(retrained.parameters()).add_(0.5)
    retrained.save_pretrained(model)  # new weights, same path
    assert eval_main(argv) == 0 and len(_rows(cache)) == 4  # played again
    second = json.loads(output.read_text())["results"][LETTERS_ENV]["weights_sha256"]
    assert first.keys() == second.keys() == {"tool", "plan"} and all(first[a] != second[a] for a in first)


def test_the_default_episodes_are_a_named_runs_own_evaluation_size(tmp_path):
    from pettingllms.eval.policy_specs import run_eval_episodes

    def run(name, episodes):
        folder = tmp_path / name
        (folder / "checkpoints" / "step_3").mkdir(parents=True)
        (folder / "checkpoints" / "step_3" / "state.json").write_text("{}")
        (folder / "config.json").write_text(json.dumps({"eval_episodes": episodes}))
        return folder

    small, large = run("small", 40), run("large", 300)
    assert run_eval_episodes("oracle") is None and run_eval_episodes("tool=random,plan=oracle") is None
    assert run_eval_episodes(str(small)) == 40
    assert run_eval_episodes(str(small / "checkpoints" / "step_3")) == 40  # a checkpoint of the run
    assert run_eval_episodes(f"tool={small},plan={large}") == 300  # several runs: the largest
    (tmp_path / "config.json").write_text(json.dumps({"eval_episodes": 7}))  # not a run: no checkpoints/
    assert run_eval_episodes(str(tmp_path)) is None


def test_a_named_run_is_evaluated_on_its_own_setting_unless_env_kwargs_say_otherwise(tmp_path):
    from pettingllms.eval.policy_specs import run_env_kwargs

    def run(name, env_kwargs):
        folder = tmp_path / name
        (folder / "checkpoints").mkdir(parents=True)
        config = {"env_id": "plan-path-v0", "env_kwargs": env_kwargs, "eval_episodes": 4}
        (folder / "config.json").write_text(json.dumps(config))
        return folder

    seven, five = run("seven", {"size": 7}), run("five", {})
    assert run_env_kwargs(str(seven), "plan-path-v0") == {"size": 7}
    assert (
        run_env_kwargs(str(seven), "sokoban-v0") is None and run_env_kwargs("oracle", "plan-path-v0") is None
    )
    with pytest.raises(ConfigError, match="different settings of plan-path-v0.*--env_kwargs"):
        run_env_kwargs(f"tool={seven},plan={five}", "plan-path-v0")
    output = tmp_path / "out.json"
    argv = ["--env", "plan-path-v0", "--policy", f"tool=oracle,plan={seven}", "--output", str(output)]
    from pettingllms.eval.cli import _env_kwargs, build_parser

    assert _env_kwargs(build_parser().parse_args(argv), "plan-path-v0") == {"size": 7}
    given = build_parser().parse_args([*argv, "--env_kwargs", '{"size": 6}'])
    assert _env_kwargs(given, "plan-path-v0") == {"size": 6}


def test_the_episodes_conversations_are_kept_once_per_episode_for_the_viewer(tmp_path):
    output = tmp_path / "oracle.json"
    argv = ["--env", "plan-path-v0", "--policy", "oracle", "--episodes", "3", "--chunk_size", "2"]
    argv += ["--output", str(output), "--no_progress"]
    assert eval_main(argv) == 0
    result = json.loads(output.read_text())["results"]["plan-path-v0"]
    path = tmp_path / result["transcripts"]["file"]
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [row["key"] for row in rows] == result["per_episode"]["keys"]  # one per episode, in suite order
    assert {row["run"] for row in rows} == {result["transcripts"]["run"]} and all(
        row["success"] for row in rows
    )
    first = rows[0]["steps"]
    assert [step["agent"] for step in first] == ["tool", "plan"] and first[0]["turn"] == 0
    assert first[0]["prompt"].startswith("# plan-path-v0") and first[1]["completion"].startswith("<answer>")
    assert first[1]["reward_team"] == 1.0 and first[1]["error"] is None
    assert eval_main(argv) == 0 and len(path.read_text().splitlines()) == 3  # cached episodes: no new rows
    assert eval_main([*argv, "--no_transcripts", "--seed", "1"]) == 0
    assert "transcripts" not in json.loads(output.read_text())["results"]["plan-path-v0"]


def test_cli_tier_writes_the_tiers_arguments_under_env_kwargs(tmp_path, capsys):
    output = tmp_path / "tiered.json"
    argv = [
        "--env",
        "sudoku-v0",
        "--policy",
        "oracle",
        "--episodes",
        "2",
        "--output",
        str(output),
        "--no_progress",
    ]
    assert eval_main([*argv, "--tier", "hard", "--env_kwargs", '{"blanks": 40}']) == 0
    result = json.loads(output.read_text())["results"]["sudoku-v0"]
    assert result["suite"]["env_kwargs"] == {"size": 9, "blanks": 40} and result["success_rate"] == 1.0
    assert result["mean_progress"] == 100.0 and ", mean progress 100.0\n" in capsys.readouterr().out
    assert "tier" not in result  # an argument changed: not the tier's suite
    assert eval_main([*argv, "--tier", "hard"]) == 0
    result = json.loads(output.read_text())["results"]["sudoku-v0"]
    assert result["tier"] == "hard" and result["suite"]["env_kwargs"] == {"size": 9, "blanks": 45}
    assert eval_main([*argv, "--tier", "legendary"]) == 2
    assert "tier='legendary' is not a tier of sudoku-v0; allowed values:" in capsys.readouterr().err


def test_each_episodes_progress_is_reported_the_relays_share_of_grids_solved(tmp_path):
    output = tmp_path / "relay.json"
    argv = ["--env", "plan-path-relay-v0", "--env_kwargs", '{"grids": 4}', "--policy", "tool=random,plan=random",
            "--episodes", "8", "--output", str(output), "--no_progress", "--no_transcripts"]  # fmt: skip
    assert eval_main(argv) == 0
    result = json.loads(output.read_text())["results"]["plan-path-relay-v0"]
    progress = result["per_episode"]["progress"]
    assert len(progress) == 8 and all(value in (0.0, 25.0, 50.0, 75.0, 100.0) for value in progress)
    assert result["mean_progress"] == pytest.approx(sum(progress) / 8)
    assert [int(value == 100.0) for value in progress] == result["per_episode"]["success"]
