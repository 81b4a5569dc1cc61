"""The leaderboard: tables from fixture results, and the HTML page rendered by a real headless browser."""

import json
import os
import re
import shutil
import subprocess

import pytest

from pettingllms.cli import main as cli_main
from pettingllms.presentation.leaderboard import build_leaderboard, plot_name, read_results


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
    assert table.notes == [
        "notes.json: skipped: not a pettingllms-eval/1 result (format: None)",
        "tiny_relabelled.json (label 'tiny, again') repeats tiny.json (label 'tiny <b>'): the same evaluation "
        "with the same results, shown once, as 'tiny <b>'",
    ]
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert '| policy | plan-path-v0 | plan-path-v0 {"size": 7} | sokoban-v0 | mean |' in text
    assert "| random | 5.0 [0.0, 15.0] (n=100) | — | 0.0 [0.0, 10.0] (n=100) | 2.5 |" in text
    assert "| tiny \\<b\\> | 41.0 [31.0, 51.0] (n=100) | 80.0 [70.0, 90.0] (n=100) | — | 60.5 |" in text
    assert "## Notes\n\n- notes.json: skipped: not a pettingllms-eval/1 result" in text  # in the board itself
    assert sorted(p.name for p in (tmp_path / "board" / "plots").iterdir()) == [
        "overview.png",
        "plan-path-v0.png",
        "plan-path-v0_size_7-40e45095.png",
        "sokoban-v0.png",
    ]  # the stale plot went with the old board
    page = (tmp_path / "board" / "index.html").read_text()
    assert "tiny &lt;b&gt;" in page and "tiny <b>" not in page  # labels are escaped
    assert "<li>tiny_relabelled.json (label &#x27;tiny, again&#x27;) repeats tiny.json" in page
    assert not [p for p in (tmp_path / "board").iterdir() if p.name.startswith(".leaderboard-")]


def test_cli_command_and_empty_folder(results_dir, tmp_path, capsys):
    assert cli_main(["leaderboard", str(results_dir), "--out", str(tmp_path / "out")]) == 0
    assert "4 policies x 3 envs" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert cli_main(["leaderboard", str(tmp_path / "empty"), "--out", str(tmp_path / "x")]) == 2
    assert read_results(tmp_path / "empty").cells == {}


def _write(folder, files):
    folder.mkdir(exist_ok=True)
    for name, content in files.items():
        (folder / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return folder


def _rows(markdown_text):
    return [
        line
        for line in markdown_text.splitlines()
        if line.startswith("| ") and not line.startswith("| policy")
    ]


def test_hostile_result_files_are_skipped_or_escaped_with_a_visible_note(tmp_path):
    def broken(change):
        report = _result("broken", {"plan-path-v0": 0.5})
        change(report["results"]["plan-path-v0"])
        return report

    files = {
        "forged.json": _result("x | 100.0 | 100.0 |\n| forged row", {"plan-path-v0": 0.2}),
        "bidi.json": _result("safe\u202eesrever", {"plan-path-v0": 0.1}),
        "seven.json": broken(lambda r: r.update(success_rate=7.5)),
        "string_nan.json": broken(lambda r: r.update(success_rate="nan")),
        "float_nan.json": '{"format": "pettingllms-eval/1", "label": "n", "results": {"plan-path-v0": '
        '{"success_rate": NaN, "ci95": [0, 1], "episodes": 10}}}',
        "no_ci.json": broken(lambda r: r.pop("ci95")),
        "flag_count.json": broken(lambda r: r.update(episodes=True)),
        "half_episode.json": broken(lambda r: r.update(success_rate=0.505)),
        "outside_ci.json": broken(lambda r: r.update(ci95=[0.6, 0.7])),
        "list.json": {"format": "pettingllms-eval/1", "label": "l", "results": [1, 2]},
        "bad_env.json": _result("bad env", {"x|y\n": 0.5}),
    }
    folder = _write(tmp_path / "results", files)
    (folder / "binary.json").write_bytes(b"\xff\xfe{")
    table = build_leaderboard(folder, tmp_path / "board")
    assert table.labels == ["x | 100.0 | 100.0 |\n| forged row", "safe\u202eesrever"]
    notes = "\n".join(table.notes)
    for name, reason in [
        ("seven.json", "success_rate must be a finite number in [0, 1], not 7.5"),
        ("string_nan.json", "not 'nan'"), ("float_nan.json", "not nan"), ("no_ci.json", "ci95 must be two"),
        ("flag_count.json", "episodes must be an integer >= 1, not True"),
        ("half_episode.json", "no whole number of successes"), ("outside_ci.json", "must hold success_rate"),
        ("list.json", "results must be an object"), ("bad_env.json", "is not an env id"),
        ("binary.json", "not JSON"),
    ]:  # fmt: skip
        assert f"{name}: skipped: " in notes and reason in notes.split(f"{name}: skipped: ")[1].split("\n")[0]
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    table_text = text.split("## Notes")[0]
    assert len(_rows(table_text)) == 2  # no forged row
    assert (
        "| x \\| 100.0 \\| 100.0 \\|\\\\u000a\\| forged row | 20.0 [10.0, 30.0] (n=100) | 20.0 |"
        in table_text
    )
    assert "safe\\\\u202eesrever" in text and "\u202e" not in text
    assert text.count("\n- ") == len(table.notes) == 10
    page = (tmp_path / "board" / "index.html").read_text()
    assert page.count("<li>") == 10 and "\u202e" not in page


def test_two_files_with_one_label_on_one_suite_are_two_rows_never_one_replacing_the_other(tmp_path):
    folder = _write(tmp_path / "results", {
        "tiny.json": _result("tiny", {"plan-path-v0": 0.41}, episodes=100),
        "tiny_more.json": _result("tiny", {"plan-path-v0": 0.9}, episodes=1000, policy="other weights"),
        "tiny_code.json": _result("tiny", {"sokoban-v0": 0.3}, policy="other"),
        "merged.json": _result("merged", {"plan-path-v0": 0.2}),
        "merged_b.json": _result("merged", {"sokoban-v0": 0.1}, policy="b"),  # other suite: same row
    })  # fmt: skip
    table = read_results(folder)
    assert sorted(table.labels) == [
        "merged",
        "tiny [tiny.json]",
        "tiny [tiny_code.json]",
        "tiny [tiny_more.json]",
    ]
    assert table.cells[("tiny [tiny.json]", "plan-path-v0")].success_rate == 0.41
    assert table.cells[("tiny [tiny_more.json]", "plan-path-v0")].episodes == 1000
    assert table.covered("merged") == {"plan-path-v0", "sokoban-v0"}
    assert table.notes == [
        "label 'tiny': tiny.json, tiny_code.json, tiny_more.json each report plan-path-v0; neither replaces the "
        "other: one row per file"
    ]


def test_a_copied_identity_never_hides_the_genuine_row_unseen(tmp_path):
    genuine = _result("genuine", {"plan-path-v0": 0.4})
    copied = json.loads(json.dumps(genuine)) | {"label": "aaa impostor"}
    forged = json.loads(json.dumps(copied))
    forged["results"]["plan-path-v0"].update(success_rate=0.9, ci95=[0.8, 1.0])
    folder = _write(tmp_path / "same", {"zzz.json": genuine, "aaa.json": forged})
    table = read_results(folder)  # the same claimed evaluation, other results: both rows, and a note
    assert sorted(table.labels) == ["aaa impostor", "genuine"]
    assert table.notes == [
        "zzz.json (label 'genuine') and aaa.json (label 'aaa impostor') claim the same evaluation (suite, "
        "policies, weights, sampling, seed) with different results: both shown"
    ]
    board = tmp_path / "board"
    _write(tmp_path / "copy", {"zzz.json": genuine, "aaa.json": copied})
    table = build_leaderboard(tmp_path / "copy", board)  # a true repeat: one row, the note in the board
    assert table.labels == ["aaa impostor"]
    assert (
        "zzz.json (label 'genuine') repeats aaa.json (label 'aaa impostor')"
        in (board / "leaderboard.md").read_text()
    )


def test_plot_files_are_unique_per_column_and_a_failed_build_keeps_the_old_board(tmp_path, monkeypatch):
    from pettingllms.presentation import leaderboard

    folder = _write(tmp_path / "results", {
        "o.json": _result("o", {"overview": 0.5}),
        "a.json": _result("a", {"x-v0": 0.4}, suite_kwargs={"k": "b c"}),
        "b.json": _result("b", {"x-v0": 0.3}, suite_kwargs={"k": "b_c"}),
        "c.json": _result("c", {"X-v0": 0.2}),
    })  # fmt: skip
    board = tmp_path / "board"
    table = build_leaderboard(folder, board)
    names = sorted(p.name for p in (board / "plots").iterdir())
    assert len(table.envs) == 4 and len(names) == 5 and names.count("overview.png") == 1
    before = {p: p.read_bytes() for p in sorted(board.rglob("*")) if p.is_file()}
    _write(folder, {"d.json": _result("d", {"y-v0": 0.1})})

    def fail(*_):
        raise RuntimeError("the plot step failed")

    monkeypatch.setattr(leaderboard, "plot", fail)
    with pytest.raises(RuntimeError, match="the plot step failed"):
        build_leaderboard(folder, board)
    assert {p: p.read_bytes() for p in sorted(board.rglob("*")) if p.is_file()} == before  # all or nothing


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


def test_tier_suites_get_their_own_tables_with_the_progression_score(tmp_path):
    from pettingllms.envs.tiers import PLAN_PATH, SOKOBAN

    folder = tmp_path / "results"
    folder.mkdir()

    def tiered(label, env, tier, rate, progress):
        arguments = {"plan-path-v0": PLAN_PATH, "sokoban-v0": SOKOBAN}[env][tier]
        report = _result(label, {env: rate}, suite_kwargs=dict(arguments))
        report["results"][env].update(mean_progress=progress, tier=tier)
        return report

    files = {
        "oracle.json": _result("oracle", {"plan-path-v0": 1.0}),
        "oracle_easy.json": tiered("oracle", "plan-path-v0", "easy", 1.0, 100.0),
        "oracle_expert.json": tiered("oracle", "plan-path-v0", "expert", 1.0, 100.0),
        "random_expert.json": tiered("random", "plan-path-v0", "expert", 0.02, 12.5),
        "random_sokoban.json": tiered("random", "sokoban-v0", "hard", 0.0, 3.25),
        # the hard tier's arguments but not evaluated as the tier (no `tier` recorded): a suite of the main table
        "near.json": _result(
            "near", {"plan-path-v0": 0.5}, suite_kwargs={"size": 12, "obstacle_density": 0.3}
        ),
    }
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content))
    table = build_leaderboard(folder, tmp_path / "board")
    assert table.tier_envs() == {
        "plan-path-v0": {"easy": "plan-path-v0 [easy]", "expert": "plan-path-v0 [expert]"},
        "sokoban-v0": {"hard": "sokoban-v0 [hard]"},
    }
    assert table.suites == ["plan-path-v0", 'plan-path-v0 {"obstacle_density": 0.3, "size": 12}']
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    main, tiers = text.split("## Difficulty tiers")
    assert "[easy]" not in main and "random" not in main  # random has tier results only
    assert "| oracle | 100.0 [90.0, 100.0] (n=100) | — | 100.0 |" in main  # mean over the main suites only
    plan_path = tiers.split("### plan-path-v0")[1].split("###")[0]
    assert "| policy | easy | expert |" in plan_path
    solved = "100.0 [90.0, 100.0] (n=100); progress 100.0"
    assert f"| oracle | {solved} | {solved} |" in plan_path
    assert "| random | — | 2.0 [0.0, 12.0] (n=100); progress 12.5 |" in plan_path
    assert "| random | 0.0 [0.0, 10.0] (n=100); progress 3.2 |" in tiers.split("### sokoban-v0")[1]
    page = (tmp_path / "board" / "index.html").read_text()
    assert page.count("<table class='tiers'>") == 2 and "progress 12.5" in page
    near = plot_name('plan-path-v0 {"obstacle_density": 0.3, "size": 12}') + ".png"
    plots = {p.name for p in (tmp_path / "board" / "plots").iterdir()}
    assert plots == {"overview.png", near, "plan-path-v0.png"}  # the tiers' figures are in their tables


def test_a_progression_score_outside_0_100_or_an_unknown_tier_is_refused():
    from pettingllms.eval.result_schema import result_problems

    report = _result("x", {"plan-path-v0": 0.5})
    report["results"]["plan-path-v0"]["mean_progress"] = 101.0
    report["results"]["plan-path-v0"]["tier"] = "impossible"
    assert result_problems(report) == [
        "plan-path-v0: mean_progress must be a finite number in [0, 100], not 101.0",
        "plan-path-v0: tier must be one of ['easy', 'medium', 'hard', 'expert'], not 'impossible'",
    ]


def test_the_overview_grows_to_hold_every_policy_of_its_legend(tmp_path, monkeypatch):
    """50 policies: the legend beside the axes fits in the figure's height and the axes keep theirs (a figure
    of fixed size squeezed the axes to a strip under a legend that ran off the image)."""
    from pettingllms.presentation import leaderboard

    measured = []  # (figure height, legend bottom, legend top, axes height) in pixels, per figure saved
    original = leaderboard._save

    def measure_then_save(figure, path):
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        axis = figure.axes[0]
        legend = axis.get_legend()
        if legend is not None:
            box = legend.get_window_extent(renderer)
            height = figure.get_figheight() * figure.dpi
            measured.append((height, box.y0, box.y1, axis.get_window_extent(renderer).height))
        return original(figure, path)

    monkeypatch.setattr(leaderboard, "_save", measure_then_save)
    results = {
        f"p{i:02d}.json": _result(f"a policy with a long label, number {i:02d}", {"x-v0": i / 50})
        for i in range(50)
    }
    table = build_leaderboard(_write(tmp_path / "many", results), tmp_path / "board")
    assert len(table.labels) == 50
    [(height, bottom, top, axes)] = measured  # only the overview has a legend
    assert bottom >= 0 and top <= height  # every legend line is inside the figure
    assert axes >= 0.5 * height  # the bars keep half the height or more
