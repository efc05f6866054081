"""The Judges page: in the navigation, and the judge-health figures of a stored corpus with known
answers (`tests.corpus`)."""

from __future__ import annotations

from nicegui import ui
from nicegui.testing import User

from tests.corpus import ALPHA, GAMMA, store_corpus
from tests.ui.helpers import engine, one
from webapp.engine.judge_health import JudgeStats
from webapp.ui.pages.judges import judge_row, order_text, whole_shares


async def test_the_judges_page_shows_each_judges_health(user: User) -> None:
    await store_corpus((await engine()).store)
    await user.open("/judges")
    assert one(user, "judge-health-title").text == "Judge health over 4 judged debates"
    table = next(e for e in one(user, "judges-table").descendants(include_self=True) if isinstance(e, ui.table))
    rows = {row["judge"]: row for row in table.rows}
    assert list(rows) == [ALPHA, "x:beta", GAMMA]
    assert {k: rows[ALPHA][k] for k in ("debates", "rulings", "failures", "order", "swap", "agreement", "kappa")} == {
        "debates": 4, "rulings": 4, "failures": "25% (1)", "order": "100 % 1st, 0 % 2nd (of 3); 1 tie not counted",
        "swap": "0% (0 of 1)",
        # Four debates compared: not a figure ("50 % of 4", kappa 0.11), said as too few.
        "agreement": "too few debates (n = 4)", "kappa": "too few debates (n = 4)"}
    assert rows["x:beta"]["swap"] == "100% (1 of 1)"
    assert rows[GAMMA]["order"] == "0 % 1st, 100 % 2nd (of 2)"
    pairs = next(e for e in one(user, "pairs-table").descendants(include_self=True) if isinstance(e, ui.table))
    assert [(r["pair"], r["agreement"], r["kappa"]) for r in pairs.rows] == [
        (f"{ALPHA} + x:beta", "too few debates (n = 2)", "too few debates (n = 2)"),
        (f"{ALPHA} + {GAMMA}", "too few debates (n = 2)", "too few debates (n = 2)")]


def test_the_winners_place_adds_up_and_names_the_rest() -> None:
    # 17 rulings of three-way debates: 10 first, 6 second, 1 third; 2 ties apart ("59 % / 35 %" added to 94 %).
    stats = JudgeStats(judge="demo:j", ordered=17, picked_first=10, picked_second=6, ties=2)
    assert order_text(stats) == "59 % 1st, 35 % 2nd, 6 % later (of 17); 2 ties not counted"
    assert sum(whole_shares([1, 1, 1])) == 100  # 33 + 33 + 34: the parts are the whole
    enough = JudgeStats(judge="demo:j", compared=5, agreed=4, kappa=0.5)
    assert (judge_row(enough)["agreement"], judge_row(enough)["kappa"]) == ("80% of 5", "0.50")


async def test_the_judges_page_is_in_the_navigation_and_says_when_there_is_nothing_yet(user: User) -> None:
    await user.open("/")
    assert '<a href="/judges" ' in one(user, "navigation").content
    await user.open("/judges")
    await user.should_see(marker="no-judges")
    assert one(user, "judge-health-title").text == "Judge health over 0 judged debates"
