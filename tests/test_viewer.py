"""`pettingllms view`: the page's data from a known rollout dump and an evaluation, and the page itself as a real
headless Chromium draws it (the candidates, the committed marks, the group statistics, the filters)."""

import json
import os
import re
import shutil
import subprocess

import pytest

from pettingllms.backends.base import Generation
from pettingllms.cli import main as cli_main
from pettingllms.core.errors import ConfigError
from pettingllms.eval.cli import main as eval_main
from pettingllms.presentation.viewer import build_view, eval_data, run_data
from pettingllms.rollout.samples import EpisodeResult, Rollout, Sample, dump_rows


def _sample(instance, agent, reward, committed, completion, program=None):
    return Sample(
        group_id=f"{instance}/0/{agent}", instance=instance, turn=0, agent=agent, policy=agent,
        prompt=f"# prompt of {agent} on instance {instance}", completion=completion, reward=reward,
        reward_team=reward / 2, reward_local=reward / 2, generation=Generation(completion),
        committed=committed, advantage=reward - 0.5, program=program,
    )  # fmt: skip


@pytest.fixture
def run_folder(tmp_path):
    """A run with a known dump: step 1, two instances (0 solved, 1 not), K=2 candidates per agent; the tool
    agent's committed candidates are programs, one whose proposal solves its instance and one that does not."""
    folder = tmp_path / "run"
    (folder / "rollouts").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"env_id": "plan-path-v0", "grouping": "agent_turn"}))
    metrics = [{"step": 0, "eval/success_rate": 0.1}, {"step": 1, "train/success_rate": 0.5,
               "train/reward/tool": 0.4, "train/reward/plan": 0.6, "eval/success_rate": 0.3}]  # fmt: skip
    (folder / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in metrics))
    samples = []
    for instance in (0, 1):
        for agent in ("tool", "plan"):
            program = ("solves", "fails")[instance] if agent == "tool" else None
            samples += [
                _sample(instance, agent, 0.0, False, "<answer>U</answer> <b>not markup</b>"),
                _sample(instance, agent, 1.0, True, "<answer>R R</answer>", program),
            ]
    episodes = [EpisodeResult(0, True, 1, {}), EpisodeResult(1, False, 4, {})]
    rows = dump_rows(Rollout(samples, episodes), step=1)
    (folder / "rollouts" / "step_1.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def test_a_runs_data_holds_each_group_with_its_statistics_and_each_prompt_once(run_folder):
    data = run_data(run_folder)
    [step] = data["steps"]
    assert step["step"] == 1 and len(step["samples"]) == 8
    first = step["samples"][0]
    assert first["group_stats"] == {"n": 2, "mean": 0.5, "std": 0.5}
    assert (first["committed"], first["success"], first["advantage"]) == (False, True, -0.5)
    assert len(data["prompts"]) == 4  # a group's candidates share their prompt
    assert data["metrics"][1] == {"step": 1, "train/success_rate": 0.5, "train/reward/tool": 0.4,
                                  "train/reward/plan": 0.6, "eval/success_rate": 0.3}  # fmt: skip


def test_the_command_writes_one_self_contained_page(run_folder, tmp_path, capsys):
    assert cli_main(["view", str(run_folder)]) == 0
    page = run_folder / "view" / "index.html"
    assert f"wrote {page}" in capsys.readouterr().out
    text = page.read_text()
    assert "<script src" not in text and "http" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "<b>not markup</b>" not in text  # the data cannot close its script block or inject markup
    with pytest.raises(ConfigError, match="neither a run folder nor a pettingllms-eval result"):
        build_view(tmp_path / "missing")
    assert cli_main(["view", str(tmp_path)]) == 2  # a folder without config.json: one line, exit 2
    assert "not a run folder" in capsys.readouterr().err


def _browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _flags(browser, tmp_path):
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"]


def _dom(browser, tmp_path, url):
    return subprocess.run(
        [*_flags(browser, tmp_path), "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip


@pytest.fixture
def browser():
    found = _browser()
    if found is None:
        if os.environ.get("PETTINGLLMS_REQUIRE_BROWSER"):
            pytest.fail("no chromium on PATH, and PETTINGLLMS_REQUIRE_BROWSER is set (CI installs it)")
        pytest.skip("no chromium on PATH (scripts/setup.sh --with-browser installs Debian's chromium)")
    return found


def test_the_page_draws_the_tree_and_filters_it_in_a_headless_browser(run_folder, tmp_path, browser):
    url = build_view(run_folder).as_uri()
    dom = _dom(browser, tmp_path, url)
    assert 'data-ready="1"' in dom and 'data-shown="8"' in dom  # every candidate of the last step
    assert dom.count('class="committed candidate"') == 4  # one committed per (instance, turn, agent)
    assert "group 0/0/tool: n=2, mean reward 0.500, std 0.500" in dom
    assert "instance 0 (solved)" in dom and "instance 1 (not solved)" in dom
    assert "&lt;b&gt;not markup&lt;/b&gt;" in dom  # shown as text
    assert re.findall(r'class="program (good|bad)">program: its proposal (solves|does not solve)', dom) == [
        ("good", "solves"),
        ("bad", "does not solve"),
    ]
    assert re.search(r'data-render-ms="\d+"', dom) and dom.count("<svg") == 2  # success and reward curves
    filtered = _dom(browser, tmp_path, url + "#step=1&agent=plan&success=solved")
    assert 'data-shown="2"' in filtered and 'data-instance="1"' not in filtered
    shot = tmp_path / "view.png"
    flags = _flags(browser, tmp_path)
    subprocess.run([*flags, "--window-size=1200,1400", f"--screenshot={shot}", url], capture_output=True,
                   timeout=120, check=True)  # fmt: skip
    assert shot.stat().st_size > 10_000


def test_an_evaluations_episodes_are_conversations_in_a_headless_browser(tmp_path, browser):
    output = tmp_path / "oracle.json"
    argv = ["--env", "plan-path-v0", "--policy", "oracle", "--episodes", "3", "--output", str(output)]
    assert eval_main([*argv, "--no_progress"]) == 0
    url = build_view(output).as_uri()
    dom = _dom(browser, tmp_path, url)
    assert 'data-shown="3"' in dom and "plan-path-v0: success 1.000" in dom
    assert dom.count('class="episode"') == 3 and "turn 1 · plan · reward" in dom
    assert 'data-shown="0"' in _dom(browser, tmp_path, url + "#success=unsolved")
    assert dom.count("<details class") == 3 and '<details class="episode" data-key="seed/1" open' not in dom
    unfolded = _dom(browser, tmp_path, url + "#open=seed/1")
    assert re.search(r'<details class="episode" data-key="seed/1" open(="")?>', unfolded)


def test_hostile_completions_and_non_finite_numbers_show_as_text_in_a_headless_browser(
    run_folder, tmp_path, browser
):
    rows = [json.loads(line) for line in (run_folder / "rollouts" / "step_1.jsonl").read_text().splitlines()]
    rows[0]["completion"] = "<!-- opens a comment"
    rows[1]["completion"] = "later: <script>alert(1)</script> and </script><b>bold</b>"
    rows[2]["reward"] = float("nan")
    rows[3]["advantage"] = float("-inf")
    (run_folder / "rollouts" / "step_1.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with (run_folder / "metrics.jsonl").open("a") as metrics:
        metrics.write(
            json.dumps({"step": 2, "train/success_rate": float("inf"), "train/reward/plan": 0.5}) + "\n"
        )
    page = build_view(run_folder)
    assert "<!--" not in page.read_text().split('id="data">')[1].split("</script>")[0]
    dom = _dom(browser, tmp_path, page.as_uri())
    assert 'data-ready="1"' in dom and 'data-shown="8"' in dom
    assert "&lt;!-- opens a comment" in dom and "later: &lt;script&gt;alert(1)&lt;/script&gt; and" in dom
    assert "<td>NaN</td>" in dom and "<td>-Infinity</td>" in dom and "mean reward NaN" in dom
    assert "success rate (1 non-finite points not drawn)" in dom


def test_a_run_without_rollout_dumps_and_a_result_without_envs_draw_in_a_headless_browser(tmp_path, browser):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"env_id": "plan-path-v0"}))
    metrics = [
        {"step": 0, "eval/success_rate": 0.2},
        {"step": 1, "train/success_rate": 0.5, "train/reward/plan": 1},
    ]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in metrics))
    dom = _dom(browser, tmp_path, build_view(folder).as_uri())
    assert 'data-ready="1"' in dom and 'data-shown="0"' in dom and dom.count("<svg") == 2
    assert "This run has no rollout dumps: train with --dump_rollouts true" in dom
    result = tmp_path / "empty.json"
    result.write_text(json.dumps({"format": "pettingllms-eval/1", "label": "nothing", "results": {}}))
    dom = _dom(browser, tmp_path, build_view(result).as_uri())
    assert 'data-ready="1"' in dom and 'data-shown="0"' in dom and "evaluation nothing" in dom


def test_a_results_transcripts_file_is_read_only_inside_its_folder(tmp_path):
    output = tmp_path / "eval" / "oracle.json"
    argv = ["--env", "plan-path-v0", "--policy", "oracle", "--episodes", "2", "--output", str(output)]
    assert eval_main([*argv, "--no_progress"]) == 0
    report = json.loads(output.read_text())
    secret = tmp_path / "secret.jsonl"
    secret.write_text((tmp_path / "eval" / "oracle.json.transcripts.jsonl").read_text())
    for name in (str(secret), "../secret.jsonl"):
        report["results"]["plan-path-v0"]["transcripts"]["file"] = name
        output.write_text(json.dumps(report))
        [env] = eval_data(output)["envs"]
        assert env["episodes"] == [] and env["note"].startswith("not read: transcripts file")
    (tmp_path / "eval" / "link.jsonl").symlink_to(secret)
    report["results"]["plan-path-v0"]["transcripts"]["file"] = "link.jsonl"
    output.write_text(json.dumps(report))
    assert "leads outside the result's folder" in eval_data(output)["envs"][0]["note"]
    report["results"]["plan-path-v0"]["success_rate"] = float("nan")
    output.write_text(json.dumps(report))
    with pytest.raises(
        ConfigError, match="not a valid pettingllms-eval/1 result: plan-path-v0: success_rate"
    ):
        build_view(output)


def test_a_run_folder_of_the_wrong_shapes_is_one_clear_error(run_folder):
    (run_folder / "metrics.jsonl").write_text("3\n")
    with pytest.raises(ConfigError, match="every line of metrics.jsonl must be JSON objects"):
        build_view(run_folder)
    (run_folder / "config.json").write_text("{oops")
    with pytest.raises(ConfigError, match=r"config\.json: not JSON"):
        build_view(run_folder)
    (run_folder / "config.json").write_text("{}")
    (run_folder / "metrics.jsonl").unlink()
    (run_folder / "rollouts" / "step_1.jsonl").write_text('{"prompt": "p"}\n')
    with pytest.raises(ConfigError, match="step_1.jsonl: not a rollout dump"):
        build_view(run_folder)
