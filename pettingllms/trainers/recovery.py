"""A Ray run that survives a lost policy (`distributed="ray"`, `ray_recover_s` > 0).

When a policy's actor dies (its node left the cluster, or the actor crashed), or env jobs find no env worker
for the pool's `job_timeout`, the trainer stops with a `NodeLostError` (a policy's names the policy, its actor and
its node) and the step and newest intact checkpoint, after releasing its actors, placement groups and folder
lock. `train_with_recovery` then waits up to `ray_recover_s`
seconds for the cluster's alive nodes to hold the run again (the placement check of
`pettingllms.trainers.policies.ray_actors.placement_problem`), and resumes from the newest intact checkpoint within
the same process: the resume path of `--resume true`, so the run goes on exactly as a run resumed from that
checkpoint would. The metrics row of the first step after a recovery carries `recovery/count` and
`recovery/from_step`. A cluster that does not come back in time ends the run with the `NodeLostError`, which then
also says how long it waited.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from pettingllms.pools.ray_cluster import NodeLostError, connect
from pettingllms.pools.ray_env_pool import ray_env_workers
from pettingllms.trainers.at_grpo import ATGRPOTrainer
from pettingllms.trainers.policies.ray_actors import placement_problem
from pettingllms.trainers.settings.config import ATGRPOConfig

POLL_S = 2.0
"""How often the cluster is looked at while a recovery waits."""


def train_with_recovery(args: ATGRPOConfig, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """`ATGRPOTrainer(args).train()`, resumed within the run after each lost policy (module docstring)."""
    recoveries, policies, lost_at = 0, None, None
    while True:
        trained = False  # whether the loss came from a run, not from the start of a resumed one
        try:
            trainer = ATGRPOTrainer(args, log=log)
            policies, lost_at, trained = len(set(trainer.policies.agent_policy.values())), None, True
            if recoveries:
                trainer.recovery = {"recovery/count": recoveries, "recovery/from_step": trainer.step}
            return trainer.train()
        except NodeLostError as lost:
            if args.distributed != "ray" or not args.ray_recover_s or policies is None:
                raise  # no recovery asked, or the run never started (its own placement failed)
            # a resumed run whose actors die as they start is the same recovery: its wait goes on
            lost_at = lost_at or time.monotonic()
            left = args.ray_recover_s - (time.monotonic() - lost_at)
            waited = wait_for_cluster(args, policies, left) if left > 0 else None
            if waited is None:
                raise NodeLostError(
                    f"{lost}; the cluster did not hold the run again within ray_recover_s={args.ray_recover_s:g} s"
                ) from None
            log(f"{lost}; the cluster holds the run again after {waited:.1f} s: resuming from the checkpoint")
            recoveries += trained
            args = copy.copy(args)
            args.resume = True


def wait_for_cluster(args: ATGRPOConfig, policies: int, timeout: float) -> float | None:
    """Seconds until the cluster's alive nodes hold `policies` policies and the run's env workers
    (`placement_problem` finds nothing), or None after `timeout` seconds."""
    import ray

    connect(args.ray_address)  # a local cluster this run started was shut down with it: start a new one
    resources, workers = dict(args.ray_policy_resources), ray_env_workers(args.env_workers)
    start = time.monotonic()
    while True:
        nodes = [node["Resources"] for node in ray.nodes() if node["Alive"]]
        if placement_problem(policies, resources, workers, nodes) is None:
            return time.monotonic() - start
        if time.monotonic() - start >= timeout:
            return None
        time.sleep(POLL_S)
