"""The new-debate form: validation messages at the field, nothing typed is lost, presets, starting."""

from __future__ import annotations

import pytest
from nicegui.testing import User

from tests.ui.helpers import engine, one
from webapp.engine.machine import State
from webapp.models import TOPIC_MAX_CHARS
from webapp.settings import get_settings


async def test_empty_topic_is_reported_at_the_field_and_typed_values_survive(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-participants[0].name").clear().type("Alice the Bold")
    user.find(marker="field-participants[0].persona").type("A careful economist.")
    user.find(marker="start").click()
    await user.should_see("The topic is required")
    assert one(user, "field-topic").error == "The topic is required"
    await user.should_see(marker="form-errors")
    # the re-rendered form still holds what was typed
    assert one(user, "field-participants[0].name").value == "Alice the Bold"
    assert one(user, "field-participants[0].persona").value == "A careful economist."
    assert (await engine()).sessions == {}


async def test_too_long_topic_is_refused(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("x" * (TOPIC_MAX_CHARS + 1))
    user.find(marker="start").click()
    await user.should_see(f"at most {TOPIC_MAX_CHARS} characters")
    assert "2000" in one(user, "field-topic").error
    assert len(one(user, "field-topic").value) == TOPIC_MAX_CHARS + 1  # kept, not truncated


async def test_bad_base_url_budget_and_missing_key_errors_name_their_fields(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("Is tea better than coffee?")
    provider = one(user, "field-participants[0].provider")
    assert provider.options["openai"] == "OpenAI — unavailable: set OPENAI_API_KEY"
    with user:
        provider.value = "compatible"
    await user.should_see(marker="field-participants[0].base_url")
    user.find(marker="field-participants[0].base_url").type("localhost:11434")
    user.find(marker="field-budget.warn_at").type("2")
    user.find(marker="field-budget.cost_limit").type("1")
    user.find(marker="start").click()
    await user.should_see("base_url must start with http:// or https://")
    assert "http://" in one(user, "field-participants[0].base_url").error
    assert "cost_limit" in one(user, "field-budget.cost_limit").error
    assert one(user, "field-participants[0].base_url").value == "localhost:11434"

    # fix those; pick OpenAI for the second speaker without a key configured
    with user:
        one(user, "field-participants[0].base_url").value = "http://localhost:11434/v1"
        one(user, "field-budget.cost_limit").value = 5
        one(user, "field-participants[1].provider").value = "openai"
    await user.should_see("Unavailable: set OPENAI_API_KEY in the environment or .env and restart, or pick another "
                          "provider.")
    user.find(marker="start").click()
    await user.should_see("needs an API key: set OPENAI_API_KEY")
    assert "OPENAI_API_KEY" in one(user, "field-participants[1].provider").error
    assert (await engine()).sessions == {}


async def test_participant_editor_adds_reorders_and_removes(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-participants[0].name").clear().type("First")
    user.find(marker="add-participant").click()
    await user.should_see("Participants (3)")
    assert one(user, "field-participants[2].name").value == "Participant 3"
    assert not one(user, "move-up-0").enabled and not one(user, "move-down-2").enabled
    user.find(marker="move-down-0").click()
    assert [one(user, f"field-participants[{i}].name").value for i in range(3)] == [
        "Negative", "First", "Participant 3"]
    user.find(marker="remove-participant-2").click()
    await user.should_see("Participants (2)")
    # two participants is the minimum: both remove buttons are disabled now
    assert not one(user, "remove-participant-0").enabled
    assert not one(user, "remove-participant-1").enabled
    assert one(user, "field-participants[1].name").value == "First"


async def test_quick_demo_preset_starts_a_debate_and_opens_its_page(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("Should homework be abolished?")
    user.find(marker="preset-quick-demo").click()
    assert one(user, "field-topic").value == "Should homework be abolished?"  # a typed topic is kept
    assert one(user, "field-format").value == "oxford"
    user.find(marker="start").click()
    await user.should_see(marker="transcript")
    (session,) = (await engine()).sessions.values()
    assert session.state.config.topic == "Should homework be abolished?"
    assert all(p.provider == "demo" for p in session.state.config.participants)
    assert await session.join() is State.COMPLETED
    await user.should_see(marker="winner", retries=20)


@pytest.mark.parametrize("format_id", ["roundtable", "collaborative"])
async def test_format_presets_fill_a_cast_that_validates(user: User, format_id: str) -> None:
    await user.open("/new")
    user.find(marker=f"preset-{format_id}").click()
    assert one(user, "field-format").value == format_id
    user.find(marker="start").click()
    await user.should_see(marker="transcript")
    (session,) = (await engine()).sessions.values()
    assert session.state.config.format == format_id


async def test_key_never_reaches_the_page(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-NEVER-SHOW-THIS-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    get_settings.cache_clear()
    await user.open("/new")
    assert one(user, "field-participants[0].provider").options["openai"] == "OpenAI"  # available now
    for element in user.client.elements.values():
        assert secret not in str(element.props) and secret not in str(getattr(element, "text", "") or "")
