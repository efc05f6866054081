"""The dashboard's rows: models, the outcome column (winner, stop reason, error), relative time with
the exact time on hover, sorting, and the per-row Clone, Re-run and Delete (only for those allowed)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from nicegui import ui
from nicegui.testing import User

from tests.ui.helpers import demo_speed, engine, one, start_demo
from tests.ui.test_access import add_users, audit_rows, browser, signed_in
from webapp.engine.machine import State
from webapp.models import utcnow
from webapp.settings import get_settings
from webapp.store.repository import DebateRow
from webapp.tournament.plan import Contender, Tournament, schedule, slot_config
from webapp.tournament.store import TournamentStore
from webapp.ui.components.failure import explain_error, explain_stop
from webapp.ui.components.outcome import outcome_of
from webapp.ui.components.presets import quick_demo_config
from webapp.ui.pages.dashboard_rows import exact_time, models_line, relative_time


@pytest.fixture
def auth_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_AUTH", "on")
    get_settings.cache_clear()


def row_ids(user: User) -> list[str]:
    """The debates listed on the user's dashboard, top to bottom."""
    elements = sorted(user.client.elements.values(), key=lambda e: e.id)
    return [m[len("debate-"):] for e in elements for m in e._markers
            if m.startswith("debate-") and m not in ("debate-count", "debate-list")]


def text(user: User, marker: str) -> str:
    return str(one(user, marker).text)


# --- pure parts ----------------------------------------------------------------------------------


def test_relative_time_reads_like_a_person_would_say_it() -> None:
    now = utcnow().replace(year=2026, month=11, day=23, hour=18)
    assert relative_time(now - timedelta(seconds=10), now) == "just now"
    assert relative_time(now - timedelta(minutes=3, seconds=5), now) == "3 min ago"
    assert relative_time(now - timedelta(hours=2, minutes=40), now) == "2 h ago"
    assert relative_time(now - timedelta(days=1, hours=3), now) == "yesterday"
    assert relative_time(now - timedelta(days=5), now) == "5 days ago"
    assert relative_time(now - timedelta(days=20), now) == "3 Nov"
    assert relative_time(now - timedelta(days=400), now) == "19 Oct 2025"
    assert exact_time(now.replace(minute=7, second=9, microsecond=0)) == "2026-11-23 18:07:09 UTC"


# --- the outcome column --------------------------------------------------------------------------


async def test_a_completed_debate_shows_its_winner_models_cost_and_when(user: User) -> None:
    session = await start_demo("Should trains be free?")
    assert await session.join() is State.COMPLETED
    state = session.state
    outcome = outcome_of(state)
    assert outcome is not None and outcome.kind in ("winner", "tie")
    await user.open("/")
    await user.should_see(marker=f"debate-{session.id}")
    # The first render says what the listing says; the outcome read from the log follows at once.
    await user.should_see(outcome.headline)
    assert text(user, f"outcome-{session.id}") == outcome.headline
    if outcome.kind == "winner":
        winner = next(p.name for p in state.config.participants if p.id == outcome.winner)
        assert text(user, f"outcome-{session.id}") == f"{winner} wins"
    models = text(user, f"models-{session.id}")
    for p in state.config.participants:
        assert f"{p.name} ({p.provider}:{p.model})" in models
    when = one(user, f"time-{session.id}")
    assert when.text == "just now"
    row = await (await engine()).store.get_row(session.id)
    assert row is not None and when.props["title"] == exact_time(row.created_at)
    await user.should_not_see("Round 1 of")  # the outcome, not the last phase


async def test_an_errored_debate_says_why_and_a_stopped_one_its_reason(user: User,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "3:auth")
    session = await start_demo("Does an error show on the list?", format="structured", rounds=None)
    assert await session.join() is State.ERROR
    await user.open("/")
    speaker = session.state.config.participant(session.state.position.speaker or "")
    # the words of the debate page's error panel: whose key, on which provider and model
    failure = explain_error(session.state, session.state.error, 0)
    assert f"refused the request for {speaker.name} (demo:{speaker.model}) (HTTP 401)" in failure.headline
    await user.should_see(f"Error: {failure.headline.rstrip('.')}")
    assert text(user, f"outcome-{session.id}") == f"Error: {failure.headline.rstrip('.')}"
    await session.stop(verdict=False, actor="ada")
    assert await session.join() is State.STOPPED
    # who stopped it, where, and the error it had stopped on
    await user.should_see("no verdict · after the error: ", retries=30)  # live, no reload
    shown = text(user, f"outcome-{session.id}")
    stop = explain_stop(session.state)
    assert stop is not None and stop.startswith("Stopped by ada at Rebuttal")
    assert shown.startswith(stop.rstrip(".") + " · no verdict · after the error: The Demo (offline) server refused "
                            f"the request for {speaker.name}"), shown


# --- sorting -------------------------------------------------------------------------------------


async def test_rows_sort_by_date_cost_and_status(user: User) -> None:
    eng = await engine()
    idle = await eng.create(quick_demo_config("Created, never started"))
    cheap = await start_demo("A short one")
    assert await cheap.join() is State.COMPLETED
    dear = await start_demo("A longer one", rounds=3)
    assert await dear.join() is State.COMPLETED
    assert dear.state.ledger.total_usd > cheap.state.ledger.total_usd > 0

    await user.open("/")
    await user.should_see(marker=f"debate-{idle}")
    assert row_ids(user) == [dear.id, cheap.id, idle]
    sort = one(user, "sort")
    for order, expected in (("oldest", [idle, cheap.id, dear.id]), ("cost", [dear.id, cheap.id, idle]),
                            ("status", [idle, dear.id, cheap.id]), ("newest", [dear.id, cheap.id, idle])):
        with user:
            sort.value = order
        await user.should_see(marker=f"sorted-{order}")  # the list was rendered again, in this order
        assert row_ids(user) == expected, order


# --- clone, re-run, delete -----------------------------------------------------------------------


async def test_clone_links_to_the_prefilled_form_and_rerun_starts_the_same_config(user: User) -> None:
    done = await start_demo("Run me again", rounds=2)
    assert await done.join() is State.COMPLETED
    await user.open("/")
    clone = one(user, f"clone-{done.id}")
    assert clone.props["href"] == f"/new?from={done.id}"  # a real link (q-btn renders an <a>)
    assert clone.props["aria-label"] == "Clone: Run me again"
    assert text(user, f"rerun-{done.id}") == "Re-run"

    user.find(marker=f"rerun-{done.id}").click()
    await user.should_see(marker="transcript", retries=100)
    eng = await engine()
    rows, total = await eng.list_debates()
    assert total == 2
    (again,) = [r for r in rows if r.id != done.id]
    assert again.topic == "Run me again"
    session = await eng.session(again.id)
    assert session.state.config.model_dump(exclude={"series"}) == done.state.config.model_dump(exclude={"series"})
    assert session.state.config.series is None
    starts = await audit_rows("start")
    assert [r.debate_id for r in starts] == [again.id]  # through the gate, like any start


async def test_the_empty_page_has_one_new_debate_button_and_sentence_case_labels(user: User) -> None:
    await user.open("/")
    await user.should_see(marker="empty-state")
    header = next(e for e in user.client.elements.values() if isinstance(e, ui.header))
    navigation = {e.id for e in header.descendants()}  # the layout's own navigation is not the page's
    in_page = [e for e in user.client.elements.values() if isinstance(e, ui.button)
               and e.props.get("label") == "New debate" and e.id not in navigation]
    assert len(in_page) == 1 and "new-debate" in in_page[0]._markers
    for marker in ("new-debate", "start-demo"):
        assert "no-caps" in one(user, marker).props


async def test_only_those_allowed_see_delete_and_it_asks_first(user: User, auth_on: None) -> None:
    await add_users(("root", "admin"), ("ops", "operator"), ("vic", "viewer"))
    session = await start_demo("Delete me from the list")
    assert await session.join() is State.COMPLETED

    vic = browser()
    await signed_in(vic, "vic")
    await vic.should_see(marker=f"debate-{session.id}")
    for marker in ("delete", "rerun", "clone"):
        await vic.should_not_see(marker=f"{marker}-{session.id}")
    await vic.should_not_see(marker="new-debate")

    ops = browser()
    await signed_in(ops, "ops")
    await ops.should_see(marker=f"rerun-{session.id}")
    await ops.should_see(marker=f"clone-{session.id}")
    await ops.should_not_see(marker=f"delete-{session.id}")

    await signed_in(user, "root")
    user.find(marker=f"delete-{session.id}").click()
    await user.should_see(marker="delete-dialog")
    user.find(marker="delete-cancel").click()
    eng = await engine()
    assert await eng.store.get_row(session.id) is not None  # cancelled: nothing removed
    user.find(marker=f"delete-{session.id}").click()
    user.find(marker="delete-confirm").click()
    await user.should_see(marker="empty-state")
    assert await eng.store.get_row(session.id) is None
    assert [(r.actor, r.debate_id) for r in await audit_rows("delete")] == [("root", session.id)]
    await vic.should_see(marker="empty-state", retries=30)  # the other lists follow


async def test_a_debate_stopped_mid_way_says_it_was_stopped_and_why(user: User,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 50)  # a turn takes far longer than the test: the stop comes mid-debate
    session = await start_demo("Stop it half way")
    await session.stop(verdict=True, reason="enough said", actor="ada")
    assert await session.join() is State.STOPPED
    outcome = outcome_of(session.state)
    assert outcome is not None
    await user.open("/")
    await user.should_see("enough said")
    shown = text(user, f"outcome-{session.id}")
    stop = explain_stop(session.state)
    assert stop is not None and "(enough said)" in stop  # the reason given with the stop
    # the result, then who stopped it where (the stopped note of the debate page)
    if outcome.kind == "ended":
        assert shown == stop.rstrip(".") + " · no verdict", shown
    else:
        assert shown == f"{outcome.headline} · {stop.rstrip('.')}", shown
    assert shown.count("Stopped by ada") == 1


def test_a_participant_named_after_its_model_is_said_once() -> None:
    row = DebateRow(id="x", topic="t", format="classic", status="completed", created_at=utcnow(), updated_at=utcnow(),
                    participants=[
        {"id": "g", "name": "demo:gamma", "provider": "demo", "model": "gamma"},
        {"id": "b", "name": "Bo", "provider": "demo", "model": "beta"}])
    assert models_line(row) == "demo:gamma vs Bo (demo:beta)"  # not "demo:gamma (demo:gamma)"


async def test_a_tournaments_debates_are_grouped_under_its_name(user: User) -> None:
    store = (await engine()).store
    stored = await TournamentStore(store).create(Tournament(
        name="Spring league", models=[Contender.parse("alpha"), Contender.parse("beta")], topics=["Tea?", "Cats?"],
        format="round-limited", rounds=1))
    first, second = schedule(stored)
    for debate_id, slot in (("tour-a", first), ("tour-b", second)):
        config = slot_config(stored, slot).model_dump(mode="json")
        await store.create_debate(debate_id, config["topic"], config["format"], config,
                                  {"status": "completed", "participants": config["participants"]})
    alone = quick_demo_config().model_dump(mode="json")
    await store.create_debate("alone", "On its own?", alone["format"], alone, {"status": "completed"})

    rows, _ = await store.list_debates()
    assert {r.id: r.tournament for r in rows} == {"tour-a": stored.id, "tour-b": stored.id, "alone": None}
    await user.open("/")
    await user.should_see(marker="tournament-group")
    group = one(user, "tournament-group")
    assert one(user, f"tournament-group-{stored.id}").text == "Tournament: Spring league"
    assert one(user, f"tournament-group-{stored.id}").props["href"] == f"/tournaments/{stored.id}"
    inside = {m for e in group.descendants() for m in e._markers if m.startswith("debate-")}
    assert inside == {"debate-tour-a", "debate-tour-b"}  # the tournament's, and only those
    assert row_ids(user).index("alone") in (0, 2)  # not between the tournament's two
