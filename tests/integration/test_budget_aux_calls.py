"""Calls besides turns (round decisions, judging) are sized to the money left before they are made,
like turns: capped when a shorter answer fits, refused only when not even a minimal one does (the
debate then ends as stopped: cost limit). A verdict, useless when cut short, must fit whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from webapp.engine import budget as money
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import Budget, DebateConfig, JudgeConfig, JudgeSpec, Participant
from webapp.providers.base import ProviderRequest, estimate_request_tokens
from webapp.providers.demo import OneProvider
from webapp.settings import Settings

SETTINGS = Settings(_env_file=None)
TOPIC = "Should juries be replaced by judges?"


def cheap_pair() -> list[Participant]:
    # A tiny output allowance keeps each turn's estimate small; the judge's is large.
    return [
        Participant(name="Ann", position="pro", max_tokens=16),
        Participant(name="Bob", position="con", max_tokens=16),
    ]


def free_form(limit: float | None) -> DebateConfig:
    return DebateConfig(topic=TOPIC, format="free-form", rounds=5, participants=cheap_pair(),
                        budget=Budget(cost_limit=limit))


async def run(tmp_path: Path, name: str, config: DebateConfig) -> tuple[Any, list[ProviderRequest]]:
    source = OneProvider()
    db = tmp_path / f"{name}.sqlite3"
    engine = await Engine.open(db, settings=Settings(_env_file=None, db=db), providers=source, backoff_base=0.01)
    try:
        session = await engine.start(config)
        await session.join()
        return session.state, source.provider.received
    finally:
        await engine.close()


async def first_round(tmp_path: Path) -> tuple[float, ProviderRequest]:
    """Without a limit: what round one's turns cost, and the round decision asked after them."""
    state, received = await run(tmp_path, "free", free_form(None))
    spent = sum(t.cost_usd or 0.0 for t in state.turns if t.round == 1)
    return spent, next(r for r in received if r.purpose == "round_check")


def round_check_cost(request: ProviderRequest, output_tokens: int) -> float:
    judge = JudgeSpec()
    return money.estimate_call(judge, estimate_request_tokens(request), output_tokens, SETTINGS).usd or 0.0


async def test_a_round_decision_is_capped_to_the_money_left(tmp_path: Path) -> None:
    spent, check = await first_round(tmp_path)
    assert check.max_tokens == 800
    limit = spent + round_check_cost(check, 300)  # the full 800 tokens do not fit, 300 do
    state, received = await run(tmp_path, "limited", free_form(limit))
    asked = [r for r in received if r.purpose == "round_check"]
    assert asked and 64 <= asked[0].max_tokens < 800  # made, with a smaller allowance
    assert 1 in state.round_decisions
    assert state.ledger.total_usd <= limit


async def test_a_round_decision_that_cannot_fit_a_minimal_answer_is_not_made(tmp_path: Path) -> None:
    spent, check = await first_round(tmp_path)
    limit = spent + round_check_cost(check, 64) / 2  # round one fits; not even 64 tokens of a decision do
    state, received = await run(tmp_path, "limited", free_form(limit))
    assert state.status is State.STOPPED and state.ended_because == "cost limit"
    assert [r.purpose for r in received].count("round_check") == 0
    [warning] = [w for w in state.warnings if w.type == "cost_limit"]
    assert warning.message.startswith("stopped: the round_check call could not fit in the remaining $")
    assert "64-token answer" in warning.message
    assert state.ledger.total_usd <= limit
    assert len(state.turns) == 2  # round one finished; nothing after the refused decision


async def test_the_verdict_is_not_requested_when_it_could_cross_the_limit(tmp_path: Path) -> None:
    state, received = await run(tmp_path, "verdict", DebateConfig(
        topic="Is chess a sport?", format="round-limited", rounds=1, participants=cheap_pair(),
        judge=JudgeConfig(judges=[JudgeSpec(max_tokens=64000)]), budget=Budget(cost_limit=0.05),
    ))
    assert state.status is State.COMPLETED
    verdict = state.verdict
    assert verdict is not None and not verdict.available and "cost limit" in verdict.reasoning
    assert [r.purpose for r in received].count("verdict") == 0
