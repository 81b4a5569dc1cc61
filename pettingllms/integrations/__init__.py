"""Bridges to other projects' APIs: `gymnasium_env` (a `gymnasium.Env` per env's single-agent workflow; light,
loaded by `import pettingllms`) and `trl` (an `environment_factory` and a `rollout_func` for TRL's `GRPOTrainer`;
needs the `train` extra)."""
