"""The live channel: one throttled flush per debate, deltas with offsets, cleanup."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import pytest
from nicegui import ui
from nicegui.testing import User

from webapp.engine.machine import State
from webapp.engine.stream import (
    Broadcaster,
    LiveChunk,
    LiveEvent,
    LiveStatus,
    LiveTurn,
    LiveTurnAborted,
    LiveTurnStarted,
)
from webapp.live import Aborted, ChunkDelta, DebateChannel, LiveHub
from webapp.models import DebateEvent, EventKind, Turn, utcnow


@dataclass
class FakeSession:
    """Just what a channel needs from a DebateSession."""

    id: str = "d1"
    live: dict[str, LiveTurn] = field(default_factory=dict)
    broadcaster: Broadcaster = field(default_factory=Broadcaster)
    running: bool = True
    status: State = State.DEBATING

    @property
    def live_turns(self) -> Mapping[str, LiveTurn]:
        return MappingProxyType(self.live)

    def subscribe(self, listener):
        return self.broadcaster.subscribe(listener)


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
    session = FakeSession()
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
    session = FakeSession()
    channel = DebateChannel(FakeHub(), session)  # type: ignore[arg-type]
    status = LiveStatus("d1", "storage_unavailable", "database is locked")
    session.broadcaster.emit(status)
    assert channel.flush() == [status]
    channel.close()


async def test_chunks_are_coalesced_per_attempt_with_offsets(user: User) -> None:
    session = FakeSession()
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


async def test_a_channel_joining_mid_turn_continues_the_offsets(user: User) -> None:
    session = FakeSession(live={"k": LiveTurn("k", "pro", "opening", 1, "speak", 3, parts=["already here"])})
    channel = DebateChannel(FakeHub(), session)  # type: ignore[arg-type]
    session.broadcaster.emit(LiveChunk("d1", "k", "pro", "!"))
    assert channel.flush() == [ChunkDelta("k", "pro", 3, len("already here"), "!")]
    channel.close()


async def test_one_throttled_flush_reaches_every_watcher(user: User) -> None:
    received: list[list[object]] = [[], [], []]

    @ui.page("/watch")
    def watch_page() -> None:
        pass

    session = FakeSession()
    hub = FakeHub()
    channel = DebateChannel(hub, session)  # type: ignore[arg-type]
    hub.channels["d1"] = channel
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
    assert channel.watchers == 0 and "d1" not in hub.channels and session.broadcaster.count == 0


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
