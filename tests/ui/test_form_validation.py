"""The new-debate form's validation in plain words, the summary that leads to each field, no clamping,
duplicate names, the form kept in the tab across reloads, Reset, presets that never write the topic,
Ctrl+Enter, and Clone (`/new?from=ID`)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from nicegui.testing import User

from tests.ui.helpers import engine, one, start_by_clicking, start_demo
from webapp.engine.machine import State
from webapp.ui.components.presets import QUICK_DEMO_TOPIC


def _set(user: User, marker: str, value: object) -> None:
    with user:
        one(user, marker).value = value


async def _open(user: User, path: str = "/new") -> None:
    """Open the form and wait until it is kept in the tab (what a reload restores is on screen)."""
    await user.open(path)
    await user.should_see(marker="form-kept")


async def _refused(user: User) -> None:
    user.find(marker="start").click()
    await user.should_see(marker="form-errors")
    assert (await engine()).sessions == {}


async def test_out_of_range_numbers_are_errors_at_their_fields_and_kept_as_typed(user: User) -> None:
    await _open(user)
    _set(user, "field-topic", "Should exams be open-book?")
    for marker in ("field-rounds", "field-participants[0].temperature", "field-participants[0].max_tokens",
                   "field-budget.warn_at", "field-budget.cost_limit"):
        props = one(user, marker).props
        assert "min" not in props and "max" not in props, marker  # the browser would clamp on blur
    _set(user, "field-rounds", 99)
    _set(user, "field-participants[0].temperature", 5)
    _set(user, "field-participants[1].max_tokens", 10)
    await _refused(user)
    assert one(user, "field-rounds").error == "Classic takes 1 to 5 rounds; 99 is out of range"
    assert one(user, "field-participants[0].temperature").error == (
        "The temperature of participant 1 (Affirmative) must be at most 2")
    assert one(user, "field-participants[1].max_tokens").error == (
        "The max tokens of participant 2 (Negative) must be at least 16")
    assert one(user, "field-rounds").value == 99  # not clamped to 5
    assert one(user, "field-participants[0].temperature").value == 5  # not clamped to 2.0


async def test_budget_topic_and_url_messages_are_plain_words(user: User) -> None:
    await _open(user)
    _set(user, "field-budget.warn_at", 2)
    _set(user, "field-budget.cost_limit", 1)
    _set(user, "field-participants[1].provider", "compatible")
    await user.should_see(marker="field-participants[1].base_url")
    _set(user, "field-participants[1].base_url", "localhost:11434")
    await _refused(user)
    assert one(user, "field-topic").error == "The topic is required"
    assert one(user, "field-budget.cost_limit").error == "The cost limit must be at least the warn-at amount"
    assert one(user, "field-participants[1].base_url").error == "The base URL must start with http:// or https://"
    # the summary lists each problem in page order, in the same words, and no internal path
    labels = [e.props["label"] for e in one(user, "form-errors").descendants() if "label" in e.props]
    assert labels == ["The topic is required", "The base URL must start with http:// or https://",
                      "The cost limit must be at least the warn-at amount"]


async def test_the_summary_and_a_failed_start_focus_the_field(user: User) -> None:
    await _open(user)
    focused: list[str] = []
    arrived = asyncio.Event()
    enqueue = user.client.outbox.enqueue_message

    def recording(message_type: str, data: Any, target_id: Any) -> None:
        match = re.search(r"getElementById\('(c\d+)'\)", str(data.get("code", ""))) if isinstance(data, dict) \
            else None
        if message_type == "run_javascript" and match:
            focused.append(match.group(1))
            arrived.set()
        enqueue(message_type, data, target_id)

    user.client.outbox.enqueue_message = recording  # type: ignore[method-assign]
    _set(user, "field-budget.warn_at", 2)
    _set(user, "field-budget.cost_limit", 1)
    await _refused(user)
    await asyncio.wait_for(arrived.wait(), 5)
    assert focused == [one(user, "field-topic").html_id]  # the first error on the page, not the last
    arrived.clear()
    user.find(marker="error-link-budget.cost_limit").click()
    await asyncio.wait_for(arrived.wait(), 5)
    assert focused[-1] == one(user, "field-budget.cost_limit").html_id


async def test_two_participants_with_one_name_are_refused_at_the_field(user: User) -> None:
    await _open(user)
    _set(user, "field-topic", "Should exams be open-book?")
    _set(user, "field-participants[1].name", " affirmative ")
    await _refused(user)
    assert one(user, "field-participants[1].name").error == (
        "Two participants are called 'affirmative'; give each a different name")
    assert one(user, "field-participants[0].name").error is None
    _set(user, "field-participants[1].name", "Bo")
    assert one(user, "field-participants[1].name").error is None  # fixing it clears it at once
    config = (await start_by_clicking(user)).state.config
    assert [p.name for p in config.participants] == ["Affirmative", "Bo"]


async def test_the_form_survives_a_reload_and_reset_empties_it(user: User) -> None:
    await _open(user)
    _set(user, "field-topic", "Should exams be open-book?")
    _set(user, "field-participants[0].name", "Ada")
    user.find(marker="add-participant").click()
    await user.should_see("Participants (3)")
    _set(user, "field-rounds", 4)
    await _open(user)  # a reload of the same tab
    assert one(user, "field-topic").value == "Should exams be open-book?"
    assert one(user, "field-participants[0].name").value == "Ada"
    assert one(user, "field-participants[2].name").value == "Participant 3"
    assert one(user, "field-rounds").value == 4
    user.find(marker="reset-form").click()
    await user.should_see("Participants (2)")
    assert one(user, "field-topic").value == ""
    assert one(user, "field-participants[0].name").value == "Affirmative"
    await _open(user)
    assert one(user, "field-topic").value == ""  # the reset form is what the tab keeps
    await user.should_see("Participants (2)")


async def test_a_preset_never_writes_the_topic_and_an_empty_topic_takes_its_sample(user: User) -> None:
    await _open(user)
    user.find(marker="preset-quick-demo").click()
    assert one(user, "field-topic").value == ""  # nothing written that typing could race with
    assert one(user, "field-topic").props["placeholder"] == QUICK_DEMO_TOPIC
    user.find(marker="field-topic").type("Is tea better than coffee?")  # typed right after the click
    user.find(marker="preset-roundtable").click()
    assert one(user, "field-topic").value == "Is tea better than coffee?"
    _set(user, "field-topic", "")
    config = (await start_by_clicking(user)).state.config
    assert config.format == "roundtable"
    assert config.topic == "How should schools respond to AI writing assistants?"  # the preset's sample


async def test_ctrl_enter_anywhere_on_the_form_starts_the_debate(user: User) -> None:
    await _open(user)
    _set(user, "field-topic", "Should exams be open-book?")
    user.find(marker="debate-form").trigger("keydown.ctrl.enter")
    await user.should_see(marker="transcript", retries=100)
    (session,) = (await engine()).sessions.values()
    assert session.state.config.topic == "Should exams be open-book?"


async def test_clone_prefills_the_form_from_a_debate(user: User) -> None:
    source = await start_demo("Should libraries lend tools?", word_limit=40, strict=True)
    assert await source.join() is State.COMPLETED
    await _open(user, f"/new?from={source.id}")
    assert one(user, "field-topic").value == "Should libraries lend tools?"
    assert one(user, "field-format").value == "oxford"
    assert one(user, "field-word_limit").value == 40
    assert one(user, "field-strict").value is True
    _set(user, "field-topic", "Should libraries lend seeds?")
    await _open(user, f"/new?from={source.id}")  # a reload of the clone keeps what was changed
    assert one(user, "field-topic").value == "Should libraries lend seeds?"
    user.find(marker="start").click()
    await user.should_see(marker="transcript", retries=100)
    clone = next(s for s in (await engine()).sessions.values() if s.id != source.id)
    expected = source.state.config.model_dump(exclude={"topic", "series", "rematch_of"})
    assert clone.state.config.model_dump(exclude={"topic", "series", "rematch_of"}) == expected
    assert clone.state.config.topic == "Should libraries lend seeds?"


async def test_clone_of_an_unknown_debate_says_so_and_starts_empty(user: User) -> None:
    await _open(user, "/new?from=nosuchdebate")
    await user.should_see("No debate with id 'nosuchdebate' to copy")
    assert one(user, "field-topic").value == ""


async def test_a_repeated_judge_and_no_criteria_are_refused_in_plain_words(user: User) -> None:
    await _open(user)
    _set(user, "field-topic", "Should exams be open-book?")
    user.find(marker="add-judge").click()
    await user.should_see(marker="field-judge.judges[1].model")
    _set(user, "field-judge.judges[1].provider", one(user, "field-judge.judges[0].provider").value)
    _set(user, "field-judge.judges[1].model", one(user, "field-judge.judges[0].model").value)
    repeated = f"Judge 2 repeats {one(user, 'field-judge.judges[0].provider').value}:" \
               f"{one(user, 'field-judge.judges[0].model').value}: a panel needs different models"
    _set(user, "field-judge.criteria", [])
    await _refused(user)
    await user.should_see(repeated)
    await user.should_see("Give at least one judging criterion")
    assert one(user, "field-judge.criteria").error == "Give at least one judging criterion"
    labels = [e.props["label"] for e in one(user, "form-errors").descendants() if "label" in e.props]
    assert repeated in labels and "Give at least one judging criterion" in labels
    for label in labels:  # no internal path in any message
        assert not re.search(r"\w+\.\w+|\[\d+\]", label), label
