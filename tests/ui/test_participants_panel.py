"""The debate page's participants panel says when a provider ignores a participant's temperature."""

from __future__ import annotations

import pytest
from nicegui.testing import User

from tests.ui.helpers import engine, one
from webapp.models import DebateConfig, Participant


async def test_the_panel_notes_a_temperature_anthropic_is_not_sent(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # created, never started: nothing is called
    config = DebateConfig(topic="Temperature", format="oxford", participants=[
        Participant(name="Ada", provider="anthropic", model="claude-test", position="pro", temperature=0.7),
        Participant(name="Bo", position="con", temperature=0.7)])
    await user.open("/")
    debate_id = await (await engine()).create(config)
    await user.open(f"/debate/{debate_id}")
    panel = one(user, "participants")
    assert panel.notes("ada") == ["temperature 0.7 not sent (anthropic does not accept it)"]
    assert panel.notes("bo") == []


async def test_personas_are_on_the_panel_after_the_start(user: User) -> None:
    long = "A retired judge who weighs every claim against the record. " * 5
    config = DebateConfig(topic="Personas", format="oxford", participants=[
        Participant(name="Ada", position="pro", persona="Calm and precise."),
        Participant(name="Bo", position="con", persona=long)])
    await user.open("/")
    debate_id = await (await engine()).create(config)
    await user.open(f"/debate/{debate_id}")
    panel = one(user, "participants")
    assert panel.persona("ada") == "Calm and precise."
    assert panel.persona("bo") == long.strip()  # the page folds a long one (participants.js)


async def test_a_participant_named_after_its_model_is_said_once_on_the_page(user: User) -> None:
    config = DebateConfig(topic="Names", format="oxford", participants=[
        Participant(id="g", name="demo:gamma", provider="demo", model="gamma", position="pro"),
        Participant(id="b", name="Bo", provider="demo", model="beta", position="con")])
    await user.open("/")
    debate_id = await (await engine()).create(config)
    await user.open(f"/debate/{debate_id}")
    shown = {p["id"]: (p["name"], p["model"]) for p in one(user, "participants").people}
    assert shown == {"g": ("demo:gamma", ""), "b": ("Bo", "demo:beta")}  # not "demo:gamma" twice
    people = one(user, "transcript").props["people"]  # each turn's header: the same
    assert (people["g"]["model"], people["b"]["model"]) == ("", "demo:beta")
