"""The new-tournament form's figures: the cost range of a whole tournament is the sum of its debates'
ranges as the debate form estimates each (`engine.estimate`), a memo kept between edits of the topics
changes nothing, and the budget is weighed as the tournament weighs it (each debate's longest case)."""

from __future__ import annotations

import pytest

from webapp.engine.estimate import estimate_debate as debate_range
from webapp.settings import get_settings
from webapp.tournament.plan import (
    Contender,
    RangeMemo,
    Tournament,
    estimate_debate,
    estimate_range,
    schedule,
    slot_config,
)
from webapp.ui.components.badges import money
from webapp.ui.form.tournament_form import budget_note

MODELS = [Contender(provider="openai", model="gpt-4o-mini"), Contender(provider="openai", model="gpt-4o"),
          Contender(provider="anthropic", model="claude-sonnet-4-5")]


def plan(topics: list[str], budget: float | None = None) -> Tournament:
    return Tournament(models=MODELS, topics=topics, swap_sides=True, budget_usd=budget,
                      judge={"judges": [{"provider": "openai", "model": "gpt-4o-mini"}]})


def test_the_range_is_the_sum_of_the_debates_ranges_and_a_memo_changes_nothing() -> None:
    tournament = plan(["Tea or coffee?", "Cats or dogs, and why the question matters so much?"])
    ranges = [debate_range(slot_config(tournament, slot), get_settings()) for slot in schedule(tournament)]
    memo: RangeMemo = {}
    total = estimate_range(tournament, get_settings(), memo)
    assert total.low_usd == pytest.approx(sum(r.low_usd for r in ranges))
    assert total.high_usd == pytest.approx(sum(r.high_usd for r in ranges))
    assert total.turns_high == sum(r.turns_high for r in ranges)
    assert sorted(total.priced_models) == sorted(m.label for m in MODELS)
    assert len(memo) == 12  # 6 pairings (sides swapped) × 2 topic lengths
    longer = plan(["Tea or coffee?", "Cats or dogs, and why the question matters so much? Or neither?"])
    again = estimate_range(longer, get_settings(), memo)  # one topic edited: the other's debates are kept
    assert len(memo) == 18
    assert again.high_usd == pytest.approx(estimate_range(longer, get_settings()).high_usd)


def test_the_budget_is_weighed_against_each_debates_longest_case_and_the_range() -> None:
    topics = [f"Topic number {n}" for n in range(6)]
    estimate = estimate_range(plan(topics), get_settings())
    first = estimate_debate(plan(topics), schedule(plan(topics))[0], get_settings())
    assert first is not None and first < estimate.low_usd
    assert budget_note(plan(topics), estimate) == ""  # no budget, nothing to weigh
    assert budget_note(plan(topics, first / 2), estimate).endswith("no debate would start")
    assert "will not pay for every debate even at the low figure" in budget_note(plan(topics, first), estimate)
    between = (estimate.low_usd + estimate.high_usd) / 2
    assert budget_note(plan(topics, between), estimate).startswith(f" · {money(between)} may run out before")
    assert budget_note(plan(topics, estimate.high_usd * 2), estimate).startswith(
        " · the budget is checked before each debate against its longest case (up to $")


def test_a_demo_tournament_says_its_budget_counts_simulated_prices_and_may_run_out() -> None:
    # A $1 budget stopped a 12-debate demo tournament at 11 while the form's estimate said $0 (demo is free
    # in the estimate but counts at simulated prices against a budget): the note says both.
    demo = [Contender(provider="demo", model=m) for m in ("alpha", "beta", "gamma")]
    tournament = Tournament(models=demo, topics=["Tea or coffee?", "Cats or dogs?"], swap_sides=True,
                            budget_usd=1.0, judge={"judges": [{"provider": "demo", "model": "demo"}]})
    estimate = estimate_range(tournament, get_settings())
    longest = [estimate_debate(tournament, slot, get_settings()) or 0.0 for slot in schedule(tournament)]
    assert estimate.high_usd == 0 and sum(longest) > 1.0 > max(longest)
    note = budget_note(tournament, estimate)
    assert note.startswith(" · $1.00 may run out before the last debate")
    assert "count against it at their simulated prices" in note
    roomy = tournament.model_copy(update={"budget_usd": sum(longest) * 2})
    assert "may run out" not in budget_note(roomy, estimate)
