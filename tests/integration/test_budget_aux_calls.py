"""Calls besides turns (round decisions, judging) are checked against the cost limit before they are
made; a call that could cross it is not made and the debate ends as stopped: cost limit."""

from __future__ import annotations

from pathlib import Path

from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import Budget, DebateConfig, JudgeConfig, JudgeSpec, Participant
from webapp.providers.demo import OneProvider


def cheap_pair() -> list[Participant]:
    # A tiny output allowance keeps each turn's estimate small; the judge's is large.
    return [
        Participant(name="Ann", position="pro", max_tokens=16),
        Participant(name="Bob", position="con", max_tokens=16),
    ]


async def test_a_round_decision_that_could_cross_the_limit_is_not_made(tmp_path: Path) -> None:
    source = OneProvider()
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=source, backoff_base=0.01)
    try:
        session = await engine.start(DebateConfig(
            topic="Should juries be replaced by judges?", format="free-form", rounds=5, participants=cheap_pair(),
            budget=Budget(cost_limit=0.01),
        ))
        assert await session.join() is State.STOPPED
        state = session.state
        assert state.ended_because == "cost limit"
        assert [r.purpose for r in source.provider.received].count("round_check") == 0
        [warning] = [w for w in state.warnings if w["type"] == "cost_limit"]
        assert "round_check call could cost" in warning["message"]
        assert state.ledger.total_usd <= 0.01
        assert len(state.turns) == 2  # round one finished; nothing after the refused decision
    finally:
        await engine.close()


async def test_the_verdict_is_not_requested_when_it_could_cross_the_limit(tmp_path: Path) -> None:
    source = OneProvider()
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=source, backoff_base=0.01)
    try:
        session = await engine.start(DebateConfig(
            topic="Is chess a sport?", format="round-limited", rounds=1, participants=cheap_pair(),
            judge=JudgeConfig(judges=[JudgeSpec(max_tokens=64000)]), budget=Budget(cost_limit=0.05),
        ))
        assert await session.join() is State.COMPLETED
        verdict = session.state.verdict
        assert verdict is not None and not verdict.available and "cost limit" in verdict.reasoning
        assert [r.purpose for r in source.provider.received].count("verdict") == 0
    finally:
        await engine.close()
