"""The Redis live bus against a real Redis: one subscription per debate per process whatever the number
of watchers, catch-up from the capped stream for a late joiner, and recovery when Redis comes back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import pytest
import redis.asyncio as aioredis
from redis.asyncio.client import PubSub

from tests.redis_fixtures import RedisServer
from webapp.bus import Changed, RemoteItem
from webapp.bus.redis_bus import RedisBus, channel_name, stream_key
from webapp.bus.redis_wire import DebateWatch
from webapp.engine.stream import LiveChunk, LiveStatus, LiveTurnStarted

WAIT = 10.0  # seconds: an upper bound; each wait ends on the awaited item


class Heard:
    """A bus handler that keeps what it is handed and lets a test await a condition on it."""

    def __init__(self) -> None:
        self.items: list[RemoteItem] = []
        self._changed = asyncio.Event()

    def __call__(self, item: RemoteItem) -> None:
        self.items.append(item)
        self._changed.set()

    async def until(self, predicate: Callable[[list[RemoteItem]], bool]) -> None:
        async with asyncio.timeout(WAIT):
            while not predicate(self.items):
                self._changed.clear()
                await self._changed.wait()

    def text(self) -> str:
        """The text of the last started turn, as the items tell it."""
        text = ""
        for item in self.items:
            if isinstance(item, LiveTurnStarted):
                text = ""
            elif isinstance(item, LiveChunk):
                text += item.text
        return text


def started(debate: str, key: str = "r1:pro") -> LiveTurnStarted:
    return LiveTurnStarted(debate, key, "pro", "opening", 1, "opening", 1)


def chunk(debate: str, text: str, key: str = "r1:pro") -> LiveChunk:
    return LiveChunk(debate, key, "pro", text)


def has_changed(items: list[RemoteItem]) -> bool:
    return any(isinstance(item, Changed) for item in items)


@pytest.fixture
async def buses(redis_url: str) -> AsyncIterator[Callable[..., RedisBus]]:
    """Started buses on the test's Redis (closed afterwards): each is one process's bus."""
    opened: list[RedisBus] = []

    def make(url: str = redis_url, **kwargs: int) -> RedisBus:
        bus = RedisBus(url, **kwargs)
        opened.append(bus)
        return bus

    yield make
    for bus in opened:
        await bus.close()


async def _numsub(url: str, debate: str) -> int:
    client = aioredis.from_url(url)
    try:
        return int((await client.pubsub_numsub(channel_name(debate)))[0][1])
    finally:
        await client.aclose()


async def test_one_subscription_per_debate_per_process_fanned_out_to_every_watcher(
    redis_url: str, buses: Callable[..., RedisBus]
) -> None:
    debate = uuid.uuid4().hex[:12]
    runner, web1, web2 = buses(), buses(), buses()
    for bus in (runner, web1, web2):
        await bus.start()
    tabs = [Heard() for _ in range(3)]
    stops = [web1.watch(debate, tab) for tab in tabs]
    other = Heard()
    web2.watch(debate, other)
    for heard in (*tabs, other):
        await heard.until(has_changed)  # subscribed (a subscription hands its watchers a `Changed`)
    assert web1.subscribes == {debate: 1} and web2.subscribes == {debate: 1}
    assert await _numsub(redis_url, debate) == 2  # one per process, not one per tab

    runner.publish(started(debate))
    for word in ("Open ", "book ", "exams."):
        runner.publish(chunk(debate, word))
    for heard in (*tabs, other):
        await heard.until(lambda items: any(isinstance(i, LiveChunk) and i.text == "exams." for i in items))
        assert heard.text() == "Open book exams."

    for stop in stops:
        stop()
    async with asyncio.timeout(WAIT):
        while await _numsub(redis_url, debate) != 1:  # the server's count: nothing to await but asking
            await asyncio.sleep(0.02)
    assert web1.live_turns(debate) == {}


async def test_a_late_joiner_catches_up_on_the_turn_in_flight_from_the_stream(
    buses: Callable[..., RedisBus]
) -> None:
    debate = uuid.uuid4().hex[:12]
    runner, early, late = buses(), buses(), buses()
    for bus in (runner, early, late):
        await bus.start()
    first = Heard()
    early.watch(debate, first)
    await first.until(has_changed)
    runner.publish(started(debate))
    for word in ("Cities ", "should ", "ban "):
        runner.publish(chunk(debate, word))
    await first.until(lambda items: sum(isinstance(i, LiveChunk) for i in items) == 3)

    joiner = Heard()
    late.watch(debate, joiner)  # joins mid-turn: the stream has the turn so far
    await joiner.until(has_changed)
    assert isinstance(joiner.items[0], LiveTurnStarted) and joiner.items[0].key == "r1:pro"
    assert joiner.text() == "Cities should ban "
    assert late.live_turns(debate)["r1:pro"].text == "Cities should ban "
    runner.publish(chunk(debate, "cars."))  # and it carries on from there, nothing doubled
    await joiner.until(lambda items: joiner.text().endswith("cars."))
    assert joiner.text() == "Cities should ban cars."


def test_a_named_change_in_the_stream_is_handed_on_once_by_a_subscription() -> None:
    # A comment stored while a page subscribes: its signal is in the stream the subscription reads and
    # comes again on the channel, where the counters drop it as already read. The replay must hand it on.
    watch = DebateWatch()
    comments = '{"t":"x","ch":"comments","i":"other","n":2}'
    stream = ['{"t":"x","ch":"","i":"other","n":1}', comments]
    items = watch.rebuild("d", "mine", stream)
    assert items == [Changed("d"), Changed("d", change="comments")]
    assert watch.apply("d", "mine", comments, replaying=False) is None  # the channel's copy: once only
    assert watch.rebuild("d", "mine", stream) == [Changed("d")]  # a resubscription: nothing new
    newer = '{"t":"x","ch":"audience","i":"other","n":3}'
    assert watch.rebuild("d", "mine", [*stream, newer]) == [Changed("d"), Changed("d", change="audience")]


async def test_a_late_joiner_hears_a_change_published_before_it_subscribed(
    buses: Callable[..., RedisBus]
) -> None:
    debate = uuid.uuid4().hex[:12]
    runner, late = buses(), buses()
    for bus in (runner, late):
        await bus.start()
    runner.publish(LiveStatus(debate, "comments"))
    assert runner._client is not None
    async with asyncio.timeout(WAIT):
        while not await runner._client.xrange(stream_key(debate)):  # on Redis: nothing to await but asking
            await asyncio.sleep(0.02)
    joiner = Heard()
    late.watch(debate, joiner)
    await joiner.until(lambda items: Changed(debate, change="comments") in items)
    assert joiner.items == [Changed(debate), Changed(debate, change="comments")]


async def test_the_stream_is_capped_and_a_trimmed_turn_is_never_shown_wrong(
    redis_url: str, buses: Callable[..., RedisBus]
) -> None:
    debate = uuid.uuid4().hex[:12]
    runner, watcher, late = buses(maxlen=10), buses(), buses()
    for bus in (runner, watcher, late):
        await bus.start()
    heard = Heard()
    watcher.watch(debate, heard)
    await heard.until(has_changed)
    runner.publish(started(debate))
    for i in range(300):
        runner.publish(chunk(debate, f"w{i} "))
    await heard.until(lambda items: sum(isinstance(i, LiveChunk) for i in items) == 300)
    client = aioredis.from_url(redis_url)
    try:
        length = await client.xlen(stream_key(debate))
        assert 10 <= length < 301 // 2, length  # `MAXLEN ~`: trimmed in whole nodes, never below the cap
        assert await client.ttl(stream_key(debate)) > 0  # a debate's stream does not outlive it for long
    finally:
        await client.aclose()

    joiner = Heard()
    late.watch(debate, joiner)
    await joiner.until(has_changed)
    # The turn's start was trimmed: the joiner waits for the next turn rather than show a tail as a turn.
    assert late.live_turns(debate) == {} and not any(isinstance(i, LiveChunk) for i in joiner.items)
    runner.publish(chunk(debate, "more "))
    runner.publish(started(debate, "r1:con"))
    runner.publish(chunk(debate, "Next.", "r1:con"))
    await joiner.until(lambda items: joiner.text() == "Next.")
    assert [i.text for i in joiner.items if isinstance(i, LiveChunk)] == ["Next."]


async def test_streaming_resumes_mid_turn_when_redis_comes_back(
    own_redis: RedisServer, buses: Callable[..., RedisBus]
) -> None:
    debate = uuid.uuid4().hex[:12]
    runner, web = buses(own_redis.url), buses(own_redis.url)
    await runner.start()
    await web.start()
    heard = Heard()
    web.watch(debate, heard)
    await heard.until(has_changed)
    runner.publish(started(debate))
    runner.publish(chunk(debate, "Hello "))
    await heard.until(lambda items: heard.text() == "Hello ")

    own_redis.kill()
    runner.publish(chunk(debate, "world"))  # lost with Redis: only the live view suffers
    async with asyncio.timeout(WAIT):
        while web.connected:  # the subscriber notices on its next read (within `IDLE_POLL`)
            await asyncio.sleep(0.02)
    assert web.live_turns(debate) == {}

    own_redis.start()
    runner.publish(chunk(debate, "!"))  # the runner re-announces its turn, with all its text so far
    await heard.until(lambda items: heard.text() == "Hello world!")
    assert web.connected and web.live_turns(debate)["r1:pro"].text == "Hello world!"


async def test_the_subscriber_outlives_an_error_nobody_foresaw(
    buses: Callable[..., RedisBus], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client error outside Redis's own (here: a reply cut off mid-read) must not end the receive loop:
    a web instance whose subscriber died would never show live text again, and say nothing."""
    debate = uuid.uuid4().hex[:12]
    runner, watcher = buses(), buses()
    for bus in (runner, watcher):
        await bus.start()
    heard = Heard()
    watcher.watch(debate, heard)
    await heard.until(has_changed)
    failed = asyncio.Event()
    broken: set[int] = set()  # the subscribers of both buses, each broken once
    original = PubSub.get_message

    async def fails_once(self: PubSub, *args: object, **kwargs: object) -> object:
        if len(broken) < 2 and id(self) not in broken:
            broken.add(id(self))
            if len(broken) == 2:
                failed.set()
            raise EOFError("the reply ended early")
        return await original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(PubSub, "get_message", fails_once)
    await asyncio.wait_for(failed.wait(), WAIT)
    runner.publish(started(debate))
    for word in ("Buses ", "every ", "hour."):
        runner.publish(chunk(debate, word))
    await heard.until(lambda items: heard.text() == "Buses every hour.")
