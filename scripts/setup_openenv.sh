#!/usr/bin/env bash
# A virtual environment of its own, .venv-openenv, for `pettingllms serve` and its tests under OpenEnv 0.10 (the
# `openenv` extra): OpenEnv 0.10 needs mcp<2 and the `verifiers` extra in .venv pins mcp==2.0.0, so the two cannot
# share one environment (docs/install.md). No torch: the server needs only the light core, and the `eval` extra for
# `--others openai:MODEL@URL`, `textarena` and `math` for every env it serves. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv-openenv
.venv-openenv/bin/python -m pip install -q --upgrade pip
.venv-openenv/bin/python -m pip install -q -e '.[openenv,eval,textarena,math]' 'pytest>=8'
echo "set up: .venv-openenv (openenv $(.venv-openenv/bin/python -c 'from importlib.metadata import version; print(version("openenv"))'))"
