"""Fixtures for the NiceGUI `user` tests: a fresh database and settings per test, instant demo models."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from nicegui.testing import User

from webapp.settings import get_settings
from webapp.ui.pages.dashboard import ZONE_JS


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


@pytest.fixture
def user(user: User) -> User:
    """The plugin's simulated user, whose browser says its time zone is UTC when a page asks (the
    dashboard does once a tab connects): no page waits for an answer that never comes."""
    user.javascript_rules[re.compile(re.escape(ZONE_JS))] = lambda _: "UTC"
    return user
