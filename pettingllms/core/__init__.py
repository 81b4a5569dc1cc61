"""The core every environment and tool shares, and nothing else: no torch, no trainer.

- `errors`: the exception types (`PettingLLMsError` and its subclasses).
- `registration`: `register`, `make`, `spec`, the registry.
- `env`: `TextAECEnv` (the base class of every environment), `StepOutcome`, roles and ensembles.
- `wrappers`: the wrappers `make` applies.
- `text`: observation and action text (`TextObservation`, `PrintableText`, limits).
- `parsing`: extracting answers from completions.
- `splits`: the train / val / eval partition of instances.
- `problems`: picking dataset problems from reset options.
- `seeding`: derived seeds (`derive_seed`).
"""
