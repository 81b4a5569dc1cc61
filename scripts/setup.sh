#!/usr/bin/env bash
# Set up a development checkout: Debian's bubblewrap (the code sandbox) if missing, and a virtual environment in
# .venv with the package installed editable, with its training, evaluation, tracker and test dependencies (CPU torch
# 2.13.0, transformers, TRL, evaluate, pytest). Safe to run again.
#   bash scripts/setup.sh                  # the above
#   bash scripts/setup.sh --with-browser   # also Debian's chromium (~120 packages) for the leaderboard page's
#                                          # browser test (it is skipped without a browser; CI asks for it)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=()
command -v bwrap >/dev/null 2>&1 || packages+=(bubblewrap)
if [ "${1:-}" = "--with-browser" ]; then
  command -v chromium >/dev/null 2>&1 || packages+=(chromium)
fi
if [ ${#packages[@]} -gt 0 ]; then
  echo "installing Debian packages: ${packages[*]} (with their dependencies)"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get install -y -q "${packages[@]}" >/dev/null 2>&1 \
    || { $sudo_cmd apt-get update -q >/dev/null && $sudo_cmd apt-get install -y -q "${packages[@]}" >/dev/null; }
fi

echo "creating .venv: pettingllms (editable) with the train, eval, trackers (tensorboard, wandb), textarena, verifiers, comlrl and dev extras (the openenv extra has its own environment: scripts/setup_openenv.sh), CPU torch 2.13.0"
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e '.[dev,train,eval,trackers,textarena,verifiers,comlrl]'
echo "set up: .venv ($(.venv/bin/python --version)), $(bwrap --version)"
