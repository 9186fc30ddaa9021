"""Test-wide setup: point COLDBREW_DATA at ../shared/data when it exists; GPU tests skip without CUDA."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (ROOT / ".." / "shared" / "data").resolve()
HAS_SHARED_DATA = SHARED_DATA.is_dir()
HAS_CUDA = torch.cuda.is_available()

if HAS_SHARED_DATA and "COLDBREW_DATA" not in os.environ:
    os.environ["COLDBREW_DATA"] = str(SHARED_DATA)

torch.set_num_threads(min(2, torch.get_num_threads()))


def shared_path(name: str) -> Path:
    """The shared dataset ``name``, or skip the test with the reason."""
    root = Path(os.environ.get("COLDBREW_DATA", SHARED_DATA))
    path = root / name
    if not path.is_dir():
        pytest.skip(f"shared data {path} not present (set COLDBREW_DATA to ../shared/data)")
    return path


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def torch_text_runtime(monkeypatch):
    """Text encoders run with torch unless a test says otherwise: ONNX Runtime, where installed,
    would export the backbone into each private cache (seconds per test); its own tests ask for it
    (tests/data/test_onnx_encoder.py)."""
    monkeypatch.setenv("COLDBREW_TEXT_RUNTIME", "torch")


@pytest.fixture(autouse=True)
def fp32_text_precision(monkeypatch):
    """Text encoders run at fp32 unless a test says otherwise: the tests' references are fp32's,
    and a CPU with bf16 would otherwise encode under bf16 autocast (tests/data/text/
    test_text_cache.py asks for it)."""
    monkeypatch.setenv("COLDBREW_TEXT_PRECISION", "fp32")


@pytest.fixture
def one_thread():
    """Multi-threaded CPU scatter-adds may sum in any order; one thread makes runs bit-identical."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """COLDBREW_CACHE in this test's own folder: nothing read from, or left in, the user's cache.
    Modules that want it for every test say ``pytestmark = pytest.mark.usefixtures(...)``."""
    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory) -> str:
    """The folder of a tiny random GPT-2 and its tokenizer (lm_support.tiny_gpt2), per module."""
    from lm_support import tiny_gpt2

    return str(tiny_gpt2(tmp_path_factory.mktemp("gpt2")))


# A real PostgreSQL server (postgres_support) for the tests of workers that share a search, a
# set of units or a leaderboard through a database.
_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres_server():
    """The URL of a PostgreSQL server started for this session, or skip with the reason."""
    from postgres_support import running_postgres, why_not

    reason = why_not()
    if reason is not None:
        pytest.skip(f"no PostgreSQL for this test: {reason}")
    try:
        with running_postgres() as url:
            yield url
    except RuntimeError as error:
        pytest.skip(f"PostgreSQL did not start: {error}")


@pytest.fixture
def postgres_url(postgres_server):
    """A new empty database on the session's server, for one test."""
    from postgres_support import new_database

    return new_database(postgres_server, f"test_{next(_databases)}")
