"""Servers that serve one request at a time, jittered retries, and the quality of each turn — whole
debates through the real OpenAI SDK (the compatible provider) against the fake LLM server.

The fake server's "one at a time" mode behaves like llama-cpp-python: a new request interrupts the
stream in progress. With the endpoint's limit at 1 (the default for a server on this machine) the
parallel phases queue and nothing is interrupted; with a higher limit they collide.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import FakeLLMServer, RecordedRequest, Script
from tests.provider_helpers import open_engine, use_fake_keys
from webapp import export
from webapp.engine.calls import EMPTY_TWICE
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.stream import LiveMessage, LiveTurnStarted
from webapp.models import DebateConfig, JudgeConfig, JudgeSpec, Participant, Timeouts
from webapp.settings import Settings
from webapp.ui.live import wire as live_wire

QUESTIONS = '{"questions": ["What budget do we have?"]}'
NO_JUDGE = JudgeConfig(judges=[JudgeSpec(provider="demo", model="demo-instant")])


def reply_for(request: RecordedRequest) -> str:
    """About a dozen words, so a paced stream lasts long enough for a second request to arrive."""
    return "We should weigh costs, benefits and the evidence before deciding anything at all here."


@pytest.fixture(autouse=True)
def no_stray_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_fake_keys(monkeypatch, tmp_path)


@pytest.fixture
def one_at_a_time() -> Iterator[FakeLLMServer]:
    """A one-request-at-a-time server whose streams take a while (about 0.15 s each)."""
    with FakeLLMServer(reply=reply_for, json_reply=QUESTIONS, chunk_delay=0.01, one_at_a_time=True) as fake:
        yield fake


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=reply_for) as fake:
        yield fake


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    eng = await open_engine(tmp_path, Settings(db=tmp_path / "db.sqlite3", retry_after_cap=1.0),
                            rng=random.Random(11))
    try:
        yield eng
    finally:
        await eng.close()


def people(url: str, *positions: str, concurrency: int | None = None, **extra: Any) -> list[Participant]:
    return [Participant(name=f"P{index}", provider="compatible", base_url=f"{url}/v1", model=f"local-{index}",
                        position=position, max_tokens=300, concurrency=concurrency, **extra)
            for index, position in enumerate(positions, start=1)]


def classic(url: str, concurrency: int | None = None) -> DebateConfig:
    return DebateConfig(topic="Should cities ban cars downtown?", format="classic", rounds=1, questions=1,
                        participants=people(url, "pro", "con", concurrency=concurrency), judge=NO_JUDGE,
                        timeouts=Timeouts(first_token=5, turn=20))


def collaborative(url: str, concurrency: int | None = None) -> DebateConfig:
    return DebateConfig(topic="Plan a four-day offsite for twelve engineers", format="collaborative", rounds=1,
                        evaluation="fixed", clarification_iterations=1, clarification_questions=1,
                        participants=people(url, "architect", "critic", "tester", concurrency=concurrency),
                        judge=NO_JUDGE, timeouts=Timeouts(first_token=5, turn=20))


def cut_retries(state: Any) -> list[dict[str, Any]]:
    return [n for n in state.notes if n.type == "retry" and n.error.reason == "cut_stream"]


# --- one request at a time ----------------------------------------------------------------------


async def test_classic_preparation_queues_on_a_one_at_a_time_server(
    one_at_a_time: FakeLLMServer, engine: Engine
) -> None:
    session = await engine.start(classic(one_at_a_time.url))  # a local server: limit 1 by default
    await session.join()
    state = session.state
    assert state.status is State.COMPLETED, state.errors
    assert {t.key for t in state.turns if t.phase == "preparation"} == {"preparation/r1/p1/0",
                                                                         "preparation/r1/p2/1"}
    assert one_at_a_time.interrupted == 0 and one_at_a_time.most_at_once == 1
    assert cut_retries(state) == []
    assert all(t.attempt == 1 for t in state.turns)


async def test_classic_preparation_collides_without_the_limit(one_at_a_time: FakeLLMServer, engine: Engine) -> None:
    session = await engine.start(classic(one_at_a_time.url, concurrency=4))
    await session.join()
    state = session.state
    # The second preparation request cut the first one's stream: a cut stream, retried (and maybe
    # cutting the other in turn) until the retries ran out or one got through alone.
    assert one_at_a_time.most_at_once == 2 and one_at_a_time.interrupted >= 1
    assert cut_retries(state) or state.status is State.ERROR
    assert any(n.turn.startswith("preparation/") for n in cut_retries(state))


async def test_collaborative_clarification_queues_on_a_one_at_a_time_server(
    one_at_a_time: FakeLLMServer, engine: Engine
) -> None:
    session = await engine.start(collaborative(one_at_a_time.url))
    await session.join()
    assert session.state.status is State.AWAITING_CLARIFICATION, session.state.errors
    [asked] = session.state.clarifications
    assert asked.questions == {pid: ["What budget do we have?"] for pid in ("p1", "p2", "p3")}
    await session.answer_clarification({pid: ["About 20k EUR"] for pid in ("p1", "p2", "p3")}, actor="tester")
    await session.join()
    state = session.state
    assert state.status is State.COMPLETED, state.errors
    assert [t.phase for t in state.turns] == ["proposal"] * 3 + ["critique"] * 3 + ["refinement"] * 3
    assert one_at_a_time.interrupted == 0 and one_at_a_time.most_at_once == 1
    assert cut_retries(state) == [] and all(t.attempt == 1 for t in state.turns)
    # three clarification calls and nine turns, one after the other
    assert len(one_at_a_time.model_requests) == 12


async def test_collaborative_clarification_collides_without_the_limit(
    one_at_a_time: FakeLLMServer, engine: Engine
) -> None:
    session = await engine.start(collaborative(one_at_a_time.url, concurrency=3))
    await session.join()
    state = session.state
    assert one_at_a_time.most_at_once >= 2 and one_at_a_time.interrupted >= 1
    # The debate pays for it: a call cut off and redone (which one depends on timing), or an error.
    assert cut_retries(state) or state.status is State.ERROR


async def test_a_queued_turn_shows_waiting_for_the_server(server: FakeLLMServer, engine: Engine) -> None:
    gate = threading.Event()
    server.enqueue(Script.held(gate))  # the first preparation call holds the server
    session = await engine.start(classic(server.url))
    seen: list[LiveMessage] = []
    session.subscribe(seen.append)
    try:
        assert await asyncio.to_thread(server.holding.wait, 5)
        queued = [t for t in session.live_turns.values() if t.queued]
        assert [t.key for t in queued] == ["preparation/r1/p2/1"]
        assert len(server.model_requests) == 1  # the second was never sent while the first ran
        doing = {name: what for name, _colour, what in live_wire.speaking(session)}
        assert doing == {"P1": "preparing…", "P2": "waiting for the server…"}
    finally:
        gate.set()
    await session.join()
    assert session.state.status is State.COMPLETED
    started = [(m.key, m.queued) for m in seen if isinstance(m, LiveTurnStarted) and m.phase == "preparation"]
    assert started == [("preparation/r1/p1/0", False), ("preparation/r1/p2/1", True),
                       ("preparation/r1/p2/1", False)]  # announced while queued, then when it went out


async def test_different_limits_on_one_endpoint_use_the_smallest(server: FakeLLMServer, engine: Engine) -> None:
    config = classic(server.url)
    config.participants[0].concurrency = 5
    config.participants[1].concurrency = 1
    gate = threading.Event()
    server.enqueue(Script.held(gate))
    session = await engine.start(config)
    try:
        assert await asyncio.to_thread(server.holding.wait, 5)
        assert [t.key for t in session.live_turns.values() if t.queued] == ["preparation/r1/p2/1"]
    finally:
        gate.set()
    await session.join()
    assert session.state.status is State.COMPLETED


# --- jittered retries ---------------------------------------------------------------------------


async def test_parallel_calls_that_failed_together_retry_at_different_times(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    backoff = 0.2
    engine = await Engine.open(tmp_path / "db.sqlite3", settings=Settings(db=tmp_path / "db.sqlite3"),
                               backoff_base=backoff, rng=random.Random(3))
    try:
        server.enqueue(Script.server_error(message="busy"), Script.server_error(message="busy"))
        session = await engine.start(classic(server.url, concurrency=2))  # both preparations at once
        await session.join()
    finally:
        await engine.close()
    state = session.state
    assert state.status is State.COMPLETED
    retries = [n for n in state.notes if n.type == "retry"]
    assert sorted(n.turn for n in retries) == ["preparation/r1/p1/0", "preparation/r1/p2/1"]
    waits = [n.wait_s for n in retries]
    assert waits[0] != waits[1]  # not in lock-step
    assert all(0 <= w <= backoff for w in waits)  # full jitter: within the first backoff


# --- the quality of each turn -------------------------------------------------------------------


def two_turns(url: str, **participant: Any) -> DebateConfig:
    return DebateConfig(topic="Tabs or spaces?", format="round-limited", rounds=1,
                        participants=people(url, "pro", "con", **participant), judge=NO_JUDGE,
                        timeouts=Timeouts(first_token=5, turn=20))


async def test_an_empty_reply_is_asked_for_again(server: FakeLLMServer, engine: Engine) -> None:
    server.enqueue(Script(text=" \n\t "))
    session = await engine.start(two_turns(server.url))
    await session.join()
    state = session.state
    assert state.status is State.COMPLETED
    first = state.turns[0]
    assert first.text == reply_for(server.last_request) and first.attempt == 2
    [retry] = [n for n in state.notes if n.type == "retry"]
    assert retry.error.reason == "empty_reply" and retry.turn == first.key
    [paid] = [n for n in state.notes if n.type == "call_cost" and n.reason == "empty_reply"]
    assert paid.turn == first.key  # the empty reply was billed all the same: it is in the ledger
    assert state.ledger.tokens_by_model["compatible:local-1"]["calls"] == 2


async def test_two_empty_replies_fail_the_turn_with_a_clear_reason(server: FakeLLMServer, engine: Engine) -> None:
    server.enqueue(Script(text=""), Script(text="   "))
    session = await engine.start(two_turns(server.url))
    await session.join()
    state = session.state
    assert state.status is State.ERROR
    assert EMPTY_TWICE == "the model returned an empty reply twice"
    assert state.error is not None and state.error.message == EMPTY_TWICE
    assert state.turns == []
    await session.retry(actor="tester")  # a person's retry asks again
    await session.join()
    assert session.state.status is State.COMPLETED


async def test_a_turn_cut_at_the_token_limit_says_so_everywhere(server: FakeLLMServer, engine: Engine) -> None:
    server.enqueue(Script(finish_reason="length"))
    session = await engine.start(two_turns(server.url))
    await session.join()
    state = session.state
    assert state.status is State.COMPLETED
    cut, whole = state.turns
    note = "cut at the 300-token limit"
    assert cut.finish_reason == "length" and note in cut.notes
    assert not any("cut at" in n for n in whole.notes)
    assert note in export.to_markdown(state) and note in export.to_text(state)
    assert export.to_dict(state)["turns"][0]["notes"] == [note]
    assert note in live_wire.committed_info(state, cut, None)["notes"]


async def test_estimated_usage_is_marked_in_json_page_and_exports(tmp_path: Path, engine: Engine) -> None:
    with FakeLLMServer(reply=reply_for, usage_in_stream=False) as quiet:  # like LM Studio: no usage
        session = await engine.start(two_turns(quiet.url))
        await session.join()
    state = session.state
    assert state.status is State.COMPLETED
    assert all(t.usage.estimated for t in state.turns)
    data = export.to_dict(state)
    assert [t["usage"]["estimated"] for t in data["turns"]] == [True, True]
    assert data["cost"]["estimated_usage"] is True
    assert "(estimated)" in live_wire.turn_meta(state.turns[0])
    for text in (export.to_markdown(state), export.to_text(state)):
        assert text.count(export.ESTIMATED_NOTE) == 2 and "some token counts estimated" in text


async def test_reported_usage_is_not_marked_estimated(server: FakeLLMServer, engine: Engine) -> None:
    session = await engine.start(two_turns(server.url))
    await session.join()
    state = session.state
    assert [t["usage"]["estimated"] for t in export.to_dict(state)["turns"]] == [False, False]
    assert "estimated" not in live_wire.turn_meta(state.turns[0])
    assert "estimated" not in export.to_markdown(state)
