"""Playing episodes with policies: the rollout engine that training, evaluation and the warm start share.

- `pettingllms.rollout.engine`: `RolloutEngine` (AT-GRPO's tree sampling, the trajectory baseline, evaluation).
- `pettingllms.rollout.grouping`: one key function per grouping.
- `pettingllms.rollout.samples`: `Sample`, `EpisodeResult`, `Rollout`.

It knows envs through PettingZoo's AEC API and policies only through `pettingllms.backends.base`'s protocols.
"""
