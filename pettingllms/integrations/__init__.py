"""Bridges to other projects' APIs: `gymnasium_env` (a `gymnasium.Env` per env's single-agent workflow; light,
loaded by `import pettingllms`), `trl` (an `environment_factory` and a `rollout_func` for TRL's `GRPOTrainer`;
needs the `train` extra), `textarena_games` (TextArena's games as envs; extra `textarena`) and `openenv_server`
(every env as an OpenEnv server, `pettingllms serve`; extra `openenv`)."""
