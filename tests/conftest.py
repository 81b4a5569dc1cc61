"""Test-wide settings: nothing is written to the user's home folder."""

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_caches(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setenv("HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf_datasets")))
    yield
    patch.undo()
