"""Sandbox workers shared fairly across owners (pettingllms.sandbox.fair_slots): the order requests are served in,
and one owner's looping programs against another's quick one in the real sandbox."""

from __future__ import annotations

import threading
import time

import pytest

from pettingllms.sandbox import bwrap_available
from pettingllms.sandbox.fair_slots import FairSlots


def _wait_until(condition, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def _queue(slots: FairSlots, owner: str, served: list[str], hold: float) -> threading.Thread:
    """A thread that acquires a slot as `owner`, records it, holds it `hold` seconds and gives it back."""

    def work() -> None:
        slot, _ = slots.acquire(owner)
        served.append(owner)
        time.sleep(hold)
        slots.release(slot)

    thread = threading.Thread(target=work)
    thread.start()
    return thread


def _queue_in_order(
    slots: FairSlots, plan: list[tuple[str, float]], served: list[str]
) -> list[threading.Thread]:
    """A `_queue` thread per (owner, hold) of `plan`, each started once the one before it waits."""
    threads = []
    for owner, hold in plan:
        threads.append(_queue(slots, owner, served, hold))
        queued = len(threads)
        _wait_until(lambda: slots.waiting() == queued)  # noqa: B023 - waited on at once
    return threads


def test_the_owner_that_has_held_workers_least_goes_first_and_an_owner_in_order():
    slots = FairSlots(["worker"])
    served: list[str] = []
    first, _ = slots.acquire("slow")  # a slow owner holds the only worker ...
    time.sleep(0.05)
    slots.release(first)  # ... and has been charged 0.05 s
    blocker, _ = slots.acquire("slow")
    plan = [("slow", 0.02)] * 3 + [("quick", 0.02)]  # the slow owner queued first, three times
    threads = _queue_in_order(slots, plan, served)
    slots.release(blocker)
    for thread in threads:
        thread.join()
    # the quick owner, with no service yet, goes ahead of the slow owner's whole queue
    assert served == ["quick", "slow", "slow", "slow"]


def test_service_counts_seconds_not_turns_and_a_newcomer_starts_from_the_floor():
    slots = FairSlots(["worker"])
    served: list[str] = []
    blocker, _ = slots.acquire("x")
    threads = _queue_in_order(slots, [("a", 0.15), ("a", 0.15), ("b", 0.01), ("b", 0.01)], served)
    slots.release(blocker)
    for thread in threads:
        thread.join()
    # a holds its worker 0.15 s, b 0.01 s: b's second program still has less service than a's first
    assert served == ["a", "b", "b", "a"]
    held, _ = slots.acquire(
        "a"
    )  # a is active again, with 0.3 s of service; a newcomer starts there, not at 0
    _queue(slots, "late", served, 0.0)
    _wait_until(lambda: slots.waiting() == 1)
    assert slots._service["late"] >= 0.3
    slots.release(held)


def test_closing_refuses_waiting_requests_and_waits_for_the_running_ones():
    slots = FairSlots(["worker"])
    held, _ = slots.acquire("a")
    refused: list[Exception] = []

    def wait() -> None:
        try:
            slots.acquire("b")
        except RuntimeError as error:
            refused.append(error)

    waiter = threading.Thread(target=wait)
    waiter.start()
    _wait_until(lambda: slots.waiting() == 1)
    closer = threading.Thread(target=slots.close)
    closer.start()
    waiter.join(timeout=5)
    assert refused and "closed" in str(refused[0])
    assert closer.is_alive()  # the running request still holds its worker
    slots.release(held)
    closer.join(timeout=5)
    assert not closer.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        slots.acquire("c")


@pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")
def test_in_the_sandbox_a_quick_program_waits_at_most_one_time_limit_behind_four_owners_loops():
    """The served code env's case (issue 61): four sessions submit loops, one worker; a fifth submits a quick
    program once every looping session has had a turn. First come, first served it waited for every loop queued
    ahead of it; fairly, for the one running."""
    from concurrent.futures import ThreadPoolExecutor

    from pettingllms.sandbox import Program, Sandbox

    limit = 0.5
    loop = Program("while True: pass", "", limit, 256)
    with Sandbox(workers=1) as sandbox, ThreadPoolExecutor(max_workers=4) as pool:

        def session(name: str) -> list[str]:
            return [sandbox.run(loop.code, timeout=limit, memory_mb=256, owner=name).status for _ in range(3)]

        loopers = [pool.submit(session, f"loops {i}") for i in range(4)]
        _wait_until(lambda: len(sandbox._free._service) == 4 and min(sandbox._free._service.values()) > 0, 10)
        started = time.perf_counter()
        [quick] = sandbox.run_batch([Program("print(6 * 7)", "", limit, 256)], owner="quick")
        waited = time.perf_counter() - started
        assert quick.stdout.strip() == "42" and all(f.result() == ["timeout"] * 3 for f in loopers)
    # first come, first served it waited 2.03 s (the four loops); the bounds leave room for a loaded machine
    assert quick.queued_s <= limit + 0.75 and waited <= limit + 1.25, (quick.queued_s, waited)
