"""Tests against a real local model (marker `local_model`): they run when `ROSTRUM_LOCAL_MODEL_URL` names
an OpenAI-compatible server's `/v1` address and are skipped otherwise, so `make test` never needs one.

`make bench-local` starts llama-cpp-python serving Gemma 3 270M (bench/local_server.py) and runs them
with `ROSTRUM_LOCAL_MODEL_URL`, `ROSTRUM_LOCAL_MODEL`, `ROSTRUM_LOCAL_MODEL_2` (a second alias of the same
model) and `ROSTRUM_LOCAL_MODEL_LOG` (the server's log file) set. By hand:

    .venv/bin/python bench/local_server.py --run ".venv/bin/python -m pytest -m local_model tests/local_model"
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class LocalModel:
    url: str
    model: str
    model2: str
    log: Path | None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Skipped at collection, before any fixture (the browser's, the app server's) is set up.
    if os.environ.get("ROSTRUM_LOCAL_MODEL_URL"):
        return
    skip = pytest.mark.skip(reason="no local model server: set ROSTRUM_LOCAL_MODEL_URL (make bench-local does)")
    for item in items:
        if item.get_closest_marker("local_model") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def local_model() -> LocalModel:
    url = os.environ.get("ROSTRUM_LOCAL_MODEL_URL", "").rstrip("/")
    if not url:
        pytest.skip("no local model server: set ROSTRUM_LOCAL_MODEL_URL")
    model = os.environ.get("ROSTRUM_LOCAL_MODEL", "local-model")
    log = os.environ.get("ROSTRUM_LOCAL_MODEL_LOG")
    return LocalModel(url=url, model=model, model2=os.environ.get("ROSTRUM_LOCAL_MODEL_2", model),
                      log=Path(log) if log else None)
