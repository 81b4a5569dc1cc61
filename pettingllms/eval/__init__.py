"""Evaluation: fixed suites per environment, baselines, metrics as local `evaluate` modules, results files.

- `pettingllms.eval.suites`: the fixed evaluation episodes of each env.
- `pettingllms.eval.policy_specs`: what `--policy` names (random, oracle, tiny models, SmolLM2, runs, models).
- `pettingllms.eval.runner`: plays a suite in chunks, skipping those already cached (a rerun resumes).
- `pettingllms.eval.episode_cache`: the hash-chained cache of finished episodes.
- `pettingllms.eval.metrics`: success rate with a 95% interval, turns, parse errors, tokens, pass@k.
- `pettingllms.eval.cli`: `pettingllms-eval`.
- `pettingllms.eval.result_schema`: what a results file holds (read by `pettingllms.presentation`).

The leaderboard and the episode viewer are in `pettingllms.presentation`; the verifiers bridge in
`pettingllms.integrations.verifiers_env`.
"""
