"""Joining or starting the Ray cluster that the env pool and the trainer's Ray policies share."""

from __future__ import annotations

from pettingllms.core.errors import DependencyNotInstalled, PettingLLMsError


class NodeLostError(PettingLLMsError):
    """Ray actors of a run died or cannot be replaced (a node left the cluster, or a process crashed): what the
    trainer recovers from (`pettingllms.trainers.recovery`), or stops on with one message."""


def import_ray():
    """The `ray` module, or `DependencyNotInstalled` naming the extra that provides it."""
    try:
        import ray
    except ImportError as error:
        raise DependencyNotInstalled("this needs Ray: pip install 'pettingllms[ray]'") from error
    return ray


def connect(address: str | None) -> bool:
    """Make sure Ray is initialised in this process: join the cluster at `address`, or start a local one (when
    `address` is None), unless Ray is already initialised. Returns whether a local cluster was started here (its
    starter alone may shut it down)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    if address is not None:
        ray.init(address=address, log_to_driver=False)
        return False
    ray.init(include_dashboard=False, log_to_driver=False)
    return True
