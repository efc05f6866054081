"""Money that means what it says, in whole debates against the local fake LLM server (real SDKs):

- warn-at fires when the money actually spent reaches it, never on a projection;
- the hard limit is never crossed and never stops a debate while money remains: each call's
  `max_tokens` is capped to what is left (a capped turn says so), parallel turns share what is left,
  and only a call that cannot fit even a 64-token answer is refused ("stopped: the next turn could
  not fit in the remaining $X");
- the verdict's reserve: turns are capped so that the verdict still fits;
- calls that were cut off, timed out or cancelled (a pause) are billed: their cost is counted (from
  the text received) and recorded, marked as estimated;
- clarification calls run side by side under a TaskGroup: each call's cost is recorded as it
  completes, and a failure cancels the others rather than leaving them running.

The server here answers every turn with exactly as many tokens as it is allowed (`max_tokens`), so
each turn costs its worst case: the cap is the only thing between a debate and its limit.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.doubles import mid_second_turn
from tests.fakellm import FakeLLMServer, RecordedRequest, Script
from tests.provider_helpers import genai_cost, open_engine, register_in_store, use_fake_keys, verdict_json
from webapp.engine import budget as money
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.stream import LiveEvent
from webapp.models import (
    Budget,
    DebateConfig,
    EventKind,
    JudgeConfig,
    JudgeSpec,
    Participant,
    Timeouts,
)
from webapp.providers.base import estimate_tokens
from webapp.providers.demo import OneProvider
from webapp.settings import Settings

MODEL = "gpt-4o-mini"
CRITERIA = ["clarity"]
VERDICT_JSON = verdict_json("B", {"A": 55, "B": 66}, CRITERIA, "B was clearer.", 0.6)
FULL = 1000  # every participant's max_tokens
SETTINGS = Settings(_env_file=None)


def allowance(request: RecordedRequest) -> int:
    body = request.body
    return int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)


def every_allowed_token(request: RecordedRequest) -> str:
    """A model that always writes as much as it may: one token (one word) per allowed token."""
    return " ".join(["word"] * allowance(request))


def worst_turn_cost(tokens: int = FULL, input_tokens: int = 600) -> float:
    return genai_cost(MODEL, "openai", input_tokens, tokens)


def participant(name: str, position: str, url: str, **kwargs: Any) -> Participant:
    fields: dict[str, Any] = {"name": name, "provider": "openai", "model": MODEL, "position": position,
                              "base_url": f"{url}/v1", "max_tokens": FULL}
    fields.update(kwargs)
    return Participant(**fields)


def config(url: str, *, budget: Budget, rounds: int | None = 3, fmt: str = "round-limited",
           judge: JudgeSpec | None = None, **kwargs: Any) -> DebateConfig:
    return DebateConfig(
        topic="Remote work beats the office", format=fmt, rounds=rounds,
        participants=[participant("Ada", "pro", url), participant("Brook", "con", url)],
        judge=JudgeConfig(judges=[judge or JudgeSpec(provider="openai", model="gpt-4o", base_url=f"{url}/v1")],
                          criteria=CRITERIA),
        budget=budget, **kwargs,
    )


@pytest.fixture(autouse=True)
def dummy_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_fake_keys(monkeypatch, tmp_path, OPENAI_API_KEY="fake-openai-key-0000")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(json_reply=VERDICT_JSON, reply=every_allowed_token) as fake:
        yield fake


@pytest.fixture
async def engine(tmp_path: Path, server: FakeLLMServer) -> AsyncIterator[Engine]:
    eng = await open_engine(tmp_path, Settings(_env_file=None, db=tmp_path / "db.sqlite3"))
    await register_in_store(eng.store, server.url)  # the key goes only to registered endpoints
    try:
        yield eng
    finally:
        await eng.close()


def turn_requests(server: FakeLLMServer) -> list[RecordedRequest]:
    return [r for r in server.model_requests if not r.wants_json]


def capped(state: Any) -> list[Any]:
    return [t for t in state.turns if any(n.startswith("capped at") for n in t.notes)]


# --- warn-at ------------------------------------------------------------------------------------


async def test_warn_at_below_one_call_lets_the_first_turn_speak(server: FakeLLMServer, engine: Engine) -> None:
    """Warn-at $0.0001 used to halt the debate before its first word ("the next call could bring it
    to …"): now the warning comes when the money spent reaches it."""
    session = await engine.start(config(server.url, budget=Budget(warn_at=0.0001)))
    assert await session.join() is State.AWAITING_ACK
    state = session.state
    assert len(state.turns) == 1 and state.ledger.total_usd >= 0.0001
    [warning] = state.warnings
    assert warning.type == "cost_warning" and "spending reached" in warning.message
    assert "could bring it to" not in warning.message


async def test_warn_at_fires_when_spending_reaches_it_not_before(server: FakeLLMServer, engine: Engine) -> None:
    first = worst_turn_cost()
    warn_at = first * 1.5  # the second turn's worst case would cross it; only its actual cost does
    session = await engine.start(config(server.url, budget=Budget(warn_at=warn_at), rounds=2))
    assert await session.join() is State.AWAITING_ACK
    state = session.state
    assert len(state.turns) == 2 and len(turn_requests(server)) == 2
    assert state.ledger.total_usd >= warn_at > state.turns[0].cost_usd  # type: ignore[operator]
    await session.acknowledge_warning()
    assert await session.join() is State.COMPLETED
    assert [w.type for w in session.state.warnings] == ["cost_warning"]


# --- the hard limit -----------------------------------------------------------------------------


async def test_hard_limit_caps_the_last_turns_and_is_never_crossed(server: FakeLLMServer, engine: Engine) -> None:
    limit = 2.5 * worst_turn_cost()  # the verdict (gpt-4o, 1500 tokens) cannot fit: nothing is kept for it
    session = await engine.start(config(server.url, budget=Budget(cost_limit=limit)))
    assert await session.join() is State.STOPPED
    state = session.state
    assert state.ended_because == "cost limit"
    assert state.ledger.total_usd <= limit
    assert len(state.turns) >= 3  # two full turns, then what the rest could pay for
    assert [t.usage.output_tokens for t in state.turns[:2]] == [FULL, FULL]
    cut = capped(state)
    assert cut and all(t.usage.output_tokens < FULL for t in cut)
    requests = turn_requests(server)
    assert len(requests) == len(state.turns)  # no request for a turn that could not fit
    for turn, request in zip(state.turns, requests, strict=True):
        assert turn.usage.output_tokens == allowance(request)  # the cap was what the model was allowed
        if turn in cut:
            assert any(n.startswith(f"capped at {allowance(request)} tokens (of {FULL})") for n in turn.notes)
    [stop] = [w for w in state.warnings if w.type == "cost_limit"]
    remaining = limit - state.ledger.total_usd
    assert stop.message.startswith(f"stopped: the next turn could not fit in the remaining ${remaining:.4f}")
    assert "64-token answer" in stop.message
    assert remaining < genai_cost(MODEL, "openai", 64, 64) + worst_turn_cost(64)  # really no room for 64
    assert state.verdict is None and stop.judge_runs is False


async def test_a_limit_below_one_full_turn_does_not_stop_a_debate_at_zero(
    server: FakeLLMServer, engine: Engine
) -> None:
    """A $0.01-style limit used to stop at $0 spent with 0 turns; now the turns it can pay for are made."""
    limit = worst_turn_cost() / 2
    session = await engine.start(config(server.url, budget=Budget(cost_limit=limit)))
    assert await session.join() is State.STOPPED
    state = session.state
    assert state.turns and state.turns[0].usage.output_tokens < FULL
    assert capped(state)[0] is state.turns[0]
    assert 0 < state.ledger.total_usd <= limit


async def test_parallel_turns_share_what_is_left(server: FakeLLMServer, engine: Engine) -> None:
    limit = 1.2 * worst_turn_cost()  # both openings start together: neither may take it all
    session = await engine.start(config(server.url, budget=Budget(cost_limit=limit), fmt="structured", rounds=None))
    assert await session.join() is State.STOPPED
    state = session.state
    openings = [t for t in state.turns if t.phase == "opening"]
    assert len(openings) == 2 and capped(state)[:2] == openings
    assert all(200 < t.usage.output_tokens < 0.7 * FULL for t in openings)
    assert state.ledger.total_usd <= limit


async def test_the_verdict_keeps_its_reserve(server: FakeLLMServer, engine: Engine) -> None:
    judge = JudgeSpec(provider="openai", model="gpt-4o", base_url=f"{server.url}/v1", max_tokens=300)
    limit = 0.012  # about 19 full turns, but each turn also grows what the judge must read
    session = await engine.start(config(server.url, budget=Budget(cost_limit=limit), judge=judge, rounds=3,
                                        word_limit=2000))  # the judge reads every word
    assert await session.join() is State.STOPPED
    state = session.state
    assert state.ended_because == "cost limit" and capped(state)
    [stop] = [w for w in state.warnings if w.type == "cost_limit"]
    assert stop.judge_runs is True and "kept for the verdict" in stop.message
    assert state.verdict is not None and state.verdict.available  # the verdict still fit
    assert state.ledger.total_usd <= limit


# --- calls that were cut off or timed out -------------------------------------------------------


def cost_notes(state: Any) -> list[Any]:
    return [n for n in state.notes if n.type == "call_cost"]


async def test_a_cut_off_call_is_billed_estimated_and_recorded(engine: Engine) -> None:
    partial = "alpha beta gamma delta epsilon"
    with FakeLLMServer(json_reply=VERDICT_JSON) as server:
        await register_in_store(engine.store, server.url)
        server.enqueue(Script(text=f"{partial} zeta eta theta", cut_after=5), Script(), Script())
        session = await engine.start(config(server.url, budget=Budget(), rounds=1))
        assert await session.join() is State.COMPLETED
    state = session.state
    [note] = cost_notes(state)
    [record] = note.calls
    assert note.turn == state.turns[0].key and record.cut_off == note.reason == "connection"
    usage = record.usage
    assert usage.estimated and usage.output_tokens == estimate_tokens(partial + " ")
    assert usage.input_tokens > 0  # the prompt had been read
    expected = money.cost_of(state.config.participants[0], usage, SETTINGS).usd
    assert record.cost_usd == pytest.approx(expected) and expected
    turns_and_judge = sum(t.cost_usd or 0 for t in state.turns) + state.ledger.by_model["openai:gpt-4o"]
    assert state.ledger.total_usd == pytest.approx(turns_and_judge + expected)  # the debate's cost includes it
    assert state.ledger.estimated_usage
    assert partial not in str([n for n in state.notes])  # only its size is kept, never its text


async def test_a_timed_out_call_is_billed_for_its_input(engine: Engine) -> None:
    never = threading.Event()
    with FakeLLMServer(json_reply=VERDICT_JSON) as server:
        await register_in_store(engine.store, server.url)
        server.enqueue(Script.held(never))
        session = await engine.start(config(server.url, budget=Budget(), rounds=1,
                                            timeouts=Timeouts(first_token=0.3, turn=10)))
        assert await session.join() is State.COMPLETED
        never.set()
    state = session.state
    [note] = cost_notes(state)
    [record] = note.calls
    assert note.reason == "timeout" and record.usage.estimated is True
    assert record.usage.output_tokens == 0 and record.usage.input_tokens > 0
    assert record.cost_usd > 0
    [retry] = [n for n in state.notes if n.type == "retry"]
    assert retry.error.message == "timed out: no first token within the first-token timeout of 0.3 s"


async def test_the_turn_timeout_names_itself(engine: Engine) -> None:
    """The turn limit (0.3 s) fires long before the first-token limit (60 s): the message says so
    (it used to say "timed out waiting for the first token after 60 s")."""
    never = threading.Event()
    with FakeLLMServer(json_reply=VERDICT_JSON) as server:
        await register_in_store(engine.store, server.url)
        server.enqueue(Script.held(never), Script.held(never))
        session = await engine.start(config(server.url, budget=Budget(), rounds=1,
                                            timeouts=Timeouts(first_token=60, turn=0.3)))
        assert await session.join() is State.ERROR
        never.set()
    error = session.state.machine.context.error
    assert error.reason == "timeout"
    assert error.message == "timed out: the turn took longer than the turn timeout of 0.3 s; no token had come"


# --- clarification calls ------------------------------------------------------------------------


def clarifying(url_a: str, url_b: str) -> DebateConfig:
    return DebateConfig(
        topic="How should a small town cut its traffic?", format="collaborative", rounds=1,
        participants=[participant("Ada", "architect", url_a), participant("Brook", "critic", url_b)],
        judge=JudgeConfig(judges=[JudgeSpec(provider="openai", model="gpt-4o", base_url=f"{url_a}/v1")]),
        clarification_questions=2,
    )


async def test_clarification_costs_are_recorded_as_each_call_completes(engine: Engine) -> None:
    """Ada's question call completes, then Brook's fails: the debate errors, and Ada's call is paid
    for in the ledger (it used to be lost with the failed gather: ledger $0 with a billed call)."""
    questions = '{"questions": ["Which streets are busiest?"]}'
    gate = threading.Event()
    with FakeLLMServer(json_reply=questions) as ada, FakeLLMServer() as brook:
        ada.enqueue(Script(input_tokens=300, output_tokens=20))
        brook.enqueue(Script(hold=gate, stream_error="invalid_request_error", text="x"))
        await register_in_store(engine.store, ada.url, brook.url)
        session = await engine.start(clarifying(ada.url, brook.url))

        def release(message: Any) -> None:  # Brook fails only once Ada's cost is in the log
            if isinstance(message, LiveEvent) and message.event.kind is EventKind.NOTE:
                gate.set()

        session.subscribe(release)
        if cost_notes(session.state):
            gate.set()
        try:
            assert await asyncio.wait_for(session.join(), 20) is State.ERROR
        finally:
            gate.set()
    state = session.state
    ada_cost = genai_cost(MODEL, "openai", 300, 20)
    assert state.ledger.total_usd == pytest.approx(ada_cost)
    [note] = cost_notes(state)
    assert note.purpose == "clarify" and note.calls[0].participant == "ada"


async def test_a_failed_clarification_call_cancels_the_others(engine: Engine) -> None:
    never = threading.Event()
    with FakeLLMServer() as ada, FakeLLMServer() as brook:
        ada.enqueue(Script.held(never))
        brook.enqueue(Script.unauthorized())
        await register_in_store(engine.store, ada.url, brook.url)
        session = await engine.start(clarifying(ada.url, brook.url))
        try:
            assert await asyncio.wait_for(session.join(), 20) is State.ERROR
            # Ada's call is not left running (and billing) after the debate errored: it left its held stream,
            # or (Brook's refusal came first, as under load) it was cancelled before it reached the server
            left = await asyncio.to_thread(ada.client_left.wait, 5)
            assert left or not ada.model_requests, f"Ada's server holding its first token: {ada.holding.is_set()}"
        finally:
            never.set()
    assert session.state.machine.context.error.reason == "auth"


async def test_a_turn_cut_off_by_a_pause_is_billed_for_what_it_streamed(tmp_path: Path) -> None:
    held = mid_second_turn()  # the demo model, stopped three words into the second turn
    db = tmp_path / "paused.sqlite3"
    engine = await Engine.open(db, settings=Settings(_env_file=None, db=db), providers=OneProvider(held))
    try:
        session = await engine.start(DebateConfig(topic="Is a hot dog a sandwich?", format="oxford", rounds=1))
        await held.reached.wait()
        await session.pause()
        held.gate.set()
        state = session.state
        assert state.status is State.PAUSED and len(state.turns) == 1
        [note] = cost_notes(state)
        [record] = note.calls
        assert note.reason == "cancelled" and note.turn == "opening/r1/opposition/1"
        assert record.usage.estimated and record.usage.output_tokens > 0
        assert state.ledger.total_usd == pytest.approx(state.turns[0].cost_usd + record.cost_usd)
        await session.resume()
        assert await session.join() is State.COMPLETED  # the cut turn is redone, its cost stays counted
        assert len(cost_notes(session.state)) == 1
    finally:
        await engine.close()
