"""The Ray placement check (`placement_problem`): a layout the cluster cannot hold is refused with what it asks,
what the cluster's nodes hold and a setting that fits, before any placement group or model (issue 66)."""

import re

import pytest

from pettingllms.trainers.policies.ray_actors import placement_problem

TWO_SMALL_NODES = [{"CPU": 2.0, "memory": 1e9}, {"CPU": 2.0, "memory": 1e9}]


def _suggested_bundle(problem: str) -> dict[str, float]:
    return {"CPU": float(re.search(r'--ray_policy_resources \'\{"CPU": ([0-9.]+)\}\'', problem)[1])}


def test_two_policies_and_two_env_workers_on_two_2_cpu_nodes_are_refused_with_a_bundle_that_fits():
    """The layout that hung in the issue: 2 x 2 bundles of 1 CPU + 2 env workers ask 6 CPUs of 4."""
    problem = placement_problem(2, {"CPU": 1}, 2, TWO_SMALL_NODES)
    assert problem.startswith("2 policies x 2 bundles of {'CPU': 1} + 2 env workers x 1 CPU ask {'CPU': 6.0}")
    assert "2 alive node(s) hold {CPU: 2}, {CPU: 2}" in problem
    fitting = _suggested_bundle(problem)
    assert fitting == {"CPU": 0.5} and placement_problem(2, fitting, 2, TWO_SMALL_NODES) is None


def test_the_sizing_rule_counts_every_resource_and_each_bundle_on_one_node():
    assert placement_problem(2, {"CPU": 0.5}, 2, TWO_SMALL_NODES) is None  # 2 + 2 = 4 CPUs: exactly full
    gpus = placement_problem(2, {"GPU": 1}, 2, [{"CPU": 16.0, "GPU": 1.0}] * 2)
    assert "ask {'GPU': 4, 'CPU': 2.0}" in gpus and "add nodes that hold these resources" in gpus
    assert placement_problem(2, {"GPU": 1}, 2, [{"CPU": 16.0, "GPU": 2.0}] * 2) is None
    wide = placement_problem(1, {"CPU": 3}, 2, [{"CPU": 2.0}] * 4)  # 8 CPUs in all, but no node holds 3
    assert "1 policy x 2 bundles" in wide and "no node holds one bundle's ['CPU']" in wide
    assert placement_problem(1, _suggested_bundle(wide), 2, [{"CPU": 2.0}] * 4) is None
    workers = placement_problem(1, {"CPU": 1, "GPU": 1}, 4, [{"CPU": 4.0, "GPU": 2.0}])
    assert workers.endswith("a setting that fits: --env_workers 2")
    assert placement_problem(1, {"CPU": 1, "GPU": 1}, 2, [{"CPU": 4.0, "GPU": 2.0}]) is None


def test_an_output_dir_the_driver_cannot_read_is_refused_naming_the_node(tmp_path):
    """The driver reads back each update worker's marker; one it cannot read (a folder local to the worker's
    node, here a marker that is not there) refuses the run, naming the policy and the node."""
    from pettingllms.trainers.policies.ray_actors import unshared_folder

    marker = tmp_path / ".shared-folder-check-plan-abc"
    problem = unshared_folder(str(tmp_path), "plan", "127.0.0.3", marker)
    assert "is not shared: policy 'plan''s update worker on node 127.0.0.3" in problem
    assert "use a folder every node reaches" in problem
    marker.write_text("127.0.0.3")
    assert unshared_folder(str(tmp_path), "plan", "127.0.0.3", marker) is None


@pytest.mark.parametrize("value", ["-1", "nan", "soon"])
def test_a_bad_ray_recover_s_is_one_line_naming_it_before_anything_starts(value, tmp_path, capsys):
    pytest.importorskip("torch")
    from pettingllms.trainers.cli import main

    output = tmp_path / "run"
    assert main(["--output_dir", str(output), "--distributed", "ray", "--ray_recover_s", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ray_recover_s" in err[0] and not output.exists()
