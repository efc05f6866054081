"""The web app's runtime with `ROSTRUM_WORKERS=external`: its engine hands debates to workers, and at
start-up it leaves alone a debate the log shows running (a worker owns it; the default mode would pause
it as interrupted by a restart)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from nicegui import core

from webapp.engine.engine import Engine
from webapp.engine.machine import ACTIVE_STATES, State
from webapp.engine.stream import LiveEvent
from webapp.models import DebateConfig
from webapp.settings import Settings, get_settings
from webapp.ui.runtime import Runtime
from webapp.workers import WorkerClient


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "db.sqlite3"
    monkeypatch.setenv("ROSTRUM_DB", str(db))
    get_settings.cache_clear()
    yield db
    get_settings.cache_clear()


async def _running_in_the_log(db: Path) -> str:
    """A debate whose process stopped mid-debate (as if a worker runs it elsewhere)."""
    engine = await Engine.open(settings=Settings(db=db, demo_speed=5))
    debating = asyncio.Event()
    engine.subscribe_all(lambda m: isinstance(m, LiveEvent) and m.event.data.get("to") in ("preparation", "debating")
                         and debating.set())
    session = await engine.start(DebateConfig(topic="Tea or coffee", format="classic"))
    async with asyncio.timeout(30):
        await debating.wait()
    await engine.close()  # stops its runner without recording anything
    return session.id


@pytest.mark.parametrize("mode", ["external", "local"])
async def test_external_workers_mode_leaves_running_debates_to_the_workers(
        settings_env: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    debate_id = await _running_in_the_log(settings_env)
    monkeypatch.setenv("ROSTRUM_WORKERS", mode)
    get_settings.cache_clear()
    monkeypatch.setattr(core, "loop", asyncio.get_running_loop())  # the runtime's tasks are NiceGUI background tasks
    runtime = Runtime()
    await runtime.start()
    try:
        engine = await runtime.engine()
        row = await engine.store.get_row(debate_id)
        assert row is not None
        if mode == "external":
            assert isinstance(engine.workers, WorkerClient)
            assert State(row.status) in ACTIVE_STATES  # not paused: a worker continues it
        else:
            assert engine.workers is None
            assert row.status == State.PAUSED.value  # as before: interrupted by the restart
    finally:
        await runtime.stop()
