"""The update phase: policies of different lanes update side by side, each synced right after its own update;
one lane (one device) is the serial order; under a launcher the ranks keep one order and sync after every update."""

import threading
import time

import pytest

from pettingllms.parallel.world import World
from pettingllms.trainers.policies.update_phase import lanes, update_and_sync


class FakePolicy:
    """Records when its update and sync start and end; `meet` makes its update wait for other lanes' updates."""

    def __init__(self, name, lane, log, meet=None, fail=False):
        self.name, self.lane, self.log, self.meet, self.fail = name, lane, log, meet, fail

    def update(self, samples):
        self.log.append(("update", self.name, "start"))
        if self.meet is not None:
            self.meet.wait(timeout=10)  # raises BrokenBarrierError unless every lane's update is running now
        if self.fail:
            raise RuntimeError(f"{self.name} failed")
        time.sleep(0.01)
        self.log.append(("update", self.name, "end"))
        return {"samples": float(len(samples))}

    def sync(self):
        self.log.append(("sync", self.name, "start"))


def test_policies_on_different_devices_update_at_the_same_time_and_each_syncs_after_its_own_update():
    log, meet = [], threading.Barrier(2)
    handles = {
        "tool": FakePolicy("tool", "device:cuda:0", log, meet),
        "plan": FakePolicy("plan", "device:cuda:1", log, meet),
    }
    phase = update_and_sync(handles, {"tool": [1, 2], "plan": [3]}, {"tool": 2, "plan": 1})
    assert phase.metrics == {"tool": {"samples": 2.0}, "plan": {"samples": 1.0}}  # in handles' order
    for name in handles:
        assert log.index(("update", name, "end")) < log.index(("sync", name, "start"))
    assert set(phase.sync_seconds) == {"tool", "plan"} and phase.wall_seconds >= max(
        phase.update_seconds.values()
    )


def test_one_lane_is_the_serial_order_and_an_untrained_policy_is_not_synced():
    log = []
    handles = {name: FakePolicy(name, "device:cpu", log) for name in ("tool", "plan", "idle")}
    phase = update_and_sync(handles, {"tool": [1], "plan": [2]}, lambda: {"tool": 1, "plan": 1, "idle": 0})
    assert [entry[:2] for entry in log if entry[2] != "end"] == [
        ("update", "tool"), ("sync", "tool"), ("update", "plan"), ("sync", "plan"), ("update", "idle")
    ]  # fmt: skip
    assert phase.metrics["idle"] == {"samples": 0.0} and "idle" not in phase.sync_seconds
    assert lanes(handles) == {"device:cpu": ["tool", "plan", "idle"]}


def test_under_a_launcher_the_ranks_update_in_one_order_then_sync():
    log, asked = [], []
    handles = {
        "tool": FakePolicy("tool", "device:cuda:0", log),
        "plan": FakePolicy("plan", "device:cuda:1", log),
    }

    def trained():  # a collective: it must come after every update of this rank
        asked.append(len(log))
        return {"tool": 1, "plan": 0}

    update_and_sync(handles, {"tool": [1]}, trained, World(rank=0, size=2))
    assert [entry[:2] for entry in log if entry[2] != "end"] == [
        ("update", "tool"),
        ("update", "plan"),
        ("sync", "tool"),
    ]
    assert asked == [4]  # after both updates' start and end


def test_a_failed_update_is_raised_after_every_lane_ended():
    log = []
    handles = {
        "tool": FakePolicy("tool", "device:cuda:0", log, fail=True),
        "plan": FakePolicy("plan", "device:cuda:1", log),
    }
    with pytest.raises(RuntimeError, match="tool failed"):
        update_and_sync(handles, {}, {"tool": 1, "plan": 1})
    assert ("sync", "plan", "start") in log  # the other lane finished its update and sync


def test_each_kind_of_policy_names_its_lane():
    from types import SimpleNamespace

    pytest.importorskip("torch")
    pytest.importorskip("trl")
    from pettingllms.trainers.policies.handles import AdapterPolicy, LocalPolicy
    from pettingllms.trainers.policies.ray_actors import RayPolicy

    updater = SimpleNamespace(args=SimpleNamespace(device="cuda:1"))
    assert LocalPolicy("tool", updater, None).lane == "device:cuda:1"
    assert AdapterPolicy("tool", updater, None).lane == AdapterPolicy("plan", updater, None).lane
    assert RayPolicy("tool", None, None, "node").lane != RayPolicy("plan", None, None, "node").lane
