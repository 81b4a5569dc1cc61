"""One policy's update, from its samples to `optimizer.step`: `updater.PolicyUpdater` (the entry point: micro-batches,
their weights, the step), `grpo_loss` (the loss), `completion_logps` (per-token log-probabilities),
`micro_batches` (how a batch is cut), `trl_adapter` (TRL's private internals, in one place),
`activation_checkpointing`, and `sharding` (the update's model split over the ranks of a launched run).

This room knows nothing of where policies live or how they generate (`pettingllms.trainers.policies`)."""
