"""After a restart, debates the log shows as running become paused *interrupted*, visibly so in the
listing, and resume from where they stopped."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from tests.doubles import mid_second_turn
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.stream import LiveEvent
from webapp.models import DebateConfig, EventKind
from webapp.providers.demo import DemoProvider, OneProvider


async def test_a_restart_marks_running_debates_interrupted_and_resume_finishes_them(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    engine = await Engine.open(db, providers=OneProvider(DemoProvider("demo", speed=2000, failures={})))
    session = await engine.start(DebateConfig(topic="Should voting be compulsory?", format="oxford", rounds=1))
    first_turn = asyncio.Event()
    session.subscribe(lambda m: isinstance(m, LiveEvent) and m.event.kind is EventKind.TURN and first_turn.set())
    await first_turn.wait()
    debate_id, kept = session.id, [t.text for t in session.state.turns]
    await engine.close()  # like a crash: nothing recorded on the way out

    engine = await Engine.open(db, providers=OneProvider())
    try:
        assert await engine.recover_interrupted() == [debate_id]
        [row], _ = await engine.list_debates()
        assert (row.status, row.interrupted) == ("paused", True)
        session = await engine.session(debate_id)
        assert session.state.machine.context.interrupted
        await session.resume()
        assert await session.join() is State.COMPLETED
        assert [t.text for t in session.state.turns][: len(kept)] == kept
        [row], _ = await engine.list_debates()
        assert (row.status, row.interrupted) == ("completed", False)
    finally:
        await engine.close()


async def test_a_debate_waits_out_a_database_locked_by_another_process_and_finishes(tmp_path: Path) -> None:
    """Another process holding the write lock when a turn is committed does not fail the debate: the
    store's commit waits it out (SQLite's busy wait, then retries with backoff), and nothing is lost or
    doubled."""
    db = tmp_path / "db.sqlite3"
    held = mid_second_turn()
    engine = await Engine.open(db, providers=OneProvider(held))
    try:
        session = await engine.start(DebateConfig(topic="Should libraries lend tools?", format="oxford", rounds=1))
        await held.reached.wait()  # mid-turn: the next thing the runner does is commit that turn
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")  # e.g. the CLI in the middle of a long write
        waited = asyncio.Event()
        engine.store.on_busy = waited.set
        try:
            held.gate.set()
            await asyncio.wait_for(waited.wait(), 30)  # the turn's commit found the lock taken, backs off
            assert session.state.status is not State.ERROR
        finally:
            other.rollback()
            other.close()
        assert await session.join() is State.COMPLETED
        keys = [t.key for t in session.state.turns]
        assert len(keys) == len(set(keys)) == 4
        events = await engine.events(session.id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert not any(e.kind is EventKind.ERROR for e in events)
    finally:
        await engine.close()
