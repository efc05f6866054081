"""Fixtures for the NiceGUI `user` tests: a fresh database and settings per test, instant demo models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from webapp.settings import get_settings


@pytest.fixture(autouse=True)
def app_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Runs before the `user` fixture starts the app: its engine opens this test's database."""
    db = tmp_path / "rostrum.sqlite3"
    monkeypatch.setenv("ROSTRUM_DB", str(db))
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "ROSTRUM_DEMO_FAIL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env from the working tree
    get_settings.cache_clear()
    yield db
    get_settings.cache_clear()
