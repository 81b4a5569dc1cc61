#!/usr/bin/env bash
# Set up a development checkout: Debian's bubblewrap (the code sandbox) and chromium (a leaderboard test), and a
# virtual environment in .venv with the package installed editable, with its test dependencies. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: bubblewrap (the code sandbox) and chromium (the leaderboard page's browser test)
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
    || { $sudo_cmd apt-get update -q >/dev/null && $sudo_cmd apt-get install -y -q "${missing[@]}" >/dev/null; }
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e '.[dev,train,eval]'
echo "set up: .venv ($(.venv/bin/python --version)), $(bwrap --version)"
