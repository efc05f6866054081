"""The tournament as data: validation, the deterministic schedule with stable slot keys, each slot's
debate config, the cost estimate and the standings."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from webapp.engine.series import rematch_config
from webapp.store import DebateRow
from webapp.tournament.plan import Contender, Slot, Tournament, estimate_debate, schedule, slot_config
from webapp.tournament.runner import standings
from webapp.tournament.store import SlotDebate

MODELS = [Contender.parse(m) for m in ("alpha", "openai:gpt-4o-mini", "demo:gamma")]


def plan(**kwargs: object) -> Tournament:
    data: dict[str, object] = {"models": MODELS, "topics": ["One", "Two"], "format": "round-limited", "rounds": 1}
    data.update(kwargs)
    return Tournament.model_validate(data)


def test_contenders_parse_provider_and_model() -> None:
    assert (MODELS[0].provider, MODELS[0].model, MODELS[0].label) == ("demo", "alpha", "demo:alpha")
    assert (MODELS[1].provider, MODELS[1].model) == ("openai", "gpt-4o-mini")
    with pytest.raises(ValidationError):
        Contender.parse("nosuch:model")


def test_a_tournament_refuses_what_cannot_be_played() -> None:
    with pytest.raises(ValidationError, match="at least 2"):
        plan(models=MODELS[:1])
    with pytest.raises(ValidationError, match="once"):
        plan(models=[MODELS[0], MODELS[0]])
    with pytest.raises(ValidationError, match="topic"):
        plan(topics=["  ", ""])
    with pytest.raises((ValidationError, KeyError)):
        plan(format="no-such-format")
    assert plan().name == "3 models × 2 topics"


def test_the_schedule_is_a_round_robin_with_return_matches() -> None:
    once = schedule(plan())
    assert [s.key for s in once] == ["t0-m0-m1", "t0-m0-m2", "t0-m1-m2", "t1-m0-m1", "t1-m0-m2", "t1-m1-m2"]
    twice = schedule(plan(swap_sides=True))
    assert len(twice) == 12 and len({s.key for s in twice}) == 12
    assert twice[:2] == [Slot(0, 0, 1, False), Slot(0, 0, 1, True)]
    assert (twice[1].pro, twice[1].con) == (1, 0)  # the return match: sides exchanged
    assert schedule(plan(swap_sides=True)) == twice  # deterministic


def test_a_slots_debate_names_its_tournament_and_slot() -> None:
    tournament = plan(swap_sides=True).model_copy(update={"id": "abc123"})
    config = slot_config(tournament, Slot(1, 0, 2, True), cost_limit=0.5)
    assert (config.tournament, config.tournament_slot) == ("abc123", "t1-m0-m2-s")
    assert config.topic == "Two" and not config.clarification
    assert [(p.position, p.provider, p.model) for p in config.participants] == [
        ("pro", "demo", "gamma"), ("con", "demo", "alpha")]
    assert config.budget.cost_limit == 0.5
    rematch = rematch_config(config, "d1")  # a rematch is not a second debate for the slot
    assert (rematch.tournament, rematch.tournament_slot, rematch.series) == (None, None, "d1")


def test_the_estimate_grows_with_the_turns_and_needs_prices() -> None:
    one_round = estimate_debate(plan(models=[MODELS[0], MODELS[2]]), Slot(0, 0, 1, False))
    three = estimate_debate(plan(models=[MODELS[0], MODELS[2]], rounds=3), Slot(0, 0, 1, False))
    assert one_round is not None and three is not None and 0 < one_round < three
    unpriced = plan(models=[MODELS[0], Contender(provider="compatible", model="x", base_url="https://llm.example")])
    assert estimate_debate(unpriced, Slot(0, 0, 1, False)) is None


def _debate(slot: str, pro: str, con: str, winner: str | None, status: str = "completed",
            verdict: bool = True) -> SlotDebate:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    row = DebateRow(id=slot, topic="t", format="classic", status=status, created_at=now, updated_at=now,
                    participants=[{"id": "p", "provider": "demo", "model": pro},
                                  {"id": "c", "provider": "demo", "model": con}])
    return SlotDebate(slot=slot, row=row, winner=winner, has_verdict=verdict)


def test_standings_count_wins_losses_and_ties() -> None:
    tournament = plan(models=MODELS[:1] + MODELS[2:])  # demo:alpha, demo:gamma
    debates = {d.slot: d for d in (
        _debate("a", "alpha", "gamma", "p"), _debate("b", "gamma", "alpha", "p"), _debate("c", "alpha", "gamma", None),
        _debate("d", "alpha", "gamma", "p", status="debating"), _debate("e", "alpha", "gamma", None, verdict=False))}
    table = {s.label: (s.wins, s.losses, s.ties) for s in standings(tournament, debates)}
    assert table == {"demo:alpha": (1, 1, 1), "demo:gamma": (1, 1, 1)}
