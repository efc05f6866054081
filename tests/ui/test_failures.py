"""Errored and stopped debates say what happened in words: which participant's call failed, on which
provider and model, the variable to set, a Retry that names whose turn runs again; who stopped a debate
and where; and Re-run with edits into the new-debate form."""

from __future__ import annotations

import secrets

import pytest
from nicegui.testing import User

from tests.fakellm import FakeLLMServer, Script
from tests.provider_helpers import register_in_store
from tests.ui.helpers import assert_nowhere_on_page, demo_speed, engine, html_text, one, start_demo
from webapp.engine.machine import State
from webapp.engine.params import ErrorInfo
from webapp.models import DebateConfig
from webapp.ui.components.failure import explain_error, retry_label
from webapp.ui.components.presets import quick_demo_config

# A key-shaped value made at run time (no key-like literal in the source), unique per run.
KEY = "-".join(("sk", "test", secrets.token_hex(16)))


async def test_an_auth_error_names_participant_provider_model_and_the_key_to_set(
        user: User, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fake_llm.enqueue(Script.unauthorized())
    data = quick_demo_config("Should keys expire?").model_dump()
    data["participants"][1].update(provider="openai", model="gpt-4o-mini", base_url=fake_llm.openai_url)
    await register_in_store((await engine()).store, fake_llm.url)  # as an admin does in Settings
    session = await (await engine()).start(DebateConfig.model_validate(data))
    assert await session.join() is State.ERROR
    assert fake_llm.model_requests and fake_llm.model_requests[-1].headers["authorization"] == f"Bearer {KEY}"

    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="error-panel")
    assert one(user, "error-headline").text == \
        "The OpenAI API rejected the key for Opposition (openai:gpt-4o-mini) (HTTP 401)."
    assert "Set OPENAI_API_KEY" in one(user, "error-advice").text and "then Retry" in one(user, "error-advice").text
    assert one(user, "error-retry").text == "Retry Opposition's turn (3 left)"
    assert one(user, "controls").label("retry") == "Retry Opposition's turn (3 left)"  # the control bar's too
    for marker in ("rerun", "error-rerun"):
        assert one(user, marker).props["href"] == f"/new?from={session.id}", marker
    assert one(user, "rerun").visible
    assert_nowhere_on_page(user, KEY)

    user.find(marker="error-retry").click()  # the fake server answers this time
    await user.should_see(marker="winner", retries=50)
    await user.should_see(marker="status-completed", retries=50)  # the verdict shows a moment before
    assert one(user, "controls").label("retry") is None  # ended: no command buttons at all
    assert one(user, "rerun").props["href"] == f"/new?from={session.id}"  # completed: still offered


async def test_a_stopped_debate_says_who_stopped_it_where_and_offers_a_re_run(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "3:auth")
    session = await start_demo("Who stopped it?")
    assert await session.join() is State.ERROR
    position = session.state.errors[-1].position
    phase = session.state.format.phase(position.phase).title
    await session.stop(verdict=False, actor="ada")
    assert await session.join() is State.STOPPED
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="outcome")
    said = html_text(one(user, "outcome").content).removeprefix("stop_circle")  # after the icon
    assert said.startswith(f"Stopped by ada at {phase}, round {position.round}, without a verdict"), said
    assert said.lower().count("stopped") == 1  # said once: no second panel, no note beside the badge
    await user.should_not_see(marker="stopped-panel")
    assert one(user, "rerun").props["href"] == f"/new?from={session.id}"
    user.find(marker="rerun").click()
    await user.should_see(marker="debate-form")
    assert one(user, "field-topic").value == "Who stopped it?"


async def test_re_run_with_edits_is_one_action_offered_while_it_runs_and_after(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 5)  # slow enough to still be running when the page opens
    session = await start_demo("Finished?")
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="status-running")
    assert one(user, "rerun").visible  # one action at every stage: no "Clone" beside it
    await user.should_not_see(marker="clone")
    await user.should_not_see("Clone")
    await session.stop(verdict=False, actor="ada")
    assert await session.join() is State.STOPPED
    await user.should_see(marker="outcome")
    assert one(user, "rerun").visible and one(user, "rerun").props["href"] == f"/new?from={session.id}"
    await user.should_not_see("Clone")



def test_kinds_of_error_get_their_own_advice() -> None:
    from webapp.engine.state import DebateState
    from webapp.models import utcnow

    state = DebateState("x1", quick_demo_config("Advice?"), utcnow())
    spec = {"provider": "demo", "status": 429, "message": "slow down"}
    for reason, words in (("rate_limit", "Wait a minute and Retry"), ("not_found", "Re-run with edits"),
                          ("timeout", "Check that the server is running")):
        story = explain_error(state, ErrorInfo.model_validate({**spec, "reason": reason}), left=2)
        assert words in story.advice, reason
    assert retry_label("the judge", 0) == "Retry the judge's verdict (0 left)"
    assert retry_label(None, 1) == "Retry the failed step (1 left)"


async def test_a_debate_its_hard_limit_stopped_says_it_stopped_by_itself(user: User) -> None:
    session = await start_demo("Who pays?", budget={"warn_at": None, "cost_limit": 0.0001})
    assert await session.join() is State.STOPPED
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="outcome")
    said = html_text(one(user, "outcome").content).removeprefix("stop_circle")  # after the icon
    assert said.startswith("Stopped automatically at ") and "Stopped by" not in said, said
