"""The core every environment and tool shares, and nothing else: no torch, no trainer.

- `errors`: the exception types (`PettingLLMsError` and its subclasses).
- `registration`: `register`, `make`, `spec`, the registry.
- `env`: `TextAECEnv` (the base class of every environment), `StepOutcome`, roles and ensembles.
- `protocol`: `RolloutEnv`, what the rollout engine reads on an env, and the check that names what one lacks.
- `adapter`: `AECEnvAdapter`, a plain PettingZoo `AECEnv` given those members.
- `wrappers`: the wrappers `make` applies.
- `text`: observation and action text (`TextObservation`, `PrintableText`, limits).
- `parsing`: extracting answers from completions.
- `splits`: the train / val / eval partition of instances.
- `problems`: picking dataset problems from reset options.
- `seeding`: derived seeds (`derive_seed`).
"""
