"""AT-GRPO training: the rollout engine and advantages (no torch), and the TRL-derived trainer (`train` extra)."""
