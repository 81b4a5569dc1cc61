"""The built-in tiny model's warm start: solver demonstrations, supervised fine-tuning, the cached build.

- `pettingllms.warmstart.build`: `ensure_tiny_model(env_id, ...)`, the cached warm-started tiny model (its
  before/after evaluation runs through the rollout engine, so this package sits above `rollout`).
- `pettingllms.warmstart.demos`: `collect_demonstrations(env_id, seeds, rng)`, solver demonstrations from an env.
- `pettingllms.warmstart.tool_programs`: the puzzles' solver programs and their imperfect variants.
- `pettingllms.warmstart.math_programs`: `write_program(problem)`, a `math-v0` problem's program and its variants.
- `pettingllms.warmstart.sft`: `supervised_fine_tune(model, tokenizer, conversations, steps=...)` with TRL's
  `SFTTrainer`.

The models it builds on (tokenizer, tiny Qwen3, home folder) are `pettingllms.models`'. This package imports
nothing itself: `demos` and the programs are light, `build` and `sft` import torch and TRL.
"""
