"""A page that joins a debate's room while a turn's stream has ended but its commit has not reached this
process yet (being written by the runner here, or not yet read from the log on another instance): neither
the session's live turns nor the bus's hold the turn then, and the commit that follows is sent without the
text the channel streamed. The joining page's resync must carry that turn's text, or the page shows a
finished turn with no text (the scale-out test's "B got a committed turn with empty text").

And the other way round: on another instance the commit can be read from the log before the runner's last
chunks arrive over the bus; those chunks are stale and must not restart the finished turn's stream."""

from __future__ import annotations

import pytest
from nicegui.testing import User

from tests.ui.helpers import demo_speed, engine
from tests.ui.test_live import FakeHub, created_session
from webapp.engine.machine import State
from webapp.engine.stream import LiveChunk, LiveEvent, LiveTurnAborted, LiveTurnStarted
from webapp.models import DebateEvent, EventKind, Turn, utcnow
from webapp.ui.components.presets import quick_demo_config
from webapp.ui.live import DebateChannel
from webapp.ui.live import wire as live_wire


async def test_a_page_joining_between_a_turns_stream_and_its_commit_gets_the_text(user: User) -> None:
    session = await created_session()
    channel = DebateChannel(FakeHub(), session)  # type: ignore[arg-type]
    phase = session.state.format.phases[0].id
    speaker = session.state.config.participants[0].id
    emit = session.broadcaster.emit
    emit(LiveTurnStarted(session.id, "k", speaker, phase, 1, "speak", 1))
    emit(LiveChunk(session.id, "k", speaker, "Hello "))
    emit(LiveChunk(session.id, "k", speaker, "world"))
    channel.flush()  # the pages in the room have it; the stream has ended, the commit is on its way
    assert "k" not in session.live_turns and "k" not in session.state.turn_keys and "k" not in channel.live_turns

    kid = channel.kid("k")
    joined = channel.resync_items(len(session.state.turns))  # a page built and joined now
    assert [live_wire.TEXT, kid, 0, "Hello world"] in joined
    started = next(item for item in joined if item[0] == live_wire.STARTED and item[1] == kid)
    assert started[3]["speaker"] == speaker

    turn = Turn(key="k", phase=phase, round=1, speaker=speaker, text="Hello world", started_at=utcnow(),
                finished_at=utcnow())
    emit(LiveEvent(session.id, DebateEvent(debate_id=session.id, seq=9, kind=EventKind.TURN, at=utcnow(),
                                           data={"turn": turn.model_dump(mode="json")})))
    committed = [item for item in channel._take()[1] if item[0] == live_wire.COMMITTED]
    assert committed and "text" not in committed[0][2]  # the page's text is what the resync sent
    assert not any(item[1] == kid for item in channel.resync_items(len(session.state.turns))
                   if item[0] in (live_wire.STARTED, live_wire.TEXT))  # committed: no longer in flight
    channel.close()


async def test_a_turns_chunks_arriving_after_its_commit_are_dropped(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 5000)
    eng = await engine()
    session = await eng.session(await eng.create(quick_demo_config("Is a hot dog a sandwich?")))
    channel = DebateChannel(FakeHub(), session)  # type: ignore[arg-type]
    session.ensure_running()
    assert await session.join() is State.COMPLETED
    channel._take()
    turn = next(t for t in session.state.turns if t.visible)
    kid = channel.kid(turn.key)
    # What the bus hands a channel whose session read the commit first (the debate is not run here).
    channel._on_remote(LiveChunk(session.id, turn.key, turn.speaker, "the tail of the turn"))
    channel._on_remote(LiveTurnStarted(session.id, turn.key, turn.speaker, turn.phase, turn.round, turn.act, 1))
    channel._on_remote(LiveTurnAborted(session.id, turn.key, "a stale cut"))
    assert channel._take() == ([], [])
    assert turn.key not in channel.cut_turns
    assert not any(item[1] == kid for item in channel.resync_items(0) if item[0] in (live_wire.STARTED, live_wire.TEXT))
    # A turn not committed yet still streams (the drop is only for finished turns).
    channel._on_remote(LiveTurnStarted(session.id, "later", turn.speaker, turn.phase, turn.round, turn.act, 1))
    channel._on_remote(LiveChunk(session.id, "later", turn.speaker, "fresh"))
    assert [item[0] for item in channel._take()[1] if item[0] in (live_wire.STARTED, live_wire.TEXT)] == \
        [live_wire.STARTED, live_wire.TEXT]
    channel.close()
