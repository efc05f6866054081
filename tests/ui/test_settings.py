"""Settings: provider readiness without ever showing a key, and defaults for new debates."""

from __future__ import annotations

import asyncio

import pytest
from nicegui.testing import User

from tests.ui.helpers import assert_nowhere_on_page, notified, one
from webapp.settings import get_settings


def provider_rows(user: User) -> dict[str, dict]:
    return {row["title"]: row for row in one(user, "providers").rows}


async def test_providers_show_whether_a_key_is_set_but_never_the_key(user: User,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "fake-anthropic-key-SECRET-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    get_settings.cache_clear()
    await user.open("/settings")
    rows = provider_rows(user)
    assert rows["Anthropic"]["status"] == "key configured"
    assert rows["Anthropic"]["key_env"] == "ANTHROPIC_API_KEY"
    assert rows["OpenAI"]["status"] == "not configured"
    assert rows["Demo (offline)"]["status"] == "ready (no key needed)"
    assert rows["Ollama"]["url"] == "http://localhost:11434/v1"  # compatible presets are listed
    assert_nowhere_on_page(user, secret)


async def test_saved_defaults_prefill_the_new_debate_form(user: User) -> None:
    await user.open("/settings")
    fields = {e.props.get("label"): e for e in user.client.elements.values() if e.props.get("label")}
    with user:
        fields["Format"].value = "roundtable"
        fields["Hard limit (USD)"].value = 2.5
        fields["Warn at (USD)"].value = 3
    user.find(marker="save-defaults").click()
    await user.should_see("The hard limit must be at least the warning threshold.")
    with user:
        fields["Warn at (USD)"].value = 1
    saved = notified("Defaults saved", user)
    user.find(marker="save-defaults").click()
    await asyncio.wait_for(saved.wait(), 5)
    await user.open("/new")
    assert one(user, "field-format").value == "roundtable"
    assert one(user, "field-budget.cost_limit").value == 2.5
    assert one(user, "field-budget.warn_at").value == 1
    assert one(user, "field-participants[2].position").value == "pragmatist"  # the format's cast
