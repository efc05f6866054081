""""Draft with a model" on a human seat obeys the debate's money rules like any model call, against the
fake LLM server with real prices (genai-prices): the hard limit refuses a draft that cannot fit (no
request is made, the debate keeps waiting for the person) and caps one that fits only in part; the
draft's cost is counted on the debate; and once spending reaches warn-at the draft says so, and the
debate asks for an OK before its next model call."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.fakellm import FakeLLMServer, Script
from tests.provider_helpers import genai_cost, open_engine, register_in_store, use_fake_keys
from webapp.engine.api import Command
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.spending import DraftRefused
from webapp.models import Budget, DebateConfig, JudgeConfig, JudgeSpec, Participant

MODEL = "gpt-4o-mini"
MAX_TOKENS = 1000


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_fake_keys(monkeypatch, tmp_path, OPENAI_API_KEY="fake-openai-key-0000", ROSTRUM_DEMO_SPEED="0")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture
async def engine(tmp_path: Path, server: FakeLLMServer) -> AsyncIterator[Engine]:
    eng = await open_engine(tmp_path)
    await register_in_store(eng.store, server.url)  # the key may go to the fake server
    try:
        yield eng
    finally:
        await eng.close()


def config(url: str, budget: Budget, judged: bool = False) -> DebateConfig:
    """Ada (a person, seat "ada") speaks first against a priced model."""
    return DebateConfig(
        topic="Cities should ban private cars from their centres", format="round-limited", rounds=2,
        clarification=False,
        participants=[
            Participant(name="Ada", provider="human", position="pro", seat="ada", max_tokens=MAX_TOKENS),
            Participant(name="Brook", provider="openai", model=MODEL, position="con", base_url=f"{url}/v1",
                        max_tokens=MAX_TOKENS),
        ],
        judge=JudgeConfig(enabled=judged, judges=[JudgeSpec(provider="openai", model="gpt-4o", base_url=f"{url}/v1")]),
        budget=budget,
    )


async def test_the_hard_limit_refuses_a_draft_that_cannot_fit_and_the_debate_waits_on(
    engine: Engine, server: FakeLLMServer
) -> None:
    session = await engine.start(config(server.url, Budget(cost_limit=0.000001)))
    assert await session.join() is State.AWAITING_TURN  # the person speaks first: nothing spent yet
    with pytest.raises(DraftRefused, match=r"budget: the draft call could not fit in the remaining \$0\.0000"):
        await session.draft_seat_turn(f"openai:{MODEL}", "ada", lambda _: None)
    assert server.model_requests == []  # refused before any request
    assert session.status is State.AWAITING_TURN and session.state.ledger.total_usd == 0.0
    await session.send(Command.SEND_TURN, actor="ada", text="Written by hand.")  # the person can still write
    assert any(t.text == "Written by hand." for t in session.state.turns)


async def test_a_draft_is_capped_to_the_money_left_and_its_cost_is_counted(
    engine: Engine, server: FakeLLMServer
) -> None:
    limit = 0.0005  # room for a few hundred of gpt-4o-mini's output tokens, not for MAX_TOKENS
    session = await engine.start(config(server.url, Budget(cost_limit=limit)))
    assert await session.join() is State.AWAITING_TURN
    server.enqueue(Script(text="Cars choke the centre; buses and bikes move more people.", input_tokens=300,
                          output_tokens=40))
    made = await session.draft_seat_turn(f"openai:{MODEL}", "ada", lambda _: None)
    asked = int(server.model_requests[-1].body["max_completion_tokens"])
    assert 64 <= asked < MAX_TOKENS  # sized to what the limit leaves
    assert made.warning is not None and f"capped at {asked} tokens (of {MAX_TOKENS})" in made.warning
    assert made.text.startswith("Cars choke the centre")
    cost = genai_cost(MODEL, "openai", 300, 40)
    assert session.state.ledger.total_usd == pytest.approx(cost)  # counted on the debate
    assert session.status is State.AWAITING_TURN  # nothing was sent


async def test_warn_at_warns_on_a_draft_and_the_debate_asks_before_its_next_call(
    engine: Engine, server: FakeLLMServer
) -> None:
    session = await engine.start(config(server.url, Budget(warn_at=0.00001)))
    assert await session.join() is State.AWAITING_TURN
    server.enqueue(Script(text="A drafted opening.", input_tokens=300, output_tokens=200))
    made = await session.draft_seat_turn(f"openai:{MODEL}", "ada", lambda _: None)
    cost = genai_cost(MODEL, "openai", 300, 200)
    assert cost > 0.00001 and session.state.ledger.total_usd == pytest.approx(cost)
    assert made.warning is not None and "at or above the $0.0000 warning threshold" in made.warning
    assert "wait for an OK before its next model call" in made.warning
    assert session.status is State.AWAITING_TURN  # the draft itself does not move the debate
    requests = len(server.model_requests)
    await session.send(Command.SEND_TURN, actor="ada", text=made.text, assisted_by=made.model)
    assert await session.join() is State.AWAITING_ACK  # the warning, before Brook's turn is asked for
    assert len(server.model_requests) == requests
    warning = next(w for w in session.state.warnings if w.type == "cost_warning")
    assert warning.spent_usd == pytest.approx(cost)
