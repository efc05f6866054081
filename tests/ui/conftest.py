"""Fixtures for the NiceGUI `user` tests: a fresh database and settings per test, instant demo models."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from nicegui.testing import User

from webapp.settings import get_settings
from webapp.ui.pages.dashboard_rows import ZONE_JS

# NiceGUI's `should_see`/`should_not_see` give a condition 3 tries 0.1 s apart: on a loaded 2-core machine a
# page that writes the store first (saving a profile, signing in) takes longer than that. They still return
# the moment the condition holds; only the deadline for a real failure is longer (5 s).
PATIENT_RETRIES = 50


def _patient(check: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(check)
    async def patient(self: User, *args: Any, retries: int = PATIENT_RETRIES, **kwargs: Any) -> None:
        await check(self, *args, retries=max(retries, PATIENT_RETRIES), **kwargs)
    return patient


@pytest.fixture(autouse=True, scope="session")
def patient_user() -> Iterator[None]:
    saved = User.should_see, User.should_not_see
    User.should_see, User.should_not_see = _patient(saved[0]), _patient(saved[1])  # type: ignore[method-assign]
    yield
    User.should_see, User.should_not_see = saved  # type: ignore[method-assign]


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
