"""The debate page's Rematch button and series card, and the form's self-preference warning."""

from __future__ import annotations

import pytest
from nicegui.testing import User

from tests.ui.helpers import demo_speed, engine, one, start_demo
from webapp.access.gate import Gate
from webapp.access.roles import CLI
from webapp.engine.machine import State
from webapp.engine.series import participant_label, series_result, series_states


async def test_rematch_starts_the_swapped_debate_and_both_pages_show_the_series(user: User) -> None:
    first = await start_demo("Should trains be free?")
    await user.open(f"/debate/{first.id}")
    assert await first.join() is State.COMPLETED
    await user.should_see(marker="outcome")  # the page has caught up with the end
    assert one(user, "rematch").enabled
    user.find(marker="rematch").click()
    await user.should_see(marker="series")  # the rematch's own page
    engine_sessions = (await engine()).sessions
    (rematch,) = [s for s in engine_sessions.values() if s.id != first.id]
    assert rematch.state.config.rematch_of == first.id
    assert [p.position for p in rematch.state.config.participants] == ["pro", "con"]
    assert [p.id for p in rematch.state.config.participants] == [p.id for p in first.state.config.participants][::-1]
    assert await rematch.join() is State.COMPLETED
    expected = series_result(await series_states(await engine(), rematch.state))
    assert expected is not None and expected.kind != "pending"
    await user.should_see(expected.headline)  # the card followed its own debate to the end
    await user.open(f"/debate/{first.id}")  # the first debate's page shows the same result
    await user.should_see(expected.headline)
    assert one(user, "series-headline").text == expected.headline
    await user.should_see("First debate (this one)")
    # Each debate's row names the participants as the headline does, their side beside them.
    first_state = first.state
    labels = {p.id: participant_label(first_state, p.id) for p in first_state.config.participants}
    sides = sorted(user.find(marker="series-sides").elements, key=lambda e: e.id)  # (a set): in page order
    rows = [element.text for element in sides]
    assert rows == [f"pro: {labels[a]}, con: {labels[b]}" for a, b in
                    ([p.id for p in first_state.config.participants],
                     [p.id for p in rematch.state.config.participants])]


async def test_the_first_page_follows_its_rematch_from_pending_to_the_result(user: User) -> None:
    first = await start_demo("Is a hot dog a sandwich?")
    assert await first.join() is State.COMPLETED
    await user.open(f"/debate/{first.id}")
    await user.should_not_see(marker="series")  # alone: no card
    rematch = await Gate(await engine(), CLI).rematch(first.id, start=False)  # another tab, say
    rematch.ensure_running()
    assert await rematch.join() is State.COMPLETED
    expected = series_result(await series_states(await engine(), first.state))
    assert expected is not None
    await user.should_see(expected.headline, retries=30)  # heard of through the hub's signal, not by reloading


async def test_the_rematch_button_waits_for_the_end(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 5)  # slow: the debate is still running when the page is built
    session = await start_demo("Slow debate")
    await user.open(f"/debate/{session.id}")
    assert not one(user, "rematch").enabled
    await session.stop(verdict=False)
    assert await session.join() is State.STOPPED
    await user.should_see(marker="outcome")
    assert one(user, "rematch").enabled  # a stopped debate can be rematched too


# --- the form's self-preference warning ------------------------------------------------------------


async def test_a_judge_of_a_debaters_family_is_warned_about_and_does_not_block(user: User) -> None:
    await user.open("/new")
    await user.should_not_see(marker="self-preference")
    user.find(marker="field-participants[0].model").clear().type("llama3.1:8b")
    user.find(marker="field-judge.judges[0].model").clear().type("llama3.2")
    await user.should_see(marker="self-preference")
    items = [e.text for e in user.find(marker="self-preference-item").elements]
    assert items == ["demo:llama3.2 (Meta Llama) judges Affirmative: judges tend to prefer answers of their own "
                     "family."]
    user.find(marker="field-judge.judges[0].model").clear().type("qwen2.5")
    await user.should_not_see(marker="self-preference")
    user.find(marker="field-participants[1].model").clear().type("qwen2.5:14b")
    await user.should_see(marker="self-preference")
    user.find(marker="field-participants[1].position").clear().type("moderator")  # not a debater
    await user.should_not_see(marker="self-preference")


async def test_one_click_moves_the_judge_to_another_family_on_the_same_server(user: User) -> None:
    await user.open("/new")
    with user:
        one(user, "field-judge.judges[0].provider").value = "compatible"
    await user.should_see(marker="field-judge.judges[0].base_url")
    assert one(user, "field-judge.judges[0].model").value == "llama3.1"  # the compatible default
    user.find(marker="field-judge.judges[0].base_url").type("http://127.0.0.1:11434/v1")
    user.find(marker="field-participants[0].model").clear().type("llama3.3")
    await user.should_see(marker="self-preference")
    user.find(marker="other-families").click()
    await user.should_not_see(marker="self-preference")
    assert one(user, "field-judge.judges[0].model").value == "qwen2.5"
    assert one(user, "field-judge.judges[0].base_url").value == "http://127.0.0.1:11434/v1"  # same server
    user.find(marker="add-judge").click()  # a new seat avoids every family already there
    await user.should_see(marker="field-judge.judges[1].model")
    assert one(user, "field-judge.judges[1].model").value == "gemma2"
