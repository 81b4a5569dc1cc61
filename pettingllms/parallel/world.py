"""The ranks of a run started by `torchrun` or `accelerate launch`, and the few things they exchange.

AT-GRPO's groups belong to one instance (its K candidates per turn and agent), so data parallelism shards
instances, not groups: rank r plays every `size`-th training instance and evaluation episode (`shard`), computes its
groups' advantages alone, and only batch-level figures cross ranks: the sample and token totals that weigh each
micro-batch of an update, the number of micro-batches (every rank runs as many, so that the sharded model's
collectives match), the metrics, and the random-generator states a checkpoint holds. Without a launcher the world
is one rank and nothing is exchanged.

The process group is the one transformers' device set-up starts for the launcher (accelerate's `PartialState`:
NCCL on GPUs, gloo on the CPU); `current_world()` only reads it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

from pettingllms.core.seeding import derive_seed

Item = TypeVar("Item")


@dataclasses.dataclass(frozen=True)
class World:
    """Rank `rank` of `size` ranks (see the module docstring)."""

    rank: int = 0
    size: int = 1

    @property
    def is_main(self) -> bool:
        """Whether this rank writes the run's files (rank 0)."""
        return self.rank == 0

    def seed(self, root: int, *path: int | str) -> int:
        """The seed of the stream `path` on this rank: one process's `derive_seed(root, *path)` without a
        launcher, a distinct one per rank under it."""
        if self.size == 1:
            return derive_seed(root, *path)
        return derive_seed(root, *path, "rank", self.rank)

    def shard(self, items: Sequence[Item]) -> list[Item]:
        """This rank's items: every `size`-th one from position `rank`."""
        return list(items[self.rank :: self.size])

    def sum(self, values: Sequence[float]) -> list[float]:
        """The element-wise sum of `values` over the ranks."""
        if self.size == 1:
            return [float(value) for value in values]
        return [float(sum(column)) for column in zip(*self.gather(list(values)), strict=True)]

    def max(self, value: int) -> int:
        """The largest `value` of the ranks."""
        return value if self.size == 1 else int(max(self.gather(value)))

    def gather(self, value: Any) -> list[Any]:
        """`value` of every rank, in rank order, on every rank (picklable objects)."""
        if self.size == 1:
            return [value]
        import torch.distributed as dist

        gathered: list[Any] = [None] * self.size
        dist.all_gather_object(gathered, value)
        return gathered

    def barrier(self) -> None:
        if self.size > 1:
            import torch.distributed as dist

            dist.barrier()


SINGLE_PROCESS = World()
"""The world of a run without a launcher."""


def current_world() -> World:
    """The world of this process: the launcher's process group if one is running, else a single rank."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return World(dist.get_rank(), dist.get_world_size())
    return SINGLE_PROCESS


def leave_process_group() -> None:
    """End this rank's part in the launcher's process group, if one is running: wait for every rank, then
    destroy the group. A rank that exits with the group alive tears down connections another rank is still
    using (gloo aborts that rank with "terminate called without an active exception"); call this once, after
    the last collective, on every rank."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
