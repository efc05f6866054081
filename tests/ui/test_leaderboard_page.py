"""The Leaderboard page: in the navigation, the ratings of a stored league, its filters, the
style-controlled view, the head-to-head drill-down, safe rendering of hostile names, and access."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from nicegui import ui
from nicegui.testing import User

from tests.leaderboard_corpus import ALPHA, BETA, GAMMA, store_league, store_result
from tests.ui.helpers import engine, one
from webapp.results.leaderboard import HistoryPoint, Leaderboard, LeaderboardFilters, ModelRating, StyleView
from webapp.settings import get_settings
from webapp.ui.pages.leaderboard import history_chart, interval_chart


def table_rows(user: User, marker: str) -> list[dict[str, object]]:
    table = next(e for e in one(user, marker).descendants(include_self=True) if isinstance(e, ui.table))
    return list(table.rows)


async def test_the_leaderboard_ranks_models_and_drills_into_a_head_to_head_cell(user: User) -> None:
    await store_league((await engine()).store)
    await user.open("/")
    assert '<a href="/leaderboard" ' in one(user, "navigation").content
    await user.open("/leaderboard")
    await user.should_see(marker="ratings-table", retries=300)
    assert one(user, "leaderboard-title").text == "Ratings over 5 debates"
    rows = table_rows(user, "ratings-table")
    assert [r["model"] for r in rows] == [ALPHA, GAMMA, BETA]
    assert rows[0]["record"] == "3–0–1" and rows[2]["record"] == "0–3–1"
    # One line in words per neighbouring pair: what a team lead can act on.
    said = [e.text for e in one(user, "pair-words").descendants() if isinstance(e, ui.label)]
    assert len(said) == 2 and said[0].startswith(f"{ALPHA} ") and said[1].startswith(f"{GAMMA} ")
    for line in said:
        assert re.fullmatch(r".+ beats .+ in \d+ % of bootstrap samples \(\d+ debates\)", line) or \
            re.fullmatch(r".+ vs .+: no clear difference yet \(.+ ahead in \d+ % of bootstrap samples, \d+ debates\) "
                         r"— (about \d+|more than \d+) more debates would tell", line), line
    # The matrix is ordered by rank: cell (0, 2) is alpha against beta.
    cell = one(user, "h2h-cell-0-2")
    assert cell.text == "2–0–1"
    assert one(user, "h2h-cell-2-0").text == "0–2–1"
    assert "split 100%" in one(user, "h2h-cell-0-1").text  # alpha v gamma: the panel split 2–1
    user.find(marker="h2h-cell-0-2").click()
    await user.should_see(marker="h2h-detail-title", retries=100)
    assert one(user, "h2h-detail-title").text == f"{ALPHA} against {BETA}: 2 won, 0 lost, 1 tied"
    assert one(user, "h2h-detail-split").text == "The judge panel split in 0 of 3 (0%)"
    links = sorted(user.find(marker="h2h-debate-link").elements, key=lambda e: e.id)
    assert [link.props["href"] for link in links] == ["/debate/d3", "/debate/d2", "/debate/d1"]
    assert links[0].text == "Topic d3"


async def test_filters_and_the_style_controlled_view(user: User) -> None:
    store = (await engine()).store
    await store_league(store)
    await store_result(store, "s1", GAMMA, BETA, "a", words=(900, 300))
    await store_result(store, "s2", BETA, GAMMA, "b", series="s1", words=(300, 900))
    await user.open("/leaderboard")
    await user.should_see(marker="ratings-table", retries=300)
    assert one(user, "leaderboard-title").text == "Ratings over 7 debates"
    one(user, "filter-tag").value = "ethics"
    await user.should_see("Ratings over 2 debates", retries=100)
    assert {r["model"] for r in table_rows(user, "ratings-table")} == {ALPHA, BETA}
    one(user, "filter-tag").value = None
    one(user, "filter-series").value = True
    await user.should_see("Ratings over 1 series", retries=100)
    assert [r["record"] for r in table_rows(user, "ratings-table")] == ["1–0–0", "0–1–0"]
    one(user, "filter-series").value = False
    one(user, "filter-judge").value = "demo:j1"
    await user.should_see("Ratings over 1 debate", retries=100)
    one(user, "filter-judge").value = None
    one(user, "filter-since").value = "2026-02-01"
    one(user, "filter-until").value = "2026-02-28"
    await user.should_see("Ratings over 3 debates", retries=100)
    one(user, "filter-since").value = None
    one(user, "filter-until").value = None
    await user.should_see("Ratings over 7 debates", retries=100)
    one(user, "style-control").value = True
    await user.should_see(marker="style-table", retries=100)
    assert one(user, "leaderboard-title").text == "Style-controlled ratings over 7 debates"
    # Seven debates do not make a length effect: said so rather than shown as a result.
    assert one(user, "length-effect").text.startswith("Length effect: too few debates (n = 7)")


async def test_an_empty_leaderboard_says_so(user: User) -> None:
    await user.open("/leaderboard")
    await user.should_see(marker="no-ratings", retries=100)
    assert one(user, "leaderboard-title").text == "Ratings over 0 debates"


async def test_hostile_model_names_and_topics_are_text(user: User) -> None:
    evil = "demo:<img src=x onerror=alert(1)>"
    await store_result((await engine()).store, "x1", evil, ALPHA, "a", topic="<script>alert(1)</script>")
    await user.open("/leaderboard")
    await user.should_see(marker="ratings-table", retries=300)
    assert evil in [r["model"] for r in table_rows(user, "ratings-table")]
    user.find(marker="h2h-cell-0-1").click()
    await user.should_see(marker="h2h-debate-link", retries=100)
    link = one(user, "h2h-debate-link")
    assert link.text == "<script>alert(1)</script>" and not isinstance(link, ui.html)
    response = await user.http_client.get("/leaderboard")
    assert "<script>alert(1)</script>" not in response.text and "<img src=x" not in response.text


async def test_with_auth_on_the_leaderboard_asks_to_sign_in(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_AUTH", "on")
    get_settings.cache_clear()
    response = await user.http_client.get("/leaderboard")
    assert response.status_code == 303 and response.headers["location"].startswith("/login?next=")


def test_the_rating_chart_draws_intervals_as_stacked_bars_and_names_as_text() -> None:
    lines = [ModelRating(model="x:<b>best</b>", rank=1, rating=1100, low=1040, high=1170, debates=9, wins=7, losses=1,
                         ties=1, avg_cost_usd=0.1),
             ModelRating(model="x:worst", rank=2, rating=900, low=830, high=960, debates=9, wins=1, losses=7, ties=1,
                         avg_cost_usd=0.1)]
    options = interval_chart(lines)
    assert options["yAxis"]["data"] == ["x:worst", "x:<b>best</b>"]  # best at the top; a category, drawn as text
    hidden, interval, point = options["series"]
    assert hidden["data"] == [830, 1040] and hidden["itemStyle"]["color"] == "transparent"
    assert interval["data"] == [130, 130] and interval["stack"] == hidden["stack"]
    assert point["data"] == [900, 1100] and options["xAxis"]["min"] <= 830
    assert options["tooltip"]["renderMode"] == "richText"
    at = datetime(2026, 1, 1, tzinfo=UTC)
    board = Leaderboard(filters=LeaderboardFilters(), unit="debate", comparisons=18, debates=18, ratings=lines,
                        style=StyleView(ratings=lines, length_effect=None, length_low=None, length_high=None),
                        pairs=[], history=[HistoryPoint(at=at, ratings={"x:worst": 990.0}),
                                           HistoryPoint(at=at, ratings={"x:worst": 900.0, "x:<b>best</b>": 1100.0})],
                        computed_at=at)
    history = history_chart(board)
    assert [s["name"] for s in history["series"]] == ["x:<b>best</b>", "x:worst"]
    assert [len(s["data"]) for s in history["series"]] == [1, 2]  # a model joins the line when it first debated
    assert history["tooltip"]["renderMode"] == "richText"
