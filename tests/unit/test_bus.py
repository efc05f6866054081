"""The live bus without Redis, and what a process relays to a bus: only what other processes cannot
read from the log themselves."""

from __future__ import annotations

from pathlib import Path

from webapp.bus import BusPublisher, InProcessBus, open_bus
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.stream import LiveChunk, LiveEvent, LiveMessage, LiveStatus, LiveTurnStarted
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider


class RecordingBus(InProcessBus):
    """A bus that keeps what it is asked to publish (as if it carried it to other processes)."""

    carries = True

    def __init__(self) -> None:
        self.published: list[LiveMessage] = []

    def publish(self, message: LiveMessage) -> None:
        self.published.append(message)


def test_without_a_url_the_bus_is_in_process_and_hears_nobody() -> None:
    bus = open_bus(None)
    assert isinstance(bus, InProcessBus) and isinstance(open_bus(""), InProcessBus)
    heard: list[object] = []
    stop = bus.watch("d1", heard.append)
    bus.publish(LiveChunk("d1", "k", "pro", "text"))
    stop()
    assert heard == [] and bus.live_turns("d1") == {} and not bus.connected
    assert not bus.carries  # so a process without Redis puts no publisher on its stream


async def test_the_runner_relays_its_stream_but_not_what_it_read_from_the_log(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    runner = await Engine.open(db, providers=OneProvider())
    watcher = await Engine.open(db, providers=OneProvider())
    ran, read = RecordingBus(), RecordingBus()
    publishers = [BusPublisher(runner, ran), BusPublisher(watcher, read)]
    try:
        debate_id = await runner.create(DebateConfig(topic="Should exams be open-book?", format="oxford", rounds=1))
        watched = await watcher.session(debate_id)  # loaded before anything ran: it will read the rest
        session = await runner.session(debate_id)
        session.ensure_running()
        assert await session.join() is State.COMPLETED
        events = [m for m in ran.published if isinstance(m, LiveEvent)]
        assert [m.event.seq for m in events] == list(range(2, session.state.last_seq + 1))
        starts = [m for m in ran.published if isinstance(m, LiveTurnStarted)]
        chunks = [m for m in ran.published if isinstance(m, LiveChunk)]
        assert len(starts) >= 4 and chunks
        assert "".join(c.text for c in chunks if c.key == starts[0].key) == session.state.turns[0].text

        assert await watched.catch_up() == len(events)  # the watcher's subscribers hear it all again…
        assert read.published == []  # …but it does not echo to the bus what the runner already sent
        watched.broadcaster.emit(LiveStatus(debate_id, "reloaded"))
        watched.broadcaster.emit(LiveStatus(debate_id, "deleted"))
        assert read.published == [LiveStatus(debate_id, "deleted")]
        assert session.broadcaster.count == 0, "relaying does not count as watching the debate"
    finally:
        for publisher in publishers:
            publisher.close()
        await runner.close()
        await watcher.close()
