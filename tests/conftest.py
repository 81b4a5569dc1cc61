"""Test-wide settings: nothing is written to the user's home folder."""

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
