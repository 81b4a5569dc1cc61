"""On the light core install, the commands that need an extra say which one, in one line, instead of a traceback."""

import importlib.util

import pytest

from pettingllms.core.extras import require_extra

real_find_spec = importlib.util.find_spec


@pytest.fixture
def without(monkeypatch):
    """Make the named top-level modules look uninstalled to `require_extra`."""

    def hide(*modules):
        monkeypatch.setattr(
            importlib.util,
            "find_spec",
            lambda name, *a: None if name in modules else real_find_spec(name, *a),
        )

    return hide


def test_pettingllms_train_names_the_train_extra(without, capsys):
    from pettingllms.trainers import cli

    without("trl", "peft")
    assert cli.main(["--max_steps", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "pettingllms-train: error: pettingllms-train needs the 'train' extra (missing: trl, peft): "
        "pip install 'pettingllms[train]'"
    )


def test_pettingllms_eval_names_the_eval_extra(without, capsys, tmp_path):
    from pettingllms.eval import cli

    without("evaluate")
    argv = ["--env", "plan-path-v0", "--policy", "oracle", "--output", str(tmp_path / "r.json")]
    assert cli.main(argv) == 2
    assert (
        "needs the 'eval' extra (missing: evaluate): pip install 'pettingllms[eval]'"
        in capsys.readouterr().err
    )
    assert not (tmp_path / "r.json").exists()


def test_pettingllms_leaderboard_names_the_eval_extra(without, capsys, tmp_path):
    from pettingllms.cli import main

    without("matplotlib")
    assert main(["leaderboard", str(tmp_path), "--out", str(tmp_path / "board")]) == 2
    assert "pettingllms leaderboard needs the 'eval' extra (missing: matplotlib)" in capsys.readouterr().err


def test_an_installed_extra_passes():
    require_extra("eval", "pettingllms-eval")
