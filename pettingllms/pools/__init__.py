"""Where candidate envs are stepped outside the trainer's process: `EnvPool` (local worker processes) and
`RayEnvPool` (Ray actors on a cluster, `pip install 'pettingllms[ray]'`), with one contract: `step_all(jobs)`
returns the stepped copies in job order, the same envs as stepping them in-process."""
