"""Pytest fixtures around `tests.fakellm` (registered from `tests/conftest.py` via `pytest_plugins`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakellm import FakeLLMServer
from webapp.providers import structured


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A fresh fake LLM server on a free local port, stopped after the test. The structured-output modes
    remembered per endpoint are forgotten afterwards: a later server may get this one's port."""
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()
        structured.forget_refusals()
