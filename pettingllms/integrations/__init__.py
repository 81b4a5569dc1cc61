"""Bridges to other projects' APIs: `gymnasium_env` (a `gymnasium.Env` per env's single-agent workflow; light,
loaded by `import pettingllms`), `trl` (an `environment_factory` and a `rollout_func` for TRL's `GRPOTrainer`;
needs the `train` extra), `textarena_games` (TextArena's games as envs; extra `textarena`), `openenv_server`
(every env as an OpenEnv server, `pettingllms serve`; extra `openenv`), `verifiers_env` (every env, one agent or the
whole team, as a verifiers environment; extra `verifiers`) and `comlrl` (an env's prompts, team reward and turn
transitions for CoMLRL's `MAGRPOTrainer`; extra `comlrl`)."""
