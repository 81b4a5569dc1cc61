"""The run ledger: an append-only chain that refuses edits, the rule that builds each study's table from it (checked
against the committed tables), and the recovery of a study's rows from git history."""

import json
import subprocess

import pytest
from scripts_loader import load_script

from research import ledger
from research.ledger import LedgerError, Rule, append, read_ledger, select

ROOT = ledger.Path(__file__).resolve().parents[1]
LEDGER = ROOT / "docs" / "results" / "ledger.jsonl"


def _row(method, seed, rate, **extra):
    return {"part": "curves", "method": method, "seed": seed, "success_rate": rate, **extra}


RULE = Rule("toy", ("part", "method", "seed"), keep=lambda row: "old" not in row, refusal="an old-format row")


def test_a_rerun_supersedes_without_removing_and_the_set_aside_rows_say_why(tmp_path):
    path = tmp_path / "ledger.jsonl"
    append(path, "toy", _row("a", 0, 0.2), code_commit="c1", warm_start="w", recorded="2026-12-01")
    append(path, "toy", _row("b", 0, 0.5), code_commit="c1", warm_start="w", recorded="2026-12-01")
    append(path, "other", _row("a", 0, 0.9), code_commit="c1", warm_start="w", recorded="2026-12-01")
    append(path, "toy", _row("a", 0, 0.3, old=True), code_commit=None, warm_start=None, recorded="2026-12-02")
    append(path, "toy", _row("a", 0, 0.4), code_commit="c2", warm_start="w", recorded="2026-12-03")
    selection = select(read_ledger(path), RULE)
    # in the order of their last lines, each with its line's code commit
    assert selection.rows == [_row("b", 0, 0.5, code_commit="c1"), _row("a", 0, 0.4, code_commit="c2")]
    assert [(entry.n, reason) for entry, reason in selection.set_aside] == [
        (1, "superseded by line 5, a rerun recorded 2026-12-03"),
        (4, "an old-format row"),
    ]
    lines = ledger.set_aside_lines(selection, lambda row: f"{row['method']} seed {row['seed']}")
    assert (
        lines[0]
        == "- line 1 (2026-12-01): a seed 0, success 20.0%: superseded by line 5, a rerun recorded 2026-12-03"
    )
    assert len(path.read_text().splitlines()) == 5  # nothing was removed


@pytest.mark.parametrize("tamper", ["edit", "remove", "swap"])
def test_an_edited_removed_or_reordered_line_breaks_the_chain(tmp_path, tamper):
    path = tmp_path / "ledger.jsonl"
    for seed in range(3):
        append(path, "toy", _row("a", seed, 0.5), code_commit=None, warm_start=None)
    lines = path.read_text().splitlines()
    if tamper == "edit":
        lines[1] = lines[1].replace('"success_rate": 0.5', '"success_rate": 0.9')
    elif tamper == "remove":
        del lines[1]
    else:
        lines[1], lines[2] = lines[2], lines[1]
    path.write_text("\n".join(lines) + "\n")
    broken = (
        3 if tamper == "edit" else 2
    )  # an edited line is caught at the next, whose prev no longer matches
    with pytest.raises(LedgerError, match=rf"ledger.jsonl:{broken}: the chain is broken"):
        read_ledger(path)
    with pytest.raises(LedgerError):  # and nothing can be appended to a broken ledger
        append(path, "toy", _row("a", 9, 0.5), code_commit=None, warm_start=None)


def test_a_malformed_line_is_named(tmp_path):
    path = tmp_path / "ledger.jsonl"
    path.write_text("{not json\n")
    with pytest.raises(LedgerError, match=r"ledger.jsonl:1: not a ledger line"):
        read_ledger(path)


def test_a_warm_starts_digest_covers_names_and_bytes(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"\x00\x01")
    first = ledger.folder_digest(folder)
    (folder / "model.safetensors").write_bytes(b"\x00\x02")
    assert ledger.folder_digest(folder) != first
    assert ledger.folder_digest(None) is None and ledger.folder_digest(tmp_path / "hub/id") is None


def test_the_code_version_names_the_commit_and_a_dirty_tree(tmp_path):
    repo = _git_repo(tmp_path)
    (repo / "rows.json").write_text("[]")
    (repo / "scripts").mkdir()
    (repo / "scripts" / "study.py").write_text("")
    _commit(repo, "first")
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout
    assert ledger.code_version(repo) == head.strip()
    (repo / "rows.json").write_text("[1]")  # results the study writes: not its code
    assert ledger.code_version(repo) == head.strip()
    (repo / "scripts" / "study.py").write_text("changed = True\n")
    assert ledger.code_version(repo) == head.strip() + "+dirty"
    assert ledger.code_version(tmp_path / "nowhere") is None


def _git_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for key, value in (("user.email", "t@example.org"), ("user.name", "t")):
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    return repo


def _commit(repo, message):
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", message], check=True)


def test_the_history_recovers_every_row_version_a_study_ever_committed(tmp_path):
    history = load_script("ledger_history")
    repo = _git_repo(tmp_path)
    table = repo / "docs" / "results" / "grouping.json"
    table.parent.mkdir(parents=True)
    first, second = _row("a", 0, 0.11), _row("b", 0, 0.13)
    table.write_text(json.dumps([first, second]))
    _commit(repo, "first rows")
    rerun = _row("a", 0, 0.95)
    table.write_text(json.dumps([second, rerun]))  # the rerun replaced the row in the file
    _commit(repo, "rerun")
    out = tmp_path / "ledger.jsonl"
    history.main(["--repo", str(repo), "--ledger", str(out)])
    entries = read_ledger(out)
    assert [entry.row for entry in entries] == [
        first,
        second,
        rerun,
    ]  # the replaced row is back on the record
    assert all(
        entry.study == "grouping" and entry.note.startswith("recovered from the git history")
        for entry in entries
    )
    with pytest.raises(SystemExit, match=r"already has lines of \['grouping'\]"):
        history.main(["--repo", str(repo), "--ledger", str(out)])
    last = (
        repo / "docs" / "results" / "default_run.json"
    )  # a study whose file is one object: the last measurement
    for before in (0.237, 0.257):
        last.write_text(json.dumps({"date": str(before), "eval": {"before": before}}))
        _commit(repo, f"measured {before}")
    history.main(["--repo", str(repo), "--ledger", str(out), "--studies", "default_run"])
    assert [e.row["eval"]["before"] for e in read_ledger(out) if e.study == "default_run"] == [0.237, 0.257]


@pytest.mark.parametrize(
    ("script", "table"),
    [
        ("grouping_study", "grouping.json"),
        ("reproduce_miniature", "miniature.json"),
        ("scaling_study", "scaling.json"),
        ("pretrained_study", "pretrained.json"),
        ("pretrained_rl_study", "pretrained_rl.json"),
        ("credit_study", "credit.json"),
        ("comlrl_study", "comlrl.json"),
    ],
)
def test_each_committed_table_is_what_its_rule_selects_from_the_ledger(script, table):
    rule = load_script(script).RULE
    rows = json.loads((LEDGER.parent / table).read_text())
    assert rows == select(read_ledger(LEDGER), rule).rows, (
        f"docs/results/{table} is not what {script}.RULE selects from docs/results/ledger.jsonl: tables are "
        "built from the ledger (rerun the study's --report), never edited"
    )


def test_every_kept_warm_start_is_the_one_its_rows_name():
    """A kept warm start (`research.cycle.warm_start`) is committed with the rows measured on it: its digest is on
    the ledger, so a later run from the copy trains from the weights the first rows did."""
    kept = sorted((LEDGER.parent / "warm_starts").iterdir())
    named = {entry.warm_start for entry in read_ledger(LEDGER)}
    assert kept and all(ledger.folder_digest(folder) in named for folder in kept), [
        folder.name for folder in kept if ledger.folder_digest(folder) not in named
    ]


def test_the_grouping_studys_first_seed_0_rows_are_on_the_record():
    entries = [e for e in read_ledger(LEDGER) if e.study == "grouping"]
    aside: dict[tuple, list[float]] = {}
    for entry, _ in select(entries, load_script("grouping_study").RULE).set_aside:
        if entry.row["seed"] == 0:
            key = (entry.row["method"], entry.row["budget"], entry.row["split"])
            aside.setdefault(key, []).append(entry.row["success_rate"])
    # the first rows, set aside by the seed-0 reruns of 2026-12-02 (which the reruns at one commit set aside in turn)
    assert aside[("at-grpo-per-role", 500, "val")][0] == 0.11
    assert aside[("trajectory-grpo", 500, "val")][0] == 0.13


def test_the_ledger_page_lists_every_row_set_aside():
    report = load_script("ledger_report")
    assert report.PAGE.read_text() == report.render(LEDGER), (
        "docs/ledger.md is not what scripts/ledger_report.py renders from the ledger: rerun it"
    )
    set_aside = sum(
        len(select(read_ledger(LEDGER), load_script(script).RULE).set_aside)
        for script in report.STUDIES.values()
    )
    assert report.PAGE.read_text().count("\n- line ") == set_aside


def test_every_miniature_row_on_the_leaderboard_names_the_ledger_line_it_is():
    import re

    miniature = load_script("reproduce_miniature")
    entries = {entry.n: entry for entry in read_ledger(LEDGER)}
    files = sorted((ROOT / "leaderboard" / "results").glob("miniature_*.json"))
    assert files
    for path in files:
        report = json.loads(path.read_text())
        [(env, result)] = report["results"].items()
        line = re.search(r"; ledger line (\d+), ", report["label"])
        assert line, f"{path.name}: the label {report['label']!r} names no ledger line"
        entry = entries[int(line[1])]
        assert report["label"] == miniature.leaderboard_label(entry.row["method"], entry)
        assert entry.row["env"] == env and entry.row["seed"] == 0
        assert entry.row["episode_success"] == "".join(str(s) for s in result["per_episode"]["success"])


def test_recording_a_row_the_table_holds_from_the_same_code_and_weights_appends_nothing(tmp_path):
    repo = _git_repo(tmp_path)
    (repo / "scripts").mkdir()
    (repo / "scripts" / "study.py").write_text("")
    _commit(repo, "first")
    table, path = repo / "toy.json", repo / ledger.LEDGER_NAME
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "model.safetensors").write_bytes(b"\x00")

    def record(rate):
        row = _row("a", 0, rate, interval_95=(0.4, 0.6))  # a tuple reads back from the ledger as a list
        ledger.record(table, RULE, row, repo=repo, warm_start=weights)

    record(0.5)
    record(0.5)  # a resumed study re-reads its cached evaluation: nothing new
    assert len(read_ledger(path)) == 1
    record(0.6)
    record(0.5)  # the first row again is a change from the table's last line: recorded
    assert [entry.row["success_rate"] for entry in read_ledger(path)] == [0.5, 0.6, 0.5]
    (weights / "model.safetensors").write_bytes(b"\x01")
    with pytest.raises(ValueError, match=r"line 3 of .* rebuilt, not restored.*kept warm start"):
        record(0.5)  # the same row from other weights by the same code: a warm start rebuilt, not restored
    assert len(read_ledger(path)) == 3
    (repo / "scripts" / "study.py").write_text("changed = True\n")
    _commit(repo, "second")
    record(0.5)  # from other code (and weights): a rerun
    entries = read_ledger(path)
    assert len(entries) == 4
    assert entries[3].warm_start != entries[2].warm_start and entries[3].code_commit != entries[2].code_commit
    commit = entries[3].code_commit
    assert json.loads(table.read_text()) == [_row("a", 0, 0.5, interval_95=[0.4, 0.6], code_commit=commit)]
    copied = json.loads(table.read_text())[0]  # a row copied from the table, as an ablation reuses a main run
    ledger.record(table, RULE, {**copied, "code_commit": "not this line's"}, repo=repo, warm_start=weights)
    assert len(read_ledger(path)) == 4  # the table already holds it: its provenance is no part of the row
    (repo / "scripts" / "study.py").write_text("changed = False\n")  # uncommitted: a dirty checkout
    for byte in (b"\x02", b"\x03"):
        (weights / "model.safetensors").write_bytes(byte)
        record(0.5)  # a dirty checkout's code is unknown: a row from other weights is not refused
    assert len(read_ledger(path)) == 6


def test_a_resumed_miniature_publishes_a_row_under_the_line_that_holds_it_not_the_ledgers_last(tmp_path):
    miniature = load_script("reproduce_miniature")
    table = tmp_path / "miniature.json"
    setting = {"env": "code-v0", "env_kwargs": {"difficulty": 2}, "part": "main"}
    first = {**setting, "method": "mas+at-grpo-per-role", "seed": 0, "success_rate": 0.25}
    later = {**setting, "method": "single+grpo", "seed": 2, "success_rate": 0.13}
    for row in (first, later):
        append(table.with_name(ledger.LEDGER_NAME), "miniature", row, code_commit="c0", warm_start="w0")
    # a resumed study re-records seed 0's cached row: the ledger holds it on line 1, its last line is seed 2's
    entry = miniature.holding_entry(table, dict(first))
    assert (entry.n, entry.row["method"]) == (1, "mas+at-grpo-per-role")
    assert "ledger line 1," in miniature.leaderboard_label("mas+at-grpo-per-role", entry)
