"""Where each policy runs: one device per policy in one process, or one device per rank under a launcher.

transformers' `TrainingArguments` gives every trainer of a process the same device (`cuda:0`) and, with several
GPUs visible and no launcher, sets `n_gpu` to their number, which TRL's `GRPOTrainer` refuses (it would wrap the
model in `nn.DataParallel`). An AT-GRPO run holds one update worker per policy, so the device is the policy's:

- in one process (`python -m pettingllms...`, no launcher), policies are spread over the visible GPUs in order
  (`policy_devices` maps policy names to devices to choose otherwise), each policy's update and generation on its
  device; on a machine without a GPU, or with `use_cpu`, every policy is on the CPU;
- under `torchrun` / `accelerate launch` (`WORLD_SIZE` > 1), every policy of a rank is on that rank's device
  (`cuda:LOCAL_RANK`, or the CPU) and is sharded over the ranks (`pettingllms.parallel.world`).

`pin_device(args, device)` is the copy of a config that makes one `GRPOTrainer` build on `device` with `n_gpu`
1 (0 on the CPU), whatever the process sees.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence

from pettingllms.core.errors import ConfigError


def visible_gpus() -> int:
    """The number of CUDA devices this process sees (0 without CUDA)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def launched_world_size() -> int:
    """The number of ranks a launcher (torchrun, accelerate launch) started (1 without a launcher)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def place_policies(
    names: Sequence[str], policy_devices: Mapping[str, str], *, use_cpu: bool
) -> dict[str, str]:
    """Policy name -> device (see the module docstring); a `policy_devices` entry that names an unknown policy,
    a device this process does not see, or any device under a launcher is a `ConfigError`."""
    unknown = sorted(set(policy_devices) - set(names))
    if unknown:
        raise ConfigError(
            f"policy_devices names {unknown}, which are not policies of this run: {list(names)}"
        )
    gpus = 0 if use_cpu else visible_gpus()
    if launched_world_size() > 1:
        if policy_devices:
            raise ConfigError(
                "policy_devices cannot be set under torchrun / accelerate launch: every rank's policies run on "
                "the rank's own device (LOCAL_RANK) and are sharded over the ranks"
            )
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if gpus else "cpu"
        return dict.fromkeys(names, device)
    allowed = ["cpu", *(f"cuda:{index}" for index in range(gpus))]
    for name, device in policy_devices.items():
        if device not in allowed:
            raise ConfigError(f"policy_devices[{name!r}]={device!r}: this process sees {allowed}")
    spread = {name: allowed[1 + index % gpus] if gpus else "cpu" for index, name in enumerate(names)}
    return {**spread, **policy_devices}


def pin_device(args, device: str):
    """A copy of `args` (a `TrainingArguments`) on which `device` is the device and `n_gpu` is 1 (0 on the CPU),
    so that a `GRPOTrainer` built from it places its model on `device` and never asks for `nn.DataParallel`."""
    import torch

    _ = args.device  # transformers' device set-up (accelerate's state) runs once, on the original
    pinned = copy.copy(args)
    pinned.__dict__["_setup_devices"] = torch.device(device)  # the cached property that `args.device` reads
    pinned._n_gpu = 0 if torch.device(device).type == "cpu" else 1
    return pinned
