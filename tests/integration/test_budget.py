"""Money in whole debates against the local fake LLM server: warn-at, the judge's own estimate under
the hard limit, unpriced models, local servers at $0, the settings' price override table and demo
prices. (How the hard limit caps calls, and what cut-off calls cost: test_budget_money.py.)

The server reports exact usage per call (`Script(input_tokens=…, output_tokens=…)`), so every figure
below is computed independently from genai-prices or the override table and compared.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import FakeLLMServer, RecordedRequest, Script
from tests.provider_helpers import genai_cost, open_engine, register_in_store, round_of, use_fake_keys, verdict_json
from webapp.engine import budget as money
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import Budget, DebateConfig, EventKind, JudgeConfig, JudgeSpec, Participant, Usage
from webapp.providers.endpoints import Endpoint
from webapp.settings import PriceOverride, Settings
from webapp.store.endpoints import EndpointStore

MODEL = "gpt-4o-mini"
CRITERIA = ["clarity"]
VERDICT_JSON = verdict_json("B", {"A": 55, "B": 66}, CRITERIA, "B was clearer.", 0.6)
SPEAKER = re.compile(r"^You are (\w+),")
# Every debate turn below reports this usage: 200 in, 1000 out (at most the turn's max_tokens).
TURN_IN, TURN_OUT = 200, 1000


def call_of(request: RecordedRequest) -> str:
    """`<speaker>/r<round>` for a debate turn, `judge` for the verdict request."""
    if request.wants_json:
        return "judge"
    speaker = SPEAKER.match(str(request.body.get("messages", [{}])[0].get("content", "")))
    assert speaker, request.prompt_text[:300]
    return f"{speaker.group(1)}/r{round_of(request)}"


def counts(server: FakeLLMServer) -> Counter[str]:
    return Counter(call_of(r) for r in server.model_requests)


TURN_COST = genai_cost(MODEL, "openai", TURN_IN, TURN_OUT)


def participant(name: str, position: str, url: str, **kwargs: Any) -> Participant:
    fields: dict[str, Any] = {"name": name, "provider": "openai", "model": MODEL, "position": position,
                              "base_url": f"{url}/v1", "max_tokens": TURN_OUT}
    fields.update(kwargs)
    return Participant(**fields)


def make_config(url: str, *, rounds: int = 2, budget: Budget | None = None,
                judge: JudgeSpec | None = None, participants: list[Participant] | None = None) -> DebateConfig:
    return DebateConfig(
        topic="Remote work beats the office",
        format="round-limited",
        rounds=rounds,
        participants=participants or [participant("Ada", "pro", url), participant("Brook", "con", url)],
        judge=JudgeConfig(
            judges=[judge or JudgeSpec(provider="openai", model="gpt-4o", base_url=f"{url}/v1")],
            criteria=CRITERIA,
        ),
        budget=budget or Budget(),
    )


def turn_scripts(n: int) -> list[Script]:
    return [Script(input_tokens=TURN_IN, output_tokens=TURN_OUT) for _ in range(n)]


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def dummy_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_fake_keys(monkeypatch, tmp_path, OPENAI_API_KEY="fake-openai-key-0000",
                  OPENROUTER_API_KEY="fake-openrouter-key-0000", ROSTRUM_DEMO_SPEED="0")
    monkeypatch.delenv("ROSTRUM_DEMO_FAIL", raising=False)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(json_reply=VERDICT_JSON) as fake:
        yield fake


@pytest.fixture
async def engine(tmp_path: Path, server: FakeLLMServer) -> AsyncIterator[Engine]:
    eng = await open_engine(tmp_path)
    await register_in_store(eng.store, server.url)  # the keys go only to registered endpoints
    try:
        yield eng
    finally:
        await eng.close()


def transitions(state: Any, event: str) -> int:
    return sum(1 for t in state.transitions if t.event == event)


# --- warn-at ------------------------------------------------------------------------------------


async def test_warn_at_fires_exactly_once_even_as_spending_keeps_rising(
    server: FakeLLMServer, engine: Engine
) -> None:
    server.enqueue(*turn_scripts(4))
    warn_at = TURN_COST * 1.5  # the second turn's estimate would cross it; its actual cost does
    session = await engine.start(make_config(server.url, budget=Budget(warn_at=warn_at)))
    assert await session.join() is State.AWAITING_ACK
    state = session.state
    # a spending threshold: the warning comes once the money spent has reached warn-at
    assert len(state.turns) == 2 and state.ledger.total_usd == pytest.approx(2 * TURN_COST)
    assert sum(counts(server).values()) == 2  # nothing is requested while the warning waits
    [warning] = state.warnings
    assert warning.type == "cost_warning" and warning.warn_at == warn_at
    assert warning.spent_usd == pytest.approx(2 * TURN_COST) and "spending reached" in warning.message
    await session.acknowledge_warning()
    assert await session.join() is State.COMPLETED
    state = session.state
    assert state.ledger.total_usd > 4 * TURN_COST > warn_at  # kept rising after the acknowledgement
    assert [w.type for w in state.warnings] == ["cost_warning"]
    assert transitions(state, "COST_WARNING") == 1 and transitions(state, "ACKNOWLEDGE_WARNING") == 1
    stored = await engine.events(session.id)
    assert sum(1 for e in stored if e.kind is EventKind.WARNING) == 1
    assert state.verdict is not None and state.verdict.available


async def test_warn_at_survives_a_reload_and_does_not_fire_again(server: FakeLLMServer, tmp_path: Path) -> None:
    server.enqueue(*turn_scripts(4))
    engine = await open_engine(tmp_path)
    await register_in_store(engine.store, server.url)
    session = await engine.start(make_config(server.url, budget=Budget(warn_at=TURN_COST / 2)))
    assert await session.join() is State.AWAITING_ACK
    debate_id = session.id
    await engine.close()
    engine = await open_engine(tmp_path)  # a restart: the warning is known from the log
    try:
        session = await engine.session(debate_id)
        assert session.state.status is State.AWAITING_ACK and session.state.cost_warned
        await session.acknowledge_warning()
        assert await session.join() is State.COMPLETED
        assert [w.type for w in session.state.warnings] == ["cost_warning"]
        assert transitions(session.state, "COST_WARNING") == 1
    finally:
        await engine.close()


# --- the hard limit -----------------------------------------------------------------------------


async def test_judge_is_skipped_at_the_end_when_its_estimate_does_not_fit(
    server: FakeLLMServer, engine: Engine
) -> None:
    server.enqueue(*turn_scripts(2))
    limit = 2.5 * TURN_COST
    session = await engine.start(make_config(server.url, rounds=1, budget=Budget(cost_limit=limit)))
    assert await session.join() is State.COMPLETED
    state = session.state
    assert counts(server) == Counter({"Ada/r1": 1, "Brook/r1": 1})  # no judge request
    assert state.verdict is not None and not state.verdict.available
    assert "does not fit under the cost limit" in state.verdict.reasoning
    assert state.ledger.total_usd <= limit


# --- unpriced, local, overrides, demo ----------------------------------------------------------


async def test_unpriced_models_are_reported_never_guessed(server: FakeLLMServer, engine: Engine) -> None:
    url = server.url
    server.enqueue(*turn_scripts(2), Script(input_tokens=900, output_tokens=80))
    people = [
        participant("Ada", "pro", url, model="gpt-imaginary-9"),  # OpenAI model genai-prices does not know
        participant("Brook", "con", url, provider="compatible", preset="openrouter", model="acme/unknown-model",
                    base_url=f"{url}/v1"),  # a hosted service's unknown model (behind a local URL here)
    ]
    session = await engine.start(make_config(url, rounds=1, participants=people))
    assert await session.join() is State.COMPLETED
    state = session.state
    assert [t.cost_usd for t in state.turns] == [None, None]
    assert state.ledger.unpriced_models == {"openai:gpt-imaginary-9", "compatible:acme/unknown-model"}
    judge_cost = genai_cost("gpt-4o", "openai", 900, 80)
    assert state.ledger.total_usd == pytest.approx(judge_cost)  # only the priced judge is counted
    assert state.ledger.tokens_by_model["openai:gpt-imaginary-9"]["output_tokens"] == TURN_OUT
    stored = await engine.events(session.id)
    assert [e.data["cost_source"] for e in stored if e.kind is EventKind.TURN] == ["unpriced", "unpriced"]


async def test_a_hosted_preset_is_priced_by_its_service(server: FakeLLMServer, engine: Engine) -> None:
    url = server.url
    server.enqueue(*turn_scripts(2))
    # The fake server stands in for OpenRouter: registered (under another name) with OpenRouter's key.
    stand_in = f"http://localhost:{server.port}"
    await EndpointStore(engine.store).add(
        Endpoint(name="OpenRouter stand-in", base_url=f"{stand_in}/v1", key_env="OPENROUTER_API_KEY"), "admin")
    people = [
        participant("Ada", "pro", stand_in, provider="compatible", preset="openrouter", model="openai/gpt-4o-mini"),
        participant("Brook", "con", url),
    ]
    session = await engine.start(make_config(url, rounds=1, participants=people))
    assert await session.join() is State.COMPLETED
    ada = session.state.turns[0]
    assert ada.cost_usd == pytest.approx(genai_cost("openai/gpt-4o-mini", "openrouter", TURN_IN, TURN_OUT))
    assert server.model_requests[0].headers["authorization"] == "Bearer fake-openrouter-key-0000"


async def test_local_compatible_servers_cost_nothing(server: FakeLLMServer, engine: Engine) -> None:
    url = server.url
    server.enqueue(*turn_scripts(2), Script(input_tokens=900, output_tokens=80))
    people = [participant(n, pos, url, provider="compatible", model="llama3.2") for n, pos in
              (("Ada", "pro"), ("Brook", "con"))]
    judge = JudgeSpec(provider="compatible", model="llama3.2", base_url=f"{url}/v1")
    session = await engine.start(make_config(url, rounds=1, participants=people, judge=judge))
    assert await session.join() is State.COMPLETED
    state = session.state
    assert [t.cost_usd for t in state.turns] == [0.0, 0.0]
    assert state.ledger.total_usd == 0.0 and state.ledger.unpriced_models == set()
    assert state.ledger.tokens_by_model["compatible:llama3.2"]["calls"] == 3  # two turns and the judge
    stored = await engine.events(session.id)
    assert {e.data["cost_source"] for e in stored if e.kind is EventKind.TURN} == {"local"}
    assert "authorization" in server.model_requests[0].headers  # a dummy key is sent; none is needed


async def test_price_override_table_from_settings(server: FakeLLMServer, tmp_path: Path) -> None:
    url = server.url
    override = PriceOverride(input_per_mtok=2.0, output_per_mtok=8.0)
    settings = Settings(db=tmp_path / "db.sqlite3", price_overrides={"llama3.2": override, MODEL: override})
    server.enqueue(*turn_scripts(2))
    people = [participant("Ada", "pro", url, provider="compatible", model="llama3.2"),  # local, yet priced
              participant("Brook", "con", url)]  # genai-prices knows it, the override wins
    engine = await open_engine(tmp_path, settings)
    await register_in_store(engine.store, url)
    try:
        session = await engine.start(make_config(url, rounds=1, participants=people))
        assert await session.join() is State.COMPLETED
        expected = (TURN_IN * 2.0 + TURN_OUT * 8.0) / 1_000_000
        assert [t.cost_usd for t in session.state.turns] == [pytest.approx(expected)] * 2
        stored = await engine.events(session.id)
        assert [e.data["cost_source"] for e in stored if e.kind is EventKind.TURN] == ["override", "override"]
    finally:
        await engine.close()


def test_price_overrides_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_PRICE_OVERRIDES", json.dumps({"my-model": {"input_per_mtok": 1.5,
                                                                           "output_per_mtok": 4}}))
    settings = Settings()
    spec = Participant(provider="compatible", model="my-model", base_url="http://127.0.0.1:1/v1")
    cost = money.cost_of(spec, Usage(input_tokens=1_000_000, output_tokens=500_000), settings)
    assert cost == money.Cost(1.5 + 2.0, "override")


async def test_demo_prices_are_labelled_simulated(engine: Engine) -> None:
    config = DebateConfig(topic="Tea beats coffee", format="round-limited", rounds=1,
                          participants=[Participant(name="Ada", position="pro"),
                                        Participant(name="Brook", position="con")])
    session = await engine.start(config)
    assert await session.join() is State.COMPLETED
    state = session.state
    assert state.ledger.simulated and state.ledger.total_usd > 0
    input_rate, output_rate = money.SIMULATED_PRICES["demo:*"]  # the built-in price table, not the demo's
    for turn in state.turns:
        expected = (turn.usage.input_tokens * input_rate + turn.usage.output_tokens * output_rate) / 1_000_000
        assert turn.cost_usd == pytest.approx(expected)
    stored = await engine.events(session.id)
    assert {e.data["cost_source"] for e in stored if e.kind is EventKind.TURN} == {"simulated"}
    assert state.ledger.to_dict()["simulated"] is True
