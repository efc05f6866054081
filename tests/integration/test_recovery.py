"""After a restart, debates the log shows as running become paused *interrupted*, visibly so in the
listing, and resume from where they stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path

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
