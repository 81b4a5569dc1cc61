"""The leaderboard: tables from fixture results, and the HTML page rendered by a real headless browser."""

import json
import os
import re
import shutil
import subprocess

import pytest

from pettingllms.cli import main as cli_main
from pettingllms.eval.leaderboard import build_leaderboard, read_results


def _result(label, rates, episodes=100, suite_kwargs=None, policy=None):
    return {
        "format": "pettingllms-eval/1",
        "label": label,
        "results": {
            env: {
                "success_rate": rate,
                "ci95": [max(0.0, rate - 0.1), min(1.0, rate + 0.1)],
                "episodes": episodes,
                "suite": {"env_id": env, "env_kwargs": suite_kwargs or {}, "episodes": episodes},
                "policies": {"plan": policy or label},
                "weights_sha256": {"plan": None},
                "sampling": {"temperature": 0.0},
                "seed": 0,
            }
            for env, rate in rates.items()
        },
    }


@pytest.fixture
def results_dir(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    fixtures = {
        "oracle.json": _result("oracle", {"plan-path-v0": 1.0, "sokoban-v0": 1.0}),
        "random.json": _result("random", {"plan-path-v0": 0.05, "sokoban-v0": 0.0}),
        "tiny.json": _result("tiny <b>", {"plan-path-v0": 0.41}),
        "tiny_small.json": _result("tiny <b>", {"plan-path-v0": 0.9}, episodes=10),  # fewer episodes: loses
        "tiny_7x7.json": _result(
            "tiny <b>", {"plan-path-v0": 0.8}, suite_kwargs={"size": 7}
        ),  # another suite
        "notes.json": {"something": "else"},
        "tiny_relabelled.json": _result(
            "tiny, again", {"plan-path-v0": 0.41}, policy="tiny <b>"
        ),  # tiny.json
        "warm.json": _result("warm start", {"plan-path-v0": 0.04}),  # one suite, below random's there
    }
    for name, content in fixtures.items():
        (folder / name).write_text(json.dumps(content))
    return folder


def test_table_rows_columns_and_markdown(results_dir, tmp_path):
    (tmp_path / "board" / "plots").mkdir(parents=True)
    (tmp_path / "board" / "plots" / "gone-v0.png").write_bytes(b"")  # a column no longer on the board
    table = build_leaderboard(results_dir, tmp_path / "board")
    # pairwise on shared suites: random (mean 2.5 over two suites) beats "warm start" (4.0, one suite) on the
    # suite both cover (5.0 against 4.0), so a mean over other suites does not rank them
    assert table.labels == ["oracle", "tiny <b>", "random", "warm start"]
    assert table.envs == ["plan-path-v0", 'plan-path-v0 {"size": 7}', "sokoban-v0"]  # a setting is a suite
    assert table.cells[("tiny <b>", "plan-path-v0")].episodes == 100
    assert table.cells[("tiny <b>", 'plan-path-v0 {"size": 7}')].success_rate == 0.8
    assert table.skipped == [
        "notes.json: not a pettingllms-eval/1 result",
        "tiny_relabelled.json: the same evaluation as tiny.json, under another label",
    ]
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert '| policy | plan-path-v0 | plan-path-v0 {"size": 7} | sokoban-v0 | mean |' in text
    assert "| random | 5.0 [0.0, 15.0] (n=100) | — | 0.0 [0.0, 10.0] (n=100) | 2.5 |" in text
    assert "| tiny <b> | 41.0 [31.0, 51.0] (n=100) | 80.0 [70.0, 90.0] (n=100) | — | 60.5 |" in text
    assert sorted(p.name for p in (tmp_path / "board" / "plots").iterdir()) == [
        "overview.png",
        "plan-path-v0.png",
        "plan-path-v0_size_7.png",
        "sokoban-v0.png",
    ]
    page = (tmp_path / "board" / "index.html").read_text()
    assert "tiny &lt;b&gt;" in page and "tiny <b>" not in page  # labels are escaped


def test_cli_command_and_empty_folder(results_dir, tmp_path, capsys):
    assert cli_main(["leaderboard", str(results_dir), "--out", str(tmp_path / "out")]) == 0
    assert "4 policies x 3 envs" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert cli_main(["leaderboard", str(tmp_path / "empty"), "--out", str(tmp_path / "x")]) == 2
    assert read_results(tmp_path / "empty").cells == {}


def _browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_page_renders_table_and_plots_in_a_headless_browser(results_dir, tmp_path):
    browser = _browser()
    if browser is None:
        if os.environ.get("PETTINGLLMS_REQUIRE_BROWSER"):
            pytest.fail("no chromium on PATH, and PETTINGLLMS_REQUIRE_BROWSER is set (CI installs it)")
        pytest.skip("no chromium on PATH (scripts/setup.sh installs Debian's chromium)")
    board = tmp_path / "board"
    build_leaderboard(results_dir, board)
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    flags.append(f"--user-data-dir={tmp_path / 'profile'}")
    url = (board / "index.html").as_uri()
    dom = subprocess.run(
        [*flags, "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert re.search(r'<table id="leaderboard">', dom)
    assert dom.count("<tr>") == 5  # header + four policies
    assert re.search(r'data-plots-rendered="4"', dom), "the page's four plots did not all load"
    shot = tmp_path / "leaderboard_screenshot.png"  # under the test's tmp dir: the checkout stays clean
    subprocess.run(
        [*flags, "--window-size=1200,1200", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000
