"""Small models, honestly: a judge whose record (judge health) shows more than 20 % parse failures or more
than 50 % flips on the side swap carries a visible "Unreliable judge" note with the figure on its verdict
cards and in the leaderboard's judge filter — and one debate does not brand a judge (at least 3 debates)."""

from __future__ import annotations

import pytest
from nicegui.testing import User

from tests.leaderboard_corpus import ALPHA, BETA, store_league, store_result
from tests.ui.helpers import demo_speed, engine, marked_texts, one, start_demo
from webapp.engine.machine import State


async def bad_verdicts(judge: str, count: int, start: int = 0, **ruling: object) -> None:
    store = (await engine()).store
    for i in range(start, start + count):
        await store_result(store, f"bad{i}", ALPHA, BETA, "a", judges=(judge,),
                           ruling_extra=ruling or {"parse_failures": 1})


async def test_the_verdict_card_names_an_unreliable_judge_only_with_enough_data(user: User) -> None:
    session = await start_demo("Can a tiny model judge?")
    assert await session.join() is State.COMPLETED
    assert session.state.verdict is not None
    judge = session.state.verdict.rulings[0].judge
    await bad_verdicts(judge, 1)  # one bad debate (of two): 50 % failures, but too little data
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="winner")
    await user.should_not_see(marker="unreliable-judges")

    await bad_verdicts(judge, 3, start=1)  # four bad debates of five: 80 %
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="unreliable-judges")
    (line,) = marked_texts(user, "unreliable-judge")
    assert line == f"{judge} · Unreliable judge: 80% of its rulings failed to parse or needed a repair (4 of 5)"
    await user.should_see("at least 3 debates")  # the rule is stated beside it


async def test_a_verdict_arriving_on_an_open_page_carries_the_note(user: User,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 200)
    config_judge = "demo:demo-instant"
    session = await start_demo("Is this judge trustworthy?",
                               judge={"judges": [{"provider": "demo", "model": "demo-instant"}]})
    await bad_verdicts(config_judge, 3, flipped=True)  # flipped on all three side swaps
    await user.open(f"/debate/{session.id}")
    assert session.state.verdict is None  # the page was built before the verdict
    assert await session.join() is State.COMPLETED
    assert session.state.verdict is not None and session.state.verdict.rulings[0].judge == config_judge
    await user.should_see(marker="unreliable-judges", retries=100)
    assert marked_texts(user, "unreliable-judge") == [
        f"{config_judge} · Unreliable judge: its winner flipped when the sides were swapped in 100% of re-judged "
        "debates (3 of 3)"]


async def test_the_leaderboard_judge_filter_marks_an_unreliable_judge(user: User) -> None:
    await store_league((await engine()).store)
    await bad_verdicts("compatible:gemma", 5, parse_failures=2)
    await user.open("/leaderboard")
    await user.should_see(marker="ratings-table", retries=300)
    options = one(user, "filter-judge").options
    note = "Unreliable judge: 100% of its rulings failed to parse or needed a repair (5 of 5)"
    assert options["compatible:gemma"] == f"compatible:gemma — {note}"
    assert options["demo:judge"] == "demo:judge"  # a judge with a clean record is just its name
    await user.should_not_see(marker="judge-filter-note")  # no judge chosen
    one(user, "filter-judge").value = "compatible:gemma"
    await user.should_see("Ratings over 5 debates", retries=100)
    assert one(user, "judge-filter-note").text.startswith(f"compatible:gemma: {note}. Ratings judged by it")
    one(user, "filter-judge").value = None
    await user.should_see("Ratings over 10 debates", retries=100)
    await user.should_not_see(marker="judge-filter-note")


async def test_the_judges_page_lists_the_unreliable_judge(user: User) -> None:
    await bad_verdicts("compatible:gemma", 5, parse_failures=1)
    await bad_verdicts("compatible:tiny", 2, start=5)  # two debates: too few to say
    await user.open("/judges")
    await user.should_see(marker="judges-table")
    rows = [e.text for e in user.find(marker="unreliable-judge-row").elements]
    assert rows == ["compatible:gemma: Unreliable judge: 100% of its rulings failed to parse or needed a repair "
                    "(5 of 5)"]
