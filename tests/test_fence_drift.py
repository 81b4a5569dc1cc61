"""scripts/fence_drift.py's counts against a transcript file written by hand, in pettingllms-eval's schema."""

import json

import pytest
from scripts_loader import load_script

FENCED = "```python\nimport sys\nprint('<answer>U</answer>')\n```"
BARE = "import sys\nboard = sys.stdin.read()\nprint('<answer>U</answer>')"
BARE_DEF = "def solve(board):\n    return 'U'\nprint(solve(None))"
UNCLOSED = "```python\nfrom collections import deque\nprint(1)"  # no closing fence: the env does not run it
ANSWER = "<answer>U R</answer>"


@pytest.fixture(scope="module")
def drift():
    return load_script("fence_drift")


def episode(*steps):
    return {"run": "r", "env": "sokoban-v0", "key": "seed/0", "success": False,
            "steps": [{"turn": turn, "agent": agent, "prompt": "", "completion": completion}
                      for turn, (agent, completion) in enumerate(steps)]}  # fmt: skip


@pytest.fixture
def folder(tmp_path):
    episodes = [
        episode(("tool", FENCED), ("plan", BARE), ("tool", BARE)),
        episode(("tool", BARE_DEF), ("plan", ANSWER), ("tool", UNCLOSED), ("tool", ANSWER)),
    ]
    (tmp_path / "main_s0.json.transcripts.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    (tmp_path / "main_s0.json").write_text("{}")  # the result beside it is not read
    return tmp_path


def test_each_completion_is_sorted_by_its_fence(drift):
    assert [drift.classify(text) for text in (FENCED, BARE, BARE_DEF, UNCLOSED, ANSWER)] == [
        "fenced", "bare", "bare", "bare", "other"
    ]  # fmt: skip


def test_a_file_is_counted_for_one_agent(drift, folder):
    tool = drift.count(folder / "main_s0.json.transcripts.jsonl", "tool")
    assert (tool.transcripts, tool.completions, tool.fenced, tool.bare, tool.other) == ("main_s0", 5, 1, 3, 1)
    assert tool.bare_share == pytest.approx(3 / 5)
    plan = drift.count(folder / "main_s0.json.transcripts.jsonl", "plan")
    assert (plan.completions, plan.fenced, plan.bare, plan.other) == (2, 0, 1, 1)
    assert drift.count(folder / "main_s0.json.transcripts.jsonl", "reasoner").bare_share == 0.0


def test_the_command_prints_one_line_per_file(drift, folder, capsys):
    assert drift.main([str(folder), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows == [{"transcripts": "main_s0", "completions": 5, "fenced": 1, "bare": 3, "other": 1,
                     "bare_share": 0.6}]  # fmt: skip
    assert drift.main([str(folder)]) == 0
    assert (
        capsys.readouterr().out == "main_s0: 5 tool completions, 1 fenced, 3 bare programs (60%), 1 other\n"
    )


def test_a_folder_without_transcripts_is_refused(drift, tmp_path, capsys):
    with pytest.raises(SystemExit):
        drift.main([str(tmp_path)])
    assert "holds no *.transcripts.jsonl" in capsys.readouterr().err
