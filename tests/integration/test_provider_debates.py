"""Whole debates through the real OpenAI and Anthropic SDKs against the local fake LLM server.

One participant speaks the OpenAI protocol, the other the Anthropic one, and the judge is an OpenAI
model: usage and cost are checked per turn against what the server reported and what genai-prices
charges, and every fault the server can script leads to the documented behaviour (automatic retry
and recovery, or the debate in *error* with the provider's own message until RETRY redoes exactly
the failed turn). Pause and stop cancel the in-flight SDK stream: the server sees the client go.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import FakeLLMServer, RecordedRequest, Script
from tests.provider_helpers import genai_cost, open_engine, register_in_store, round_of, use_fake_keys, verdict_json
from webapp.engine.calls import AUTO_RETRIES
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.stream import LiveChunk, LiveMessage, LiveTurnAborted, LiveTurnStarted
from webapp.models import (
    DebateConfig,
    EventKind,
    JudgeConfig,
    JudgeSpec,
    Participant,
    Timeouts,
)
from webapp.settings import Settings

PRO_MODEL = "gpt-4o-mini"  # OpenAI protocol
CON_MODEL = "claude-haiku-4-5"  # Anthropic protocol
JUDGE_MODEL = "gpt-4o"  # OpenAI protocol
CRITERIA = ["clarity"]
VERDICT_JSON = verdict_json("A", {"A": 71, "B": 64}, CRITERIA, "A answered every point; B repeated itself.", 0.8)
PARTIAL = "PARTIALMARKER"  # text that a cut stream delivered before it broke
OPENAI_KEY = "fake-openai-key-0000"
TURN_ORDER = [f"{PRO_MODEL}/r1", f"{CON_MODEL}/r1", f"{PRO_MODEL}/r2", f"{CON_MODEL}/r2"]


# --- helpers ------------------------------------------------------------------------------------


def turn_of(request: RecordedRequest) -> str:
    """Which debate call a request was: `<model>/r<round>` for a turn, `judge` for the verdict."""
    return "judge" if request.model == JUDGE_MODEL else f"{request.model}/r{round_of(request)}"


def reply_for(request: RecordedRequest) -> str:
    """A distinct, recognisable reply for each turn (the judge gets `json_reply`)."""
    return f"{turn_of(request)} says: the motion stands or falls on evidence, not volume."


def request_counts(server: FakeLLMServer) -> Counter[str]:
    return Counter(turn_of(r) for r in server.model_requests)


def every_call_once(*, twice: str | None = None) -> Counter[str]:
    """The request counts of a whole debate: each turn and the judge once (`twice`: one retried turn)."""
    counts = Counter({**{key: 1 for key in TURN_ORDER}, "judge": 1})
    if twice is not None:
        counts[twice] = 2
    return counts


def make_config(**overrides: Any) -> DebateConfig:
    """Two rounds of round-limited debate: pro on OpenAI, con on Anthropic, an OpenAI judge."""
    url = overrides.pop("url")
    data: dict[str, Any] = {
        "topic": "Cities should ban cars downtown",
        "format": "round-limited",
        "rounds": 2,
        "participants": [
            Participant(name="Ada", provider="openai", model=PRO_MODEL, position="pro",
                        base_url=f"{url}/v1", max_tokens=300),
            Participant(name="Brook", provider="anthropic", model=CON_MODEL, position="con",
                        base_url=url, max_tokens=300),
        ],
        "judge": JudgeConfig(
            judges=[JudgeSpec(provider="openai", model=JUDGE_MODEL, base_url=f"{url}/v1", max_tokens=400)],
            criteria=CRITERIA,
        ),
        "timeouts": Timeouts(first_token=0.5, turn=10),
    }
    data.update(overrides)
    return DebateConfig(**data)


async def wait_for(event: threading.Event, what: str, timeout: float = 60.0) -> None:
    """Await a flag the fake server's thread sets (no polling sleeps in the test). `timeout` only bounds a
    hang: the wait ends when the flag is set, and a first debate in a busy process (the SDK's first use)
    took 19 s to reach its held turn, so nothing here may hinge on how soon that is."""
    if not await asyncio.to_thread(event.wait, timeout):
        raise AssertionError(f"timed out waiting for {what}")


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def dummy_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_fake_keys(monkeypatch, tmp_path, OPENAI_API_KEY=OPENAI_KEY, ANTHROPIC_API_KEY="fake-anthropic-key-0000")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=reply_for, json_reply=VERDICT_JSON) as fake:
        yield fake


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(db=tmp_path / "db.sqlite3", retry_after_cap=0.3)


@pytest.fixture
async def engine(tmp_path: Path, settings: Settings, server: FakeLLMServer) -> AsyncIterator[Engine]:
    eng = await open_engine(tmp_path, settings)
    await register_in_store(eng.store, server.url)  # the keys go only to registered endpoints
    try:
        yield eng
    finally:
        await eng.close()


async def run_debate(engine: Engine, config: DebateConfig) -> Any:
    session = await engine.start(config)
    await session.join()
    return session


def assert_completed_intact(session: Any, server: FakeLLMServer) -> None:
    state = session.state
    assert state.status is State.COMPLETED, (state.status, state.errors)
    assert [f"{t.model}/r{t.round}" for t in state.turns] == TURN_ORDER
    for turn in state.turns:
        assert turn.text == f"{turn.model}/r{turn.round} says: the motion stands or falls on evidence, not volume."
    assert state.verdict is not None and state.verdict.available


# --- a whole debate ----------------------------------------------------------------------------


async def test_openai_and_anthropic_debate_records_usage_and_cost_per_turn(
    server: FakeLLMServer, engine: Engine
) -> None:
    usages = {  # per turn: (input, output, cached) reported by the server
        TURN_ORDER[0]: (812, 57, 0),
        TURN_ORDER[1]: (903, 61, 0),
        TURN_ORDER[2]: (1450, 49, 256),
        TURN_ORDER[3]: (1588, 66, 128),
        "judge": (2210, 140, 0),
    }
    for key in [*TURN_ORDER, "judge"]:
        inp, out, cached = usages[key]
        server.enqueue(Script(input_tokens=inp, output_tokens=out, cached_tokens=cached))
    session = await run_debate(engine, make_config(url=server.url))
    state = session.state
    assert_completed_intact(session, server)
    # Each participant spoke its own wire protocol; the judge is the OpenAI one.
    protocols = {turn_of(r): (r.protocol, r.path) for r in server.model_requests}
    assert protocols[TURN_ORDER[0]] == ("openai", "/v1/chat/completions")
    assert protocols[TURN_ORDER[1]] == ("anthropic", "/v1/messages")
    assert protocols["judge"] == ("openai", "/v1/chat/completions")
    assert request_counts(server) == every_call_once()

    expected_total = 0.0
    for turn in state.turns:
        inp, out, cached = usages[f"{turn.model}/r{turn.round}"]
        if turn.model == CON_MODEL:  # Anthropic reports cache reads beside input_tokens, not inside
            inp += cached
        assert turn.usage.model_dump() == {"input_tokens": inp, "output_tokens": out, "cached_tokens": cached,
                                           "estimated": False}
        provider = "openai" if turn.model == PRO_MODEL else "anthropic"
        assert turn.provider == provider
        expected = genai_cost(turn.model, provider, inp, out, cached)
        assert turn.cost_usd == pytest.approx(expected, rel=1e-9)
        assert turn.cost_usd > 0
        expected_total += expected
    judge_cost = genai_cost(JUDGE_MODEL, "openai", 2210, 140)
    ledger = state.ledger
    assert ledger.by_model[f"openai:{JUDGE_MODEL}"] == pytest.approx(judge_cost, rel=1e-9)
    assert ledger.tokens_by_model[f"openai:{JUDGE_MODEL}"] == {"input_tokens": 2210, "output_tokens": 140,
                                                                "calls": 1}
    assert ledger.total_usd == pytest.approx(expected_total + judge_cost, rel=1e-9)
    assert ledger.by_participant["ada"] == pytest.approx(sum(
        t.cost_usd for t in state.turns if t.speaker == "ada"), rel=1e-9)
    assert ledger.unpriced_models == set() and not ledger.simulated
    # The judge saw the whole transcript, the verdict maps labels back to participants.
    judge_prompt = next(r for r in server.model_requests if turn_of(r) == "judge").prompt_text
    for turn in state.turns:
        assert turn.text in judge_prompt
    assert state.verdict.scores and set(state.verdict.scores) == {"ada", "brook"}
    # The Anthropic request carried no temperature and the OpenAI one asked for usage in the stream.
    by_turn = {turn_of(r): r.body for r in server.model_requests}
    assert "temperature" not in by_turn[TURN_ORDER[1]]
    assert by_turn[TURN_ORDER[0]]["stream_options"] == {"include_usage": True}


# --- retryable faults: retried automatically, the debate completes -----------------------------

# Where a fault is injected: the first turn spoken over each protocol that has a finished turn before it.
FAULT_AT = {"openai": 2, "anthropic": 1}  # index into TURN_ORDER (pro/r2 and con/r1)


def enqueue_fault(server: FakeLLMServer, protocol: str, script: Script) -> int:
    """Queue `script` for the turn `FAULT_AT[protocol]` (plain replies before it); returns that index."""
    at = FAULT_AT[protocol]
    server.enqueue(*[Script() for _ in range(at)], script)
    return at


RETRYABLE_FAULTS: dict[str, tuple[Script, set[str]]] = {
    "429 with Retry-After": (Script.rate_limited(retry_after=0.05), {"rate_limit"}),
    "500": (Script.server_error(), {"server"}),
    "529 overloaded": (Script.overloaded(), {"overloaded"}),
    "cut mid-stream": (Script(text=f"{PARTIAL} alpha beta gamma delta", cut_after=2), {"connection"}),
    "clean end without terminal event": (Script(text=f"{PARTIAL} alpha beta", no_terminal=True), {"cut_stream"}),
    "in-stream error event": (
        Script(text=f"{PARTIAL} alpha beta", stream_error="overloaded_error", stream_error_after=1),
        {"overloaded"},
    ),
}


def collect_live(session: Any) -> list[LiveMessage]:
    seen: list[LiveMessage] = []
    session.subscribe(seen.append)
    return seen


def assert_cut_by_the_command(session: Any, live: list[LiveMessage]) -> None:
    """The held stream was cut by the command itself, at once: not by a time limit (which a command that
    waited for the stream would have ended with) and not retried. Said by what the session reports, not by
    a wall clock, which a busy machine stretches."""
    aborted = [m for m in live if isinstance(m, LiveTurnAborted)]
    assert aborted and not any("timed out" in m.reason for m in aborted), aborted
    assert not [n for n in session.state.notes if n.type == "retry"]


async def stored_text(engine: Engine, debate_id: str) -> str:
    return json.dumps([e.model_dump(mode="json") for e in await engine.events(debate_id)])


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", list(RETRYABLE_FAULTS))
async def test_retryable_fault_is_retried_and_the_debate_completes(
    server: FakeLLMServer, engine: Engine, protocol: str, fault: str
) -> None:
    script, reasons = RETRYABLE_FAULTS[fault]
    at = enqueue_fault(server, protocol, script)
    session = await engine.start(make_config(url=server.url))
    live = collect_live(session)
    await session.join()
    state = session.state
    assert_completed_intact(session, server)
    failed = TURN_ORDER[at]
    counts = request_counts(server)
    assert counts == every_call_once(twice=failed)
    # One retry note, naming the turn and the retryable error.
    [note] = [n for n in state.notes if n.type == "retry"]
    failed_turn = state.turns[at]
    assert note.turn == failed_turn.key and note.attempt == 1
    assert note.error.kind == "retryable" and note.error.reason in reasons, note
    assert failed_turn.attempt == 2
    assert state.errors == []
    # The cut attempt was announced as aborted and its partial text exists nowhere.
    aborted = [m for m in live if isinstance(m, LiveTurnAborted)]
    assert [m.key for m in aborted] == [failed_turn.key]
    if script.text:
        streamed = "".join(m.text for m in live if isinstance(m, LiveChunk) and m.key == failed_turn.key)
        assert PARTIAL in streamed  # it really was shown live before the failure …
        assert PARTIAL not in await stored_text(engine, session.id)  # … but never stored
        assert all(PARTIAL not in r.prompt_text for r in server.model_requests)  # nor shown to anyone
    starts = [m.attempt for m in live if isinstance(m, LiveTurnStarted) and m.key == failed_turn.key]
    assert starts == [1, 2]


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_slow_first_token_times_out_and_is_retried_once(
    server: FakeLLMServer, engine: Engine, protocol: str
) -> None:
    never = threading.Event()  # the first attempt's first token never comes
    at = FAULT_AT[protocol]
    # Held for that turn's request whatever arrives first: the 0.5 s limit applies to every call, and on a
    # loaded machine another call (the SDK's first use in the process) may miss it too and be retried.
    server.enqueue(Script(hold=never, matches=lambda request: turn_of(request) == TURN_ORDER[at]))
    session = await run_debate(engine, make_config(url=server.url))
    assert_completed_intact(session, server)
    await wait_for(server.client_left, "the timed-out request to be abandoned")
    assert request_counts(server)[TURN_ORDER[at]] == 2
    # The first-token limit (0.5 s) cut it, not the turn's (10 s): said by the note, not guessed from a
    # wall clock (the whole debate took 19 s under load, the SDK's first use in the process included).
    key = session.state.turns[at].key
    [note] = [n for n in session.state.notes if n.type == "retry" and n.turn == key]
    assert note.error.reason == "timeout"
    assert note.error.message == "timed out: no first token within the first-token timeout of 0.5 s"


async def test_timeout_twice_puts_the_debate_in_error_after_exactly_one_retry(
    server: FakeLLMServer, engine: Engine
) -> None:
    never = threading.Event()
    server.enqueue(Script(), Script.held(never), Script.held(never), Script.held(never))
    session = await run_debate(engine, make_config(url=server.url))
    state = session.state
    assert state.status is State.ERROR
    assert request_counts(server) == Counter({TURN_ORDER[0]: 1, TURN_ORDER[1]: 2})
    assert state.machine.context.error.reason == "timeout"
    assert [t.key for t in state.turns] == [state.turns[0].key] and len(state.turns) == 1
    assert server.pending_scripts == 1  # the third held script was never asked for
    server.reset()  # the server answers normally again
    await session.retry()
    await session.join()
    assert session.state.status is State.COMPLETED
    assert request_counts(server) == Counter({TURN_ORDER[1]: 1, TURN_ORDER[2]: 1, TURN_ORDER[3]: 1, "judge": 1})


async def test_persistent_server_errors_exhaust_the_automatic_retries(
    server: FakeLLMServer, engine: Engine
) -> None:
    server.enqueue(Script(), *[Script.server_error(message="upstream exploded") for _ in range(AUTO_RETRIES + 2)])
    session = await run_debate(engine, make_config(url=server.url))
    state = session.state
    assert state.status is State.ERROR
    assert request_counts(server)[TURN_ORDER[1]] == 1 + AUTO_RETRIES
    assert len([n for n in state.notes if n.type == "retry"]) == AUTO_RETRIES
    assert state.machine.context.error.message == "upstream exploded"
    assert state.machine.context.error.status == 500
    server.reset()
    await session.retry()
    await session.join()
    assert_completed_intact(session, server)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize(("retry_after", "expected_wait"), [(0.2, 0.2), (30, 0.3)])
async def test_retry_after_is_honoured_up_to_the_cap(
    server: FakeLLMServer, engine: Engine, settings: Settings, retry_after: float, expected_wait: float,
    protocol: str,
) -> None:
    assert settings.retry_after_cap == 0.3
    enqueue_fault(server, protocol, Script.rate_limited(retry_after=retry_after))
    started = time.monotonic()
    session = await run_debate(engine, make_config(url=server.url))
    assert_completed_intact(session, server)
    assert time.monotonic() - started < 5  # a 30 s Retry-After did not hold the debate for 30 s
    [note] = [n for n in session.state.notes if n.type == "retry"]
    assert note.error.retry_after == pytest.approx(float(retry_after))
    # At least what the server asked for (capped), plus a random jitter within the backoff (0.01 s),
    # never beyond the cap.
    assert expected_wait <= note.wait_s <= min(settings.retry_after_cap, expected_wait + 0.01)


# --- fatal errors: the debate waits in *error*, RETRY redoes only the failed turn ----------------

KEY_ECHO = OPENAI_KEY  # the configured key, echoed back by the server
FATAL_FAULTS = {
    "401": (Script.unauthorized(message="This key is not valid here; check your organisation."), 401),
    "404": (Script.model_not_found(message="No such model on this account: ask your admin."), 404),
    "400": (Script.bad_request(message="messages: too many tokens for this model (fake)."), 400),
}


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", list(FATAL_FAULTS))
async def test_fatal_error_keeps_the_transcript_and_retry_redoes_only_the_failed_turn(
    server: FakeLLMServer, engine: Engine, protocol: str, fault: str
) -> None:
    script, status = FATAL_FAULTS[fault]
    at = enqueue_fault(server, protocol, script)
    session = await run_debate(engine, make_config(url=server.url))
    state = session.state
    assert state.status is State.ERROR
    # No automatic retry of a fatal error: one request for the failed turn, nothing after it.
    assert request_counts(server) == Counter({key: 1 for key in TURN_ORDER[: at + 1]})
    error = state.machine.context.error
    assert error.message == script.error_message and error.status == status
    assert error.kind == "fatal" and error.provider == protocol
    assert state.errors[-1].message == script.error_message
    assert state.machine.context.position.speaker == ("ada" if protocol == "openai" else "brook")
    # The finished turns are intact, in memory and in the log.
    kept = [(t.key, t.text) for t in state.turns]
    assert len(kept) == at
    reloaded = await engine.store.events(session.id)
    assert [e.data["turn"]["key"] for e in reloaded if e.kind is EventKind.TURN] == [k for k, _ in kept]
    # The cause is fixed (the server answers normally now): RETRY continues from the failed turn.
    await session.retry()
    await session.join()
    assert_completed_intact(session, server)
    assert [(t.key, t.text) for t in session.state.turns[:at]] == kept
    assert request_counts(server) == every_call_once(twice=TURN_ORDER[at])
    assert session.state.machine.context.retries_used == 1


async def test_a_key_echoed_in_an_error_is_redacted(server: FakeLLMServer, engine: Engine) -> None:
    server.enqueue(Script.unauthorized(message=f"Incorrect API key provided: {KEY_ECHO}."))
    session = await run_debate(engine, make_config(url=server.url))
    assert session.state.status is State.ERROR
    assert session.state.machine.context.error.message == "Incorrect API key provided: ***."
    assert KEY_ECHO not in await stored_text(engine, session.id)


# --- pause and stop cancel the in-flight stream ------------------------------------------------


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_pause_cancels_the_stream_at_once_and_resume_redoes_the_turn(
    server: FakeLLMServer, engine: Engine, protocol: str
) -> None:
    gate = threading.Event()
    at = enqueue_fault(server, protocol, Script.held(gate))
    session = await engine.start(make_config(url=server.url))
    live = collect_live(session)
    await wait_for(server.holding, "the held turn to reach the server")
    assert session.live  # the turn is in flight
    await session.pause()
    await wait_for(server.client_left, "the client to drop the held stream")
    state = session.state
    assert state.status is State.PAUSED and not session.running
    assert len(state.turns) == at and session.live == {}
    assert_cut_by_the_command(session, live)
    gate.set()
    await session.resume()
    await session.join()
    assert_completed_intact(session, server)
    assert request_counts(server) == every_call_once(twice=TURN_ORDER[at])


async def test_stop_cancels_the_stream_and_the_judge_rules_on_finished_turns(
    server: FakeLLMServer, engine: Engine
) -> None:
    gate = threading.Event()
    server.enqueue(Script(), Script.held(gate))
    session = await engine.start(make_config(url=server.url))
    live = collect_live(session)
    await wait_for(server.holding, "the held turn to reach the server")
    await session.stop(verdict=True)
    await wait_for(server.client_left, "the client to drop the held stream")
    assert_cut_by_the_command(session, live)
    await session.join()
    state = session.state
    assert state.status is State.STOPPED and state.ended_because == "stopped by user"
    assert [f"{t.model}/r{t.round}" for t in state.turns] == TURN_ORDER[:1]
    assert state.verdict is not None and state.verdict.available
    assert request_counts(server) == Counter({TURN_ORDER[0]: 1, TURN_ORDER[1]: 1, "judge": 1})


async def test_the_network_guard_stops_a_debate_that_would_reach_a_real_provider(
    server: FakeLLMServer, engine: Engine
) -> None:
    config = make_config(url=server.url)
    config.participants[0].base_url = None  # the SDK's default: api.openai.com
    session = await run_debate(engine, config)
    assert session.state.status is State.ERROR
    assert "a test tried to reach api.openai.com" in session.state.machine.context.error.message
    assert server.model_requests == []
