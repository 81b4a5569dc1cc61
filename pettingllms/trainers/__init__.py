"""AT-GRPO training: `ATGRPOConfig` (TRL's `GRPOConfig` plus AT-GRPO's fields) and `ATGRPOTrainer` (the `train`
extra), with the pieces they are made of in the submodules.

    from pettingllms.trainers import ATGRPOConfig, ATGRPOTrainer

Importing this package imports neither torch nor TRL (its light submodules, such as `advantages`, serve without
them); each name below loads its module on first use.
"""

from __future__ import annotations

from pettingllms.core.lazy import lazy_exports

_EXPORTS = {
    "ATGRPOConfig": "pettingllms.trainers.settings.config",
    "ATGRPOTrainer": "pettingllms.trainers.at_grpo",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
