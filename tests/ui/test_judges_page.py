"""The Judges page: in the navigation, and the judge-health figures of a stored corpus with known
answers (`tests.corpus`)."""

from __future__ import annotations

from nicegui import ui
from nicegui.testing import User

from tests.corpus import ALPHA, GAMMA, store_corpus
from tests.ui.helpers import engine, one


async def test_the_judges_page_shows_each_judges_health(user: User) -> None:
    await store_corpus((await engine()).store)
    await user.open("/judges")
    assert one(user, "judge-health-title").text == "Judge health over 4 judged debates"
    table = next(e for e in one(user, "judges-table").descendants(include_self=True) if isinstance(e, ui.table))
    rows = {row["judge"]: row for row in table.rows}
    assert list(rows) == [ALPHA, "x:beta", GAMMA]
    assert {k: rows[ALPHA][k] for k in ("debates", "rulings", "failures", "order", "swap", "agreement", "kappa")} == {
        "debates": 4, "rulings": 4, "failures": "25% (1)", "order": "100% / 0% of 3", "swap": "0% (0 of 1)",
        "agreement": "50% of 4", "kappa": "0.11"}
    assert rows["x:beta"]["swap"] == "100% (1 of 1)"
    assert rows[GAMMA]["order"] == "0% / 100% of 2"
    pairs = next(e for e in one(user, "pairs-table").descendants(include_self=True) if isinstance(e, ui.table))
    assert [(r["pair"], r["agreement"], r["kappa"]) for r in pairs.rows] == [
        (f"{ALPHA} + x:beta", "50%", "0.00"), (f"{ALPHA} + {GAMMA}", "50%", "0.33")]


async def test_the_judges_page_is_in_the_navigation_and_says_when_there_is_nothing_yet(user: User) -> None:
    await user.open("/")
    assert '<a href="/judges" ' in one(user, "navigation").content
    await user.open("/judges")
    await user.should_see(marker="no-judges")
    assert one(user, "judge-health-title").text == "Judge health over 0 judged debates"
