"""Bridges to other projects' APIs: `gymnasium_env` (a `gymnasium.Env` per env's single-agent workflow)."""
