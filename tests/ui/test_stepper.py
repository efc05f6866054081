"""The phase stepper on stopped and failed debates: finished phases are done, the phase it stopped or
failed in says so, later phases are not reached, the Verdict pill is done only with a verdict, and
"Round N of M" shows only while a round phase runs. Real demo debates (failures injected with
ROSTRUM_DEMO_FAIL), rendered through `render_stepper` on a test page."""

from __future__ import annotations

import uuid

import pytest
from nicegui import ui
from nicegui.testing import User

from tests.ui.helpers import engine, start_demo
from webapp.engine.machine import State
from webapp.engine.state import DebateState
from webapp.ui.components.presets import quick_demo_config
from webapp.ui.components.stepper import Stepper, render_stepper
from webapp.ui.steps import stepper_view


async def show(user: User, state: DebateState) -> None:
    path = f"/test-stepper/{uuid.uuid4().hex}"

    @ui.page(path)
    def _page() -> None:
        render_stepper(state)

    await user.open(path)


def marked(user: User, marker: str) -> list[ui.element]:
    """Elements with this marker on the user's page (none is fine, unlike `user.find`)."""
    return [e for e in user.client.elements.values() if marker in e._markers]


def stepper(user: User) -> Stepper:
    (element,) = marked(user, "stepper")
    assert isinstance(element, Stepper)
    return element


def pills(user: User, state: DebateState) -> dict[str, str]:
    """Phase id → the condition its pill shows (and says, in its title)."""
    out = {}
    for phase in [*state.format.phases, None]:
        pill = stepper(user).pill(phase.id if phase else "verdict")
        if pill is None:
            continue
        out[phase.id if phase else "verdict"] = pill["condition"]
        assert pill["words"], "every pill says what it means (hover and screen readers)"
    return out


def words(user: User, phase_id: str) -> str:
    pill = stepper(user).pill(phase_id)
    assert pill is not None
    return pill["words"]


def round_text(user: User) -> str | None:
    return stepper(user).round_text


async def test_a_debate_that_fails_after_the_first_phase_then_stops_shows_later_phases_not_reached(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "3:auth")  # opening (turns 1-2) done, rebuttal 1 fails
    session = await start_demo("Stop after the opening?", format="structured", rounds=None)
    assert await session.join() is State.ERROR
    await show(user, session.state)
    shown = stepper(user)
    assert pills(user, session.state) == {"opening": "done", "rebuttal-1": "failed", "rebuttal-2": "not-reached",
                                          "closing": "not-reached", "verdict": "not-reached"}
    assert words(user, "rebuttal-1") == "failed here"
    assert words(user, "closing") == "not reached"

    await session.stop(verdict=False)
    assert await session.join() is State.STOPPED
    assert session.state.verdict is None
    before = shown.props["steps"]
    shown.show(session.state)  # what a page built now, or the live stream's status, carries
    assert shown.props["steps"] != before, "the same element now shows where the debate stopped"
    await show(user, session.state)
    assert pills(user, session.state) == {"opening": "done", "rebuttal-1": "stopped", "rebuttal-2": "not-reached",
                                          "closing": "not-reached", "verdict": "not-reached"}
    assert words(user, "rebuttal-1") == "stopped here"
    assert round_text(user) is None  # a format without rounds


async def test_a_debate_stopped_with_no_turn_shows_nothing_done(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "1:auth")
    session = await start_demo("Stopped before anything was said", rounds=3)
    assert await session.join() is State.ERROR
    await session.stop(verdict=False)
    assert await session.join() is State.STOPPED
    assert session.state.turns == []
    await show(user, session.state)
    shown = pills(user, session.state)
    assert "done" not in shown.values(), shown
    assert shown == {"opening": "stopped", "rebuttal": "not-reached", "verdict": "not-reached"}
    assert round_text(user) is None  # it never reached round 1


async def test_a_debate_stopped_before_it_started_shows_every_phase_not_reached(user: User) -> None:
    eng = await engine()
    debate_id = await eng.create(quick_demo_config("Never started"))
    session = await eng.session(debate_id)
    await session.stop(verdict=False)
    assert session.state.status is State.STOPPED
    view = stepper_view(session.state)
    assert {condition for _, _, condition in view.phases} == {"not-reached"}
    assert view.verdict == "not-reached" and view.round_text is None


async def test_the_round_shows_only_while_a_round_phase_runs(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "1:auth,5:auth")  # the first opening turn; round 2's first rebuttal
    session = await start_demo("Rounds", rounds=3)
    assert await session.join() is State.ERROR
    await show(user, session.state)
    assert session.state.position.phase == "opening"
    assert round_text(user) is None  # not "Round 1 of 3" during the opening statements
    assert pills(user, session.state)["opening"] == "failed"

    await session.retry()
    assert await session.join() is State.ERROR
    assert session.state.position.phase == "rebuttal" and session.state.position.round == 2
    await show(user, session.state)
    assert round_text(user) == "Round 2 of 3"
    assert pills(user, session.state) == {"opening": "done", "rebuttal": "failed", "verdict": "not-reached"}

    await session.stop(verdict=True)  # stop and judge what was said
    assert await session.join() is State.STOPPED
    await show(user, session.state)
    assert round_text(user) == "Round 2 of 3"  # "stopped" is said once, by the badge and the outcome
    assert pills(user, session.state) == {"opening": "done", "rebuttal": "stopped", "verdict": "done"}


async def test_a_completed_debate_is_done_throughout_and_says_how_many_rounds(user: User) -> None:
    session = await start_demo("All the way", rounds=2)
    assert await session.join() is State.COMPLETED
    await show(user, session.state)
    assert pills(user, session.state) == {"opening": "done", "rebuttal": "done", "verdict": "done"}
    assert round_text(user) == "2 rounds"


async def test_without_a_judge_there_is_no_verdict_pill(user: User) -> None:
    config = quick_demo_config("No judge")
    config = config.model_copy(update={"judge": config.judge.model_copy(update={"enabled": False})})
    session = await (await engine()).start(config)
    assert await session.join() is State.COMPLETED
    assert session.state.verdict is None
    await show(user, session.state)
    assert "verdict" not in pills(user, session.state)


async def test_a_debate_waiting_for_a_person_marks_where_it_waits_and_nothing_as_not_reached(user: User) -> None:
    session = await start_demo("Waiting", budget={"warn_at": 0.0001, "cost_limit": None})
    assert await session.join() is State.AWAITING_ACK
    state = session.state
    await show(user, state)
    shown = pills(user, state)
    assert shown[str(state.position.phase)] == "waiting"
    assert "not-reached" not in shown.values() and shown["verdict"] == "todo"  # it is not over
