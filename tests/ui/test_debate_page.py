"""The debate page: live spectating by several users, controls by state, panels, verdict, exports."""

from __future__ import annotations

import asyncio
import json

import pytest
from nicegui import ui
from nicegui.testing import User

from tests.ui.helpers import (
    another_user,
    demo_speed,
    engine,
    grow,
    marked_texts,
    notified,
    one,
    press,
    start_demo,
    stream_text,
    transcript,
    turn_notes,
)
from webapp.engine.events import RetryNote
from webapp.engine.machine import Event, State
from webapp.engine.params import ErrorInfo
from webapp.models import DebateConfig, Verdict
from webapp.ui import runtime
from webapp.ui.components.presets import apply_preset, blank_form, form_to_config

CONTROLS = ("pause", "resume", "retry", "stop")


def enabled(user: User) -> dict[str, bool]:
    bar = one(user, "controls")
    return {name: bar.enabled(name) for name in CONTROLS}


async def first_live_text(session, minimum: int = 20) -> str:
    """Wait (on the debate's own stream) until some turn has streamed `minimum` characters."""
    seen = asyncio.get_running_loop().create_future()

    def listener(message: object) -> None:
        for key, live in session.live.items():
            if len(live.text) >= minimum and not seen.done():
                seen.set_result(key)

    unsubscribe = session.subscribe(listener)
    try:
        return await asyncio.wait_for(seen, 10)
    finally:
        unsubscribe()


def replay(snapshot: list[dict], sent: list[list]) -> dict[int, str]:
    """What a browser shows per turn after its snapshot and the live items sent to its debate's room,
    applied as static/live/index.js does (offsets make repeats harmless; a gap would fail `grow`)."""
    shown = {t["kid"]: t["text"] for t in snapshot}
    for item in sent:
        kind, kid = item[0], item[1]
        if kind == 0 and kid in shown:
            shown[kid] = grow(shown[kid], item[2], item[3])
        elif kind == 1 and (kid not in shown or shown[kid] == ""):
            shown[kid] = ""
        elif kind == 3 and "text" in item[2]:
            shown[kid] = item[2]["text"]
        elif kind == 3:
            shown.setdefault(kid, "")
    return shown


async def test_two_users_watch_the_same_debate_live_with_nothing_missed_or_duplicated(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 100)  # slow enough to join mid-turn
    session = await start_demo("Should trains be free?")
    hub = await runtime.current().hub()
    sent: list[list] = []
    channel = hub.channel(session)
    original = channel._send

    async def record(wire: list[list], room: str) -> None:  # what the debate's room is sent, in order
        if room == channel.room:
            sent.extend(wire)
        await original(wire, room)

    monkeypatch.setattr(channel, "_send", record)
    await user.open(f"/debate/{session.id}")
    key = await first_live_text(session)
    late = another_user()
    await late.open(f"/debate/{session.id}")  # a late joiner, mid-turn
    assert hub.channels[session.id] is channel
    assert channel.watchers == 2
    assert session.broadcaster.count == 1  # one channel per debate, however many pages watch
    live = session.live.get(key)
    assert live is not None, "the first turn is still streaming"
    shown = stream_text(late, key)
    assert len(shown) >= 20 and live.text.startswith(shown), (shown, live.text)  # the late page's snapshot
    early, later = transcript(user).turns, transcript(late).turns
    assert await session.join() is State.COMPLETED
    await asyncio.sleep(0)
    await channel.event.emitted(timeout=5) if channel.buffer.pending else None
    expected = {channel.kid(t.key): t.text for t in session.state.turns if t.visible}
    for snapshot in (early, later):  # each page ends with exactly the committed text of every turn
        assert replay(snapshot, sent) == expected
    assert not any(item[0] == 3 and "text" in item[2] for item in sent), "no turn's text was sent twice"
    assert channel.flushes < sum(len(t.text.split()) for t in session.state.turns)  # coalesced, not per token
    await user.should_see(marker="winner", retries=30)


async def test_closing_every_tab_leaves_no_subscription_or_task_and_the_debate_runs_on(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 300)
    session = await start_demo("Is chess a sport?")
    await user.open(f"/debate/{session.id}")
    second = another_user()
    await second.open(f"/debate/{session.id}")
    hub = await runtime.current().hub()
    channel = hub.channels[session.id]
    assert channel.watchers == 2
    user.client.delete()
    assert channel.watchers == 1 and session.id in hub.channels
    second.client.delete()
    assert session.id not in hub.channels
    assert channel.watchers == 0
    assert session.broadcaster.count == 0
    with pytest.raises(asyncio.CancelledError):
        await channel.task
    assert session.running  # the debate does not belong to any tab
    assert await session.join() is State.COMPLETED


async def test_controls_are_enabled_exactly_when_the_machine_allows(user: User,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 200)
    session = await start_demo("Should we colonise Mars?")
    await user.open(f"/debate/{session.id}")
    await first_live_text(session, 5)
    await user.should_see(marker="status-running")
    assert enabled(user) == {"pause": True, "resume": False, "retry": False, "stop": True}

    press(user, "pause")
    await user.should_see(marker="status-paused", retries=20)
    assert session.state.status is State.PAUSED
    assert enabled(user) == {"pause": False, "resume": True, "retry": False, "stop": True}
    await user.should_see(marker="paused-note")

    press(user, "resume")
    await user.should_see(marker="status-running", retries=20)
    assert enabled(user) == {"pause": True, "resume": False, "retry": False, "stop": True}

    press(user, "stop", verdict=False)  # Stop's menu: stop without a verdict
    await user.should_see(marker="status-stopped", retries=20)
    assert session.state.verdict is None
    assert enabled(user) == {"pause": False, "resume": False, "retry": False, "stop": False}


async def test_two_tabs_pausing_together_cannot_corrupt_the_state(user: User,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 200)
    session = await start_demo("Do cats make better pets than dogs?")
    other = another_user()
    await user.open(f"/debate/{session.id}")
    await other.open(f"/debate/{session.id}")
    await first_live_text(session, 5)
    refused = notified("not allowed", user, other)
    press(user, "pause")
    press(other, "pause")  # both clicked before either command finished
    await user.should_see(marker="status-paused", retries=20)
    await other.should_see(marker="status-paused", retries=20)
    await asyncio.wait_for(refused.wait(), 5)  # the refused click reports back
    assert user.notify.contains("PAUSE is not allowed while the debate is paused") or \
        other.notify.contains("PAUSE is not allowed while the debate is paused")
    pauses = [t for t in session.state.transitions if t.event == Event.PAUSE.value]
    assert len(pauses) == 1
    # the other tab's Resume works and both tabs follow
    press(other, "resume")
    await user.should_see(marker="status-running", retries=20)
    assert await session.join() is State.COMPLETED


async def test_error_panel_shows_the_provider_message_and_retry_continues(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "2:auth")  # the second turn fails once with a fatal error
    session = await start_demo("Is remote work here to stay?")
    assert await session.join() is State.ERROR
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="error-panel")
    await user.should_see("simulated invalid API key")
    await user.should_see(marker="status-error")
    assert enabled(user) == {"pause": False, "resume": False, "retry": True, "stop": True}
    user.find(marker="error-retry").click()
    await user.should_see(marker="winner", retries=50)  # shown once the verdict is stored: the end follows
    assert await session.join() is State.COMPLETED


async def test_cost_warning_opens_a_dialog_to_acknowledge(user: User) -> None:
    session = await start_demo("Should tipping be banned?", budget={"warn_at": 0.0001, "cost_limit": None})
    assert await session.join() is State.AWAITING_ACK
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="status-awaiting_acknowledgement")
    await user.should_see(marker="cost-warning")
    dialog = next(e for e in user.client.elements.values() if "ack-dialog" in e._markers).parent_slot.parent
    assert dialog.value is True
    await user.should_see("warning threshold")
    user.find(marker="dialog-acknowledge").click()
    await user.should_see(marker="winner", retries=50)
    assert dialog.value is False
    assert await session.join() is State.COMPLETED  # the winner is shown once stored: the end follows


async def test_clarification_questions_are_answered_from_the_page(user: User) -> None:
    eng = await engine()
    form = blank_form()
    form["topic"] = "Plan a team offsite for 40 people"
    apply_preset(form, "collaborative")
    form["rounds"] = 1
    session = await eng.start(DebateConfig.model_validate(form_to_config(form)))
    assert await session.join() is State.AWAITING_CLARIFICATION
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="clarification")
    await user.should_see("What does success look like", retries=5)
    pid = session.state.config.participants[0].id
    user.find(marker=f"answer-{pid}-0").type("Everyone comes back rested")
    user.find(marker="submit-answers").click()
    await user.should_see(marker="past-clarifications", retries=30)
    assert session.state.answers[0].answers[pid][0] == "Everyone comes back rested"
    status = await session.join()
    while status is State.AWAITING_CLARIFICATION:  # a follow-up question: leave it unanswered
        await user.should_see(marker="submit-answers", retries=30)
        user.find(marker="submit-answers").click()
        await asyncio.wait_for(_until_not_waiting(session), 10)
        status = await session.join()
    assert status is State.COMPLETED
    await user.should_see(marker="synthesis", retries=30)


async def _until_not_waiting(session) -> None:
    """Wait for the committed transition out of awaiting_clarification (an engine event, no polling)."""
    left = asyncio.Event()

    def listener(message: object) -> None:
        event = getattr(message, "event", None)
        if event is not None and event.data.get("from") == State.AWAITING_CLARIFICATION.value:
            left.set()

    unsubscribe = session.subscribe(listener)
    try:
        if session.state.status is State.AWAITING_CLARIFICATION:
            await left.wait()
    finally:
        unsubscribe()


async def test_panel_rulings_round_scores_and_unavailable_verdict_render_from_state(user: User) -> None:
    session = await start_demo(
        "Should museums return colonial artefacts?", rounds=2,
        judge={"judges": [{"provider": "demo", "model": "demo"}, {"provider": "demo", "model": "demo-instant"}],
               "frequency": "round"})
    assert await session.join() is State.COMPLETED
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="rulings")
    await user.should_see(marker="disagreement")
    await user.should_see(marker="round-chart")
    chart = one(user, "round-chart")
    assert [s["name"] for s in chart.options["series"]] == [p.name for p in session.state.config.participants]
    assert len(chart.options["xAxis"]["data"]) == 2
    await user.should_see(marker="ended-because")

    # the page shows whatever the state holds: an unavailable verdict, turn notes, retry notes
    state = session.state
    state.verdict = Verdict(available=False, reasoning="The judge's reply was not valid JSON.",
                            raw_text="{not json <b>")
    state.turns[0].notes.append("truncated at a sentence boundary to the 60-word limit (was 80 words)")
    state.notes.append(RetryNote(turn=state.turns[1].key, attempt=1, error=ErrorInfo(message="simulated rate limit"),
                                 wait_s=0.5))
    state.notes.append(RetryNote(turn="verdict", attempt=2, error=ErrorInfo(message="overloaded"), wait_s=1))
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="verdict-unavailable")
    assert marked_texts(user, "raw-text") == ["{not json <b>"]
    notes = turn_notes(user)
    assert "truncated at a sentence boundary to the 60-word limit (was 80 words)" in notes
    assert "attempt 1 failed (simulated rate limit); retried after 0.5 s" in notes
    await user.should_see("verdict: attempt 2 failed (overloaded); retried after 1 s")


async def test_hostile_topic_and_model_output_stay_text(user: User) -> None:
    hostile = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2"> Is this safe?'
    session = await start_demo(hostile)
    await session.join()
    await user.open(f"/debate/{session.id}")
    assert one(user, "topic").text == hostile  # a text element: the browser shows it as text
    turns = transcript(user).turns
    # Model output reaches the browser as data, never as HTML: the browser escapes raw HTML before
    # rendering Markdown and sanitises the result (checked in Chromium by tests/e2e/test_spectating.py).
    assert any("<script>" in t["text"] for t in turns), "the demo model repeats the topic"
    assert "innerHTML" not in transcript(user).props


async def test_exports_download_markdown_json_and_text(user: User) -> None:
    session = await start_demo("Should the voting age be 16?")
    await session.join()
    await user.open(f"/debate/{session.id}")
    user.find(marker="export").click()
    user.find(marker="export-md").click()
    markdown = (await user.download.next()).text
    assert markdown.startswith("# Should the voting age be 16?")
    assert "## Verdict" in markdown and session.state.turns[0].text in markdown
    user.find(marker="export").click()
    user.find(marker="export-json").click()
    data = json.loads((await user.download.next()).text)
    assert data["id"] == session.id and data["status"] == "completed"
    assert {p["role"] for p in data["participants"]} == {"pro", "con"}
    assert len(data["turns"]) == len(session.state.turns)
    assert set(data["verdict"]["scores"]) == {p.id for p in session.state.config.participants}
    user.find(marker="export").click()
    user.find(marker="export-txt").click()
    text = (await user.download.next()).text
    assert "Winner:" in text and "Should the voting age be 16?" in text


async def test_unknown_debate_shows_not_found_with_http_404(user: User) -> None:
    response = await user.http_client.get("/debate/does-not-exist")
    assert response.status_code == 404
    assert "No debate with id &#x27;does-not-exist&#x27;." in response.text or \
        "No debate with id 'does-not-exist'." in response.text


async def test_a_restart_shows_a_running_debate_as_interrupted_with_resume(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 200)
    session = await start_demo("Is a hot dog a sandwich?")
    await first_live_text(session, 5)
    rt = runtime.current()
    await rt.stop()  # like the process going away mid-turn: nothing is recorded
    await rt.start()  # the app's startup: open the engine, recover interrupted debates
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="interrupted")
    await user.should_see(marker="status-interrupted")
    assert enabled(user)["resume"]
    user.find(marker="interrupted-resume").click()
    await user.should_see(marker="status-running", retries=20)
    reloaded = await (await engine()).session(session.id)
    assert reloaded is not session and await reloaded.join() is State.COMPLETED
    await user.should_see(marker="winner", retries=30)


async def test_a_person_can_retry_after_the_automatic_retries_are_used(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "2:auth")
    session = await start_demo("Are automatic retries enough?", max_retries=0)
    assert await session.join() is State.ERROR
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="retries-used")
    await user.should_see("All 0 automatic retries were used")
    assert one(user, "error-retry").enabled and enabled(user)["retry"]
    user.find(marker="error-retry").click()
    await user.should_see(marker="winner", retries=50)
    retry = [t for t in session.state.transitions if t.event == "RETRY"]
    assert retry and retry[-1].actor == "local"  # a person's retry, recorded as theirs


async def test_retry_notes_of_a_turn_that_never_finished_are_shown_after_a_reload(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "2:server!")  # the second turn fails on every attempt
    eng = await engine()
    monkeypatch.setattr(eng, "backoff_base", 0.0)
    session = await start_demo("Do retries leave a trace?")
    assert await session.join() is State.ERROR
    notes = [n for n in session.state.notes if n.type == "retry"]
    assert notes, "the automatic retries were recorded"
    unfinished = str(notes[0].turn)
    assert unfinished not in session.state.turn_keys
    await user.open(f"/debate/{session.id}")
    rows = sorted(user.find(marker="aux-note").elements, key=lambda e: e.id)
    shown = [next(d.text for d in row.descendants() if isinstance(d, ui.label)) for row in rows]
    assert len(shown) == len(notes) and all(t.startswith(f"{unfinished}:") for t in shown), shown


async def test_a_finished_debate_offers_re_run_and_no_command_buttons(user: User) -> None:
    session = await start_demo("Clone me?")
    await session.join()
    await user.open(f"/debate/{session.id}")
    link = one(user, "rerun")
    assert link.props["href"] == f"/new?from={session.id}"
    bar = one(user, "controls")
    assert all(bar.label(name) is None for name in CONTROLS)  # not four disabled buttons
    assert bar.parent_slot is not None and "sticky-bar" in bar.parent_slot.parent._markers  # in the sticky bar


async def test_a_cost_warning_during_the_verdict_is_shown_as_a_warning(user: User) -> None:
    topic = "Should sleep be scheduled?"
    probe = await start_demo(topic)  # the same debate unwarned: what its turns cost and what the verdict adds
    assert await probe.join() is State.COMPLETED
    turns = sum(t.cost_usd or 0.0 for t in probe.state.turns)
    total = probe.state.ledger.total_usd
    assert total > turns
    session = await start_demo(topic, budget={"warn_at": (turns + total) / 2, "cost_limit": None})
    assert await session.join() is State.COMPLETED  # the verdict cannot wait for an answer: it went on
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="cost-warning-note")
    note = one(user, "cost-warning-note")
    text = " ".join(e.text for e in note.descendants() if isinstance(e, ui.label))
    assert text.startswith("Spending warning: spending reached $") and "during the verdict" in text, text
    assert text.endswith("the verdict was not interrupted.")
