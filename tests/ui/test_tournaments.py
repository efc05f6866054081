"""Tournament pages with the `user` fixture: the form creates a tournament that plays in the app's
background, and the tournament page shows its progress, cost, live debates, standings and its own
leaderboard."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path

import pytest
from nicegui import ui
from nicegui.testing import User

from tests.leaderboard_corpus import store_result
from tests.ui.helpers import engine, one
from tests.ui.test_access import add_users, signed_in
from tests.ui.test_leaderboard_page import table_rows
from tests.ui.test_not_found import page_elements
from webapp.access.roles import LOCAL
from webapp.engine.formats import FORMATS
from webapp.models import EventKind, JudgeRuling, Verdict
from webapp.results.leaderboard import LeaderboardFilters, leaderboard
from webapp.settings import get_settings
from webapp.store.migrations import migrate
from webapp.store.protocol import EventStore
from webapp.tournament.plan import (
    Contender,
    Slot,
    Tournament,
    estimate_debate,
    estimate_range,
    schedule,
    slot_config,
)
from webapp.tournament.runner import budget_words
from webapp.tournament.store import TournamentStore
from webapp.ui import runtime
from webapp.ui.auth import gate as auth_gate
from webapp.ui.components.badges import money

HOSTILE = "<img src=x onerror=alert(1)> Should cities ban cars?"


async def finished(tournament_id: str) -> str:
    """The tournament's status once the app's background has finished playing it."""
    manager = await runtime.current().tournaments()
    entry = manager.runners.get(tournament_id)
    if entry is not None:
        await asyncio.wait_for(asyncio.shield(entry[1]), timeout=120)
    row = await TournamentStore((await engine()).store).get(tournament_id)
    assert row is not None
    return row.status


async def test_the_form_creates_a_tournament_that_plays_to_the_end(user: User) -> None:
    await user.open("/")
    assert '<a href="/tournaments" ' in one(user, "navigation").content
    await user.open("/tournaments")
    await user.should_see(marker="no-tournaments", retries=50)
    user.find(marker="new-tournament").click()
    await user.should_see(marker="tournament-form", retries=50)
    user.find(marker="field-topics").type("Cities should ban private cars\nHomework should be abolished")
    with user:
        one(user, "field-format").value = "round-limited"
    await user.should_see(marker="format-card-round-limited", retries=50)  # the card, re-rendered for it
    rounds = one(user, "field-rounds")
    assert rounds.props["label"] == "Rounds"  # a whole label, not "Rounds (format default if empty)" cut short
    assert rounds.props["placeholder"] == str(FORMATS["round-limited"].termination.default_rounds)  # its default
    assert "stack-label" in rounds.props  # the default shows in the empty field, below its label
    with user:
        rounds.value = 1
    # Before starting: how many debates, and what they may cost, as the debate form says it (3 models, 2
    # topics, sides swapped): demo models cost nothing.
    assert one(user, "cost-estimate").text == "12 debates · estimated cost Free"
    note = one(user, "cost-estimate-note").text
    assert re.fullmatch(r"In all: \d+ turns, 12 judge calls; demo and local models cost nothing", note), note
    user.find(marker="start").click()
    await user.should_see(marker="tournament-progress", retries=50)

    rows = await TournamentStore((await engine()).store).all()
    assert len(rows) == 1
    tournament = rows[0].tournament
    assert [m.label for m in tournament.models] == ["demo:alpha", "demo:beta", "demo:gamma"]
    assert tournament.topics == ["Cities should ban private cars", "Homework should be abolished"]
    assert tournament.swap_sides and tournament.created_by  # the form's default; who started it is kept
    assert await finished(tournament.id) == "completed"
    debates = await TournamentStore((await engine()).store).debates(tournament.id)
    assert sorted(debates) == sorted(slot.key for slot in schedule(tournament))

    await user.open(f"/tournaments/{tournament.id}")
    assert one(user, "tournament-done").text == "Debates done: 12 / 12"
    await user.should_see(marker="tournament-status-completed", retries=50)
    assert one(user, "tournament-cost").text.startswith("Cost so far: $")
    table = next(e for e in one(user, "standings-table").descendants(include_self=True) if isinstance(e, ui.table))
    assert sorted(r["model"] for r in table.rows) == ["demo:alpha", "demo:beta", "demo:gamma"]
    assert sum(r["played"] for r in table.rows) == 2 * 12
    assert len(list(user.find(marker="tournament-slot").elements)) == 12

    await user.open("/tournaments")
    await user.should_see(marker=f"tournament-link-{tournament.id}")
    await user.open(f"/debate/{debates['t0-m0-m1'].row.id}")  # each debate links back to its tournament
    assert one(user, "tournament-link").props["href"] == f"/tournaments/{tournament.id}"


async def test_the_form_names_what_is_wrong_at_its_field(user: User) -> None:
    await user.open("/tournaments/new")
    user.find(marker="start").click()  # no topics
    await user.should_see(marker="t-error", retries=50)
    assert one(user, "t-error").text.startswith("Topics: ")
    assert one(user, "field-topics").error  # at the field too
    user.find(marker="field-topics").type("Tea or coffee?")
    with user:
        one(user, "field-models[1].model").value = "alpha"  # the same model twice
    user.find(marker="start").click()
    await user.should_see("each model may take part once", retries=50)
    assert await TournamentStore((await engine()).store).all() == []


async def test_the_form_estimates_a_priced_tournament_as_a_range_and_weighs_the_budget(user: User) -> None:
    await user.open("/tournaments/new")
    user.find(marker="field-topics").type("Tea or coffee?")
    for index in (0, 1):  # the debate form's provider and model inputs, and its model picker
        with user:
            one(user, f"field-models[{index}].provider").value = "openai"
        # the row rebuilt for it: no key is set for OpenAI here, so its note shows (an estimate needs none)
        await user.should_see(marker=f"missing-key-models[{index}]", retries=50)
    assert one(user, "field-models[0].model").value == "gpt-4o-mini"  # the provider's default, not "alpha"
    user.find(marker="pick-model-models[1]").click()
    await user.should_see(marker="model-option-models[1]-gpt-4o", retries=50)
    user.find(marker="model-option-models[1]-gpt-4o").click()
    assert one(user, "field-models[1].model").value == "gpt-4o"

    form = one(user, "tournament-form")
    plan = Tournament(models=[Contender(provider="openai", model="gpt-4o-mini"),
                              Contender(provider="openai", model="gpt-4o"), Contender.parse("demo:gamma")],
                      topics=["Tea or coffee?"], swap_sides=True)
    expected = estimate_range(plan, get_settings())
    assert 0 < expected.low_usd < expected.high_usd
    assert one(user, "cost-estimate").text == f"6 debates · estimated cost {expected.label}"  # low – high
    assert " – " in expected.label and form is not None
    # The budget weighed as the tournament will weigh it: before each debate, against its longest case.
    first = estimate_debate(plan, schedule(plan)[0], get_settings())
    assert first is not None and expected.low_usd < first < expected.high_usd
    with user:
        one(user, "field-budget_usd").value = first / 2
    assert one(user, "cost-estimate-note").text.endswith(
        f" · {money(first / 2)} is less than the first debate's longest case ({money(first)}): no debate would start")
    with user:
        one(user, "field-budget_usd").value = (first + expected.high_usd) / 2
    assert "may run out before the last debate; the budget is checked before each debate against its " \
           "longest case (up to $" in one(user, "cost-estimate-note").text
    with user:
        one(user, "field-budget_usd").value = 100
    assert "may run out" not in one(user, "cost-estimate-note").text


async def test_the_tournament_page_shows_a_stopped_tournament_safely(user: User) -> None:
    store = TournamentStore((await engine()).store)
    plan = Tournament(name="<b>bold</b> cup", models=[Contender.parse("a"), Contender.parse("b")], topics=[HOSTILE],
                      format="round-limited", rounds=1, budget_usd=0.0001)
    stored = await store.create(plan)
    (await runtime.current().tournaments()).start(stored.id, actor="tester")
    assert await finished(stored.id) == "stopped"  # not even one debate fits in the budget

    await user.open(f"/tournaments/{stored.id}")
    assert one(user, "tournament-name").text == "<b>bold</b> cup"  # shown as text, never as markup
    reason = one(user, "tournament-reason").text
    assert reason.startswith("Stopped: budget reached: the next debate may cost up to $")
    assert reason.endswith("and of the $0.0001 budget $0.0000 is spent and $0.0001 is left")  # figures named
    assert one(user, "tournament-done").text == "Debates done: 0 / 1"
    assert one(user, "tournament-cost").text == "Budget $0.0001: spent $0 · left $0.0001"
    estimate = estimate_debate(plan, schedule(plan)[0])
    assert estimate is not None
    assert one(user, "tournament-add").text == (f"Add {money(estimate - 0.0001)} to finish: the 1 debate not played "
                                                f"yet may cost up to {money(estimate)} in all.")
    await user.should_see(marker="tournament-continue")
    await user.should_see(HOSTILE[:40])

    # Continuing it with a budget that fits (what the Continue button asks the gate) plays it to the end.
    await auth_gate(LOCAL).continue_tournament(stored.id, await runtime.current().tournaments(), budget_usd=5.0)
    assert await finished(stored.id) == "completed"
    row = await store.get(stored.id)
    assert row is not None and row.tournament.budget_usd == 5.0 and row.stop_reason is None


async def test_an_unknown_tournament_says_so_with_http_404(user: User) -> None:
    response = await user.http_client.get("/tournaments/000000000000")
    assert response.status_code == 404
    texts = {e.get("text") for e in page_elements(response.text)}
    assert {"Tournament not found", "There is no tournament with id 000000000000."} <= texts


@pytest.fixture
def auth_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_AUTH", "on")
    get_settings.cache_clear()


async def test_a_viewer_may_look_but_not_start_or_continue(user: User, auth_on: None) -> None:
    store = TournamentStore((await engine()).store)
    stored = await store.create(Tournament(models=[Contender.parse("a"), Contender.parse("b")], topics=["Tea?"]))
    await store.set_status(stored.id, "stopped", "budget reached: test")
    await add_users(("vic", "viewer"))
    await signed_in(user, "vic", page="/tournaments")
    await user.should_see(marker=f"tournament-link-{stored.id}", retries=50)
    await user.should_not_see(marker="new-tournament")
    response = await user.http_client.get("/tournaments/new")
    assert response.status_code == 403
    await user.open(f"/tournaments/{stored.id}")
    await user.should_see(marker="tournament-reason")
    await user.should_not_see(marker="tournament-continue")


@pytest.fixture
def playing_before_start(app_env: Path) -> str:
    """A tournament the database says was playing when the app stopped (stored before it starts)."""
    tournament = Tournament(id="feedc0ffee00", models=[Contender.parse("a"), Contender.parse("b")],
                            topics=["Tea beats coffee"], format="round-limited", rounds=1, created_by="tester")
    conn = sqlite3.connect(app_env, isolation_level=None)
    try:
        migrate(conn)
        now = tournament.created_at.isoformat()
        conn.execute("INSERT INTO tournaments (id, name, spec, status, created_by, created_at, updated_at) "
                     "VALUES (?,?,?,?,?,?,?)", (tournament.id, tournament.name, tournament.model_dump_json(),
                                                "running", "tester", now, now))
    finally:
        conn.close()
    return tournament.id


async def test_a_tournament_that_was_playing_carries_on_when_the_app_starts(playing_before_start: str,
                                                                            user: User) -> None:
    assert await finished(playing_before_start) == "completed"
    debates = await TournamentStore((await engine()).store).debates(playing_before_start)
    assert list(debates) == ["t0-m0-m1"] and debates["t0-m0-m1"].row.status == "completed"


async def _judged(store: EventStore, debate_id: str, tournament: Tournament, slot: Slot, winner_side: str | None,
                  ) -> None:
    """The slot's debate, completed with a verdict for its "pro" or "con" side (None: a tie)."""
    config = slot_config(tournament, slot).model_dump(mode="json")
    cast = config["participants"]
    await store.create_debate(debate_id, config["topic"], config["format"], config,
                              {"status": "running", "participants": cast})
    winner = next((p["id"] for p in cast if p["position"] == winner_side), None)
    verdict = Verdict(winner=winner, rulings=[JudgeRuling(judge="demo:judge", winner=winner, reasoning="r")],
                      word_counts={p["id"]: 100 for p in cast}, reasoning="r")
    await store.append(debate_id, EventKind.VERDICT, {"verdict": verdict.model_dump(mode="json")},
                       summary={"status": "completed", "cost_usd": 0.01})


async def test_the_tournament_page_shows_its_own_leaderboard(user: User) -> None:
    """Bradley-Terry ratings and the head-to-head over the tournament's judged debates only (a debate
    outside it between the same models does not count), updated when a new verdict is stored."""
    store = (await engine()).store
    stored = await TournamentStore(store).create(Tournament(
        models=[Contender.parse("alpha"), Contender.parse("beta")], topics=["Tea?", "Cats?"], format="round-limited",
        rounds=1))
    first, second = schedule(stored)
    await _judged(store, "tour1", stored, first, "pro")  # alpha (the first model) wins
    await store_result(store, "outside", "demo:alpha", "demo:beta", "b")  # not the tournament's

    await user.open(f"/tournaments/{stored.id}")
    await user.should_see(marker="ratings-table", retries=300)
    assert one(user, "leaderboard-title").text == "Ratings over 1 debate"
    rows = table_rows(user, "ratings-table")
    assert [(r["model"], r["record"]) for r in rows] == [("demo:alpha", "1–0–0"), ("demo:beta", "0–1–0")]
    assert one(user, "h2h-cell-0-1").text == "1–0–0"
    await user.should_see(marker="standings-table")  # the plain standings stay
    # ...and say in words what they mean, with the leaderboard's own lines (said once on the page).
    board = await leaderboard(store, LeaderboardFilters(debate_ids=frozenset({"tour1"})))
    assert standings_words(user) == [line.words for line in board.words]
    assert standings_words(user)[0].startswith("demo:alpha ")  # the one ahead first
    assert len(list(user.find(marker="pair-words").elements)) == 1

    await _judged(store, "tour2", stored, second, None)  # a tie: the page's refresh redraws the board
    await user.should_see("Ratings over 2 debates", retries=300)
    rows = table_rows(user, "ratings-table")
    assert [(r["model"], r["record"]) for r in rows] == [("demo:alpha", "1–0–1"), ("demo:beta", "0–1–1")]
    board = await leaderboard(store, LeaderboardFilters(debate_ids=frozenset({"tour1", "tour2"})))
    assert standings_words(user) == [line.words for line in board.words]


def standings_words(user: User) -> list[str]:
    """The lines in words under the standings table (none: an empty list)."""
    card = one(user, "tournament-standings")
    return [label.text for column in card.descendants() if "pair-words" in column._markers
            for label in column.descendants() if isinstance(label, ui.label)]


def test_the_budget_figures_of_a_stop_add_up() -> None:
    said = budget_words(0.2227, 1.0, spent=0.6271, committed=0.7933)
    assert said == ("the next debate may cost up to $0.2227, and of the $1.00 budget $0.6271 is spent, $0.1662 "
                    "reserved for the debates still running and $0.2067 is left")
    assert round(0.6271 + 0.1662 + 0.2067, 4) == 1.0
