"""The live channel: one throttled flush per debate, deltas with offsets, cleanup."""

from __future__ import annotations

import logging

import pytest
from nicegui import ui
from nicegui.testing import User

from tests.ui.helpers import engine
from webapp.engine.runner import DebateSession
from webapp.engine.stream import (
    Broadcaster,
    LiveChunk,
    LiveEvent,
    LiveStatus,
    LiveTurn,
    LiveTurnAborted,
    LiveTurnStarted,
)
from webapp.models import DebateEvent, EventKind, Turn, utcnow
from webapp.ui.components.presets import quick_demo_config
from webapp.ui.live import Aborted, ChunkDelta, DebateChannel, LiveHub


async def created_session() -> DebateSession:
    """A real session of a demo debate that was created but not started: the channel reads its state."""
    eng = await engine()
    return await eng.session(await eng.create(quick_demo_config("Is a hot dog a sandwich?")))


class FakeHub:
    def __init__(self) -> None:
        self.channels: dict[str, DebateChannel] = {}


def _turn_event(seq: int, key: str) -> LiveEvent:
    turn = Turn(key=key, phase="opening", round=1, speaker="pro", text="done", started_at=utcnow(),
                finished_at=utcnow())
    return LiveEvent("d1", DebateEvent(debate_id="d1", seq=seq, kind=EventKind.TURN, at=utcnow(),
                                       data={"turn": turn.model_dump(mode="json")}))


def _retry_note(seq: int, key: str) -> LiveEvent:
    """The NOTE a provider call's automatic retry commits: its `turn` is the turn key (a string)."""
    return LiveEvent("d1", DebateEvent(debate_id="d1", seq=seq, kind=EventKind.NOTE, at=utcnow(), data={
        "type": "retry", "turn": key, "attempt": 1, "wait_s": 0.5,
        "error": {"kind": "retryable", "provider": "demo", "message": "simulated rate limit", "reason": "rate_limit"}}))


async def test_a_retry_note_reaches_the_page_and_does_not_break_the_listener(
        user: User, caplog: pytest.LogCaptureFixture) -> None:
    # A retry note's `turn` is a string: the listener took it for a turn dict and crashed
    # ("'str' object has no attribute 'get'"), so the note never reached any page.
    session = await created_session()
    channel = DebateChannel(FakeHub(), session)  # type: ignore[arg-type]
    emit = session.broadcaster.emit
    with caplog.at_level(logging.ERROR):
        emit(LiveTurnStarted("d1", "k", "pro", "opening", 1, "speak", 1))
        emit(LiveChunk("d1", "k", "pro", "Hel"))
        emit(LiveTurnAborted("d1", "k", "simulated rate limit"))
        note = _retry_note(5, "k")
        emit(note)
        emit(LiveTurnStarted("d1", "k", "pro", "opening", 1, "speak", 2))
        emit(LiveChunk("d1", "k", "pro", "Hello"))
        emit(_turn_event(6, "k"))
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "the listener failed"
    batch = channel.flush()
    assert note in batch
    assert batch[-1] == _turn_event(6, "k") or isinstance(batch[-1], LiveEvent)
    channel.close()


async def test_a_status_change_is_passed_on_to_the_pages(user: User) -> None:
    session = await created_session()
    channel = DebateChannel(FakeHub(), session)  # type: ignore[arg-type]
    status = LiveStatus("d1", "storage_unavailable", "database is locked")
    session.broadcaster.emit(status)
    assert channel.flush() == [status]
    channel.close()


async def test_chunks_are_coalesced_per_attempt_with_offsets(user: User) -> None:
    session = await created_session()
    channel = DebateChannel(FakeHub(), session)  # type: ignore[arg-type]
    emit = session.broadcaster.emit
    emit(LiveTurnStarted("d1", "k", "pro", "opening", 1, "speak", 1))
    emit(LiveChunk("d1", "k", "pro", "Hello "))
    emit(LiveChunk("d1", "k", "pro", "world"))
    emit(LiveTurnAborted("d1", "k", "cut stream"))
    emit(LiveTurnStarted("d1", "k", "pro", "opening", 1, "speak", 2))
    emit(LiveChunk("d1", "k", "pro", "Hi "))
    emit(LiveChunk("d1", "k", "pro", "again"))
    emit(_turn_event(7, "k"))
    batch = channel.flush()
    assert batch[1] == ChunkDelta("k", "pro", 1, 0, "Hello world")
    assert batch[2] == Aborted("k", 1, "cut stream")
    assert batch[4] == ChunkDelta("k", "pro", 2, 0, "Hi again")
    assert isinstance(batch[5], LiveEvent)
    assert len(batch) == 6
    emit(LiveTurnStarted("d1", "k2", "con", "opening", 1, "speak", 1))
    emit(LiveChunk("d1", "k2", "con", "abc"))
    channel.flush()
    emit(LiveChunk("d1", "k2", "con", "def"))
    assert channel.flush() == [ChunkDelta("k2", "con", 1, 3, "def")]  # the offset continues across flushes
    channel.close()


async def test_a_flush_becomes_compact_wire_items_once_for_every_page(user: User) -> None:
    session = await created_session()
    channel = DebateChannel(FakeHub(), session)  # type: ignore[arg-type]
    emit = session.broadcaster.emit
    emit(LiveTurnStarted("d1", "k", "pro", "opening", 1, "speak", 1))
    emit(LiveChunk("d1", "k", "pro", "Hello "))
    emit(LiveChunk("d1", "k", "pro", "world"))
    emit(LiveTurnAborted("d1", "k", "cancelled"))
    emit(LiveTurnStarted("d1", "k", "pro", "opening", 1, "speak", 2))
    emit(LiveChunk("d1", "k", "pro", "done"))
    emit(_turn_event(7, "k"))
    _batch, wire = channel._take()
    kid = channel.kid("k")
    assert wire[0] == [1, kid, 1, {"speaker": "pro", "group": "Opening statements"}]  # "speak" is the default
    assert wire[1] == [0, kid, 0, "Hello world"]
    assert wire[2] == [2, kid, "cancelled"]  # the browser keeps the cut text, greyed
    assert wire[3][:3] == [1, kid, 2] and wire[4] == [0, kid, 0, "done"]
    committed = wire[5]
    assert committed[:2] == [3, kid] and "text" not in committed[2], "streamed text is not sent again"
    assert "tok" in committed[2]["meta"]
    assert wire[6][0] == 4 and wire[6][1]["state"] == "created"  # the status summary, once
    emit(LiveChunk("d1", "k", "pro", "late"))
    assert channel._take()[1] == [[0, kid, 0, "late"]], "an unchanged status is not repeated"
    emit(LiveTurnStarted("d1", "k3", "con", "opening", 1, "speak", 1))
    emit(LiveChunk("d1", "k3", "con", "partial"))
    emit(_turn_event(8, "k3"))  # committed text differs from what streamed: the browser gets it
    wire = channel._take()[1]
    assert wire[-1][0] == 3 and wire[-1][2]["text"] == "done"
    channel.close()


async def test_a_channel_joining_mid_turn_continues_the_offsets(user: User) -> None:
    session = await created_session()
    session.live["k"] = LiveTurn("k", "pro", "opening", 1, "speak", 3, parts=["already here"])
    channel = DebateChannel(FakeHub(), session)  # type: ignore[arg-type]
    session.broadcaster.emit(LiveChunk("d1", "k", "pro", "!"))
    assert channel.flush() == [ChunkDelta("k", "pro", 3, len("already here"), "!")]
    channel.close()


async def test_one_throttled_flush_reaches_every_watcher(user: User) -> None:
    received: list[list[object]] = [[], [], []]

    @ui.page("/watch")
    def watch_page() -> None:
        pass

    session = await created_session()
    hub = FakeHub()
    channel = DebateChannel(hub, session)  # type: ignore[arg-type]
    hub.channels[session.id] = channel
    await user.open("/watch")
    with user:
        for box in received:
            channel.watch(box.append)
    session.broadcaster.emit(LiveTurnStarted("d1", "k", "pro", "opening", 1, "speak", 1))
    for word in ["one ", "two ", "three ", "four ", "five"]:
        session.broadcaster.emit(LiveChunk("d1", "k", "pro", word))
    batch = await channel.event.emitted(timeout=2)
    assert channel.flushes == 1
    assert batch[1] == ChunkDelta("k", "pro", 1, 0, "one two three four five")
    assert all(box == [batch] for box in received)  # the same single batch for every watcher
    user.client.delete()
    assert channel.watchers == 0 and session.id not in hub.channels and session.broadcaster.count == 0


async def test_hub_signals_dashboards_once_for_a_burst(user: User) -> None:
    class FakeStore:
        async def last_change(self) -> tuple[int, str]:
            return 0, ""  # nothing changes in the database: only the engine's burst signals

    class FakeEngine:
        def __init__(self) -> None:
            self.all = Broadcaster()
            self.store = FakeStore()

        def subscribe_all(self, listener):
            return self.all.subscribe(listener)

    engine = FakeEngine()
    hub = LiveHub(engine)  # type: ignore[arg-type]
    for seq in range(1, 30):
        engine.all.emit(_turn_event(seq, f"k{seq}"))
    hub.debates_changed("d2")
    changed = await hub.dashboard.emitted(timeout=2)
    assert changed == {"d1", "d2"}
    hub.close()
    assert engine.all.count == 0
