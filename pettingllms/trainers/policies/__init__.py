"""The policies of a run: `handles` (what the trainer holds of each policy, wherever it lives), `build` (every
layout's policies), `generation` (the one factory of generation backends, for the local, LoRA and Ray paths),
`merged_adapters` (LoRA adapters sampled from merged copies of the base),
`ray_actors` (policies on Ray), `update_phase` (every policy's update and sync, and the rollout that may overlap
them), `memory_plan` and `model_shapes` (what fits on the GPUs), `model_source` (where a policy's weights start)."""
