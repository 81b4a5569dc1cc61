"""A run's settings: `config.ATGRPOConfig` (TRL's `GRPOConfig` plus AT-GRPO's fields, checked on construction),
`inherited_fields` (each field TRL passes down, honoured or refused), `arguments` (YAML and flags into one config)."""
