"""The web app on the PostgreSQL store (`ROSTRUM_DB=postgresql://…`): a demo debate started from the
dashboard runs to its verdict, and the dashboard lists it from PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from nicegui.testing import User

from tests.ui.helpers import engine, start_by_clicking
from webapp.engine.machine import State
from webapp.settings import get_settings
from webapp.store.postgres import PostgresStore


@pytest.fixture
def postgres_env(app_env: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Points the app at a fresh PostgreSQL database instead of the test's SQLite file (before `user`
    starts the app)."""
    monkeypatch.setenv("ROSTRUM_DB", pg_dsn)
    get_settings.cache_clear()
    yield pg_dsn
    get_settings.cache_clear()


async def test_a_demo_debate_started_in_the_browser_runs_on_postgresql(postgres_env: str, user: User) -> None:
    await user.open("/")
    await user.should_see("No debates yet")
    assert isinstance((await engine()).store, PostgresStore)
    session = await start_by_clicking(user, "start-demo")
    assert await session.join() is State.COMPLETED
    await user.should_see(marker="winner", retries=20)
    await user.open("/")
    await user.should_see(marker=f"debate-{session.id}")
    await user.should_see(marker="status-completed")
    await user.open("/settings")
    await user.should_see("postgresql://")  # where the data is, without a password (there is none here)
