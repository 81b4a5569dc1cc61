"""Two Ray nodes on one host (127.0.0.2 and 127.0.0.3, three CPUs each; Ray replaces 127.0.0.1 with the host's
interface address, so two other loopback addresses give two nodes): an unplaceable layout refused with the nodes'
numbers, the two policies placed on different nodes, and a run that loses its second node after checkpoint 1 and
recovers once the node is back. Marked `ray` (CI runs them). Every Ray process started here is stopped by its
process id (`ray stop` would stop every Ray process of the host)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import args_for, metric_rows  # noqa: E402

from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("letters_env")]
TESTS = Path(__file__).parent
HEAD, SECOND = "127.0.0.2", "127.0.0.3"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HEAD, 0))
        return probe.getsockname()[1]


def _node_pids(address: str) -> list[int]:
    """The processes of the Ray node at `address` (its raylet and the workers it started)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "ray" in command and f"={address}" in command:
                pids.append(int(entry.name))
    return pids


class TwoNodes:
    """The cluster: `start_second()` (re)joins the second node; `kill(address)` kills a node's processes. Its
    session files live in a folder of its own (`temp`), not in /tmp/ray, where the address of the last cluster
    started (`ray_current_cluster`) would send a later `ray.init()` without an address to this dead cluster."""

    def __init__(self, home: Path, temp: Path):
        self.temp = temp
        self.port = _free_port()
        self.address = f"{HEAD}:{self.port}"
        self.env = {
            # no RAY_* setting of an earlier cluster of this process (a local one sets its auth mode in os.environ)
            **{name: value for name, value in os.environ.items() if not name.startswith("RAY_")},
            "HOME": str(home),  # a token file of another cluster in the user's ~/.ray would refuse the join
            "RAY_USAGE_STATS_ENABLED": "0",
            "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)]),  # for the letters env's actors
        }
        self._ray("start", "--head", f"--node-ip-address={HEAD}", f"--port={self.port}", "--num-cpus=3",
                  "--include-dashboard=false", f"--temp-dir={temp}")  # fmt: skip
        self.start_second()

    def start_second(self) -> None:
        self._ray(
            "start",
            f"--address={self.address}",
            f"--node-ip-address={SECOND}",
            "--num-cpus=3",
            f"--temp-dir={self.temp}",
        )

    def kill(self, address: str) -> None:
        for pid in _node_pids(address):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it exited between the listing and the kill

    def stop(self) -> None:
        for address in (SECOND, HEAD):
            self.kill(address)

    def _ray(self, *args: str) -> None:
        ray_cli = str(Path(sys.executable).parent / "ray")
        done = subprocess.run([ray_cli, *args], env=self.env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if ray.is_initialized():
        ray.shutdown()
    home = tmp_path_factory.mktemp("ray_home")
    temp = Path(tempfile.mkdtemp(prefix="ray2n", dir="/tmp"))  # short: Ray's socket paths live under it
    nodes = TwoNodes(home, temp)
    patch = pytest.MonkeyPatch()
    patch.setenv("HOME", str(home))
    ray.init(address=nodes.address, log_to_driver=False)
    yield nodes
    ray.shutdown()
    patch.undo()
    nodes.stop()
    shutil.rmtree(temp, ignore_errors=True)


def test_a_layout_the_two_nodes_cannot_hold_is_refused_with_their_numbers(cluster, tiny_model, tmp_path):
    from pettingllms.trainers.policies.ray_actors import PlacementError

    flags = ("--distributed", "ray", "--ray_address", cluster.address, "--ray_policy_resources", '{"CPU": 2}')
    with pytest.raises(PlacementError) as refused:
        ATGRPOTrainer(args_for(tiny_model, tmp_path, *flags), log=lambda _: None)
    message = str(refused.value)
    assert "ask {'CPU': 10.0}" in message and "2 alive node(s) hold {CPU: 3}, {CPU: 3}" in message
    assert "a setting that fits: --ray_policy_resources '{\"CPU\": 1}'" in message


def test_the_policies_train_on_two_nodes_and_the_run_survives_losing_the_second(
    cluster, tiny_model, tmp_path, monkeypatch
):
    """Each policy's placement group on a node of its own; the second node killed as step 2 starts (after
    checkpoint 1) and started again 5 s later: the run waits for it, resumes from checkpoint 1 and finishes."""
    from pettingllms.trainers.recovery import train_with_recovery

    original_step, seen = ATGRPOTrainer.train_step, {}

    def step(self):
        placed = self.policies.placement
        seen.setdefault("nodes", {name: set(nodes) for name, nodes in placed.nodes.items()})
        if self.step == 1 and "killed" not in seen:
            seen["killed"] = time.monotonic()
            cluster.kill(SECOND)
            threading.Timer(5.0, cluster.start_second).start()
        return original_step(self)

    monkeypatch.setattr(ATGRPOTrainer, "train_step", step)
    flags = ("--distributed", "ray", "--ray_address", cluster.address, "--ray_recover_s", "120")
    messages = []
    train_with_recovery(args_for(tiny_model, tmp_path / "run", *flags), log=messages.append)
    assert seen["nodes"]["tool"] != seen["nodes"]["plan"]  # each policy's actors on a node of their own
    assert set.union(*seen["nodes"].values()) == {HEAD, SECOND}
    lost = [m for m in messages if "lost its" in m]
    assert lost and f"on node {SECOND}" in lost[0] and "resuming" in lost[0]
    rows = metric_rows(tmp_path / "run")
    assert [row["step"] for row in rows] == [0, 1, 2]
    assert rows[-1]["recovery/count"] == 1 and rows[-1]["recovery/from_step"] == 1
    print(f"recovered and finished {time.monotonic() - seen['killed']:.1f} s after the node was killed")
