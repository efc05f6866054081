"""Keys and endpoints in the web app: the new-debate form refuses a preset's key at a typed URL (at the
Base URL field, before any call), an admin registers an endpoint in Settings (audited), operators pick
it in the preset picker and its key goes there."""

from __future__ import annotations

import asyncio

import pytest
from nicegui.testing import User

from tests.fakellm import FakeLLMServer
from tests.keytrap import KeyTrap
from tests.ui.helpers import assert_nowhere_on_page, engine, notified, one
from tests.ui.test_access import accounts, add_users, audit_rows, browser, signed_in
from webapp.engine.machine import State
from webapp.settings import get_settings
from webapp.store.accounts import Accounts
from webapp.store.endpoints import EndpointStore

CANARY = "canary-openrouter-" + "3" * 24
TEAM_KEY = "canary-team-" + "4" * 24


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", CANARY)
    monkeypatch.setenv("TEAM_VLLM_KEY", TEAM_KEY)
    get_settings.cache_clear()


async def _compatible_row(user: User, topic: str) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type(topic)
    with user:
        one(user, "field-participants[0].provider").value = "compatible"
    await user.should_see(marker="field-participants[0].base_url")


async def test_the_form_refuses_a_preset_key_at_a_typed_url_at_the_base_url_field(user: User) -> None:
    with KeyTrap() as trap:
        await _compatible_row(user, "Should keys travel?")
        with user:
            one(user, "field-participants[0].preset").value = "openrouter"
            one(user, "field-participants[0].base_url").value = f"{trap.url}/v1"
        user.find(marker="start").click()
        await user.should_see("OPENROUTER_API_KEY is only sent to openrouter.ai")
        assert "ask an admin to register this endpoint" in one(user, "field-participants[0].base_url").error
        assert (await engine()).sessions == {}
        user.find(marker="test-connection-participants[0]").click()  # asks without the key, as before
        await user.should_see(marker="connection-participants[0]")
        assert [seen.authorization for seen in trap.requests] == [None]
    assert_nowhere_on_page(user, CANARY)


async def test_an_admin_registers_an_endpoint_operators_pick_it_and_its_key_goes_there(
        user: User, fake_llm: FakeLLMServer) -> None:
    await user.open("/settings")
    await user.should_see(marker="endpoints")
    await user.should_see("No endpoint is registered.")
    with user:
        one(user, "endpoint-name").value = "Team vLLM"
        one(user, "endpoint-url").value = "http://169.254.169.254/v1"
    user.find(marker="endpoint-add").click()
    await user.should_see("link-local or cloud-metadata address")
    with user:
        one(user, "endpoint-url").value = fake_llm.openai_url
        one(user, "endpoint-key-env").value = "TEAM_VLLM_KEY"
    registered = notified("Endpoint Team vLLM registered", user)
    user.find(marker="endpoint-add").click()
    await asyncio.wait_for(registered.wait(), 5)
    await user.should_see(marker="endpoint-Team vLLM")
    store = (await engine()).store
    assert [e.name for e in await EndpointStore(store).list()] == ["Team vLLM"]
    audit, _ = await Accounts(store).audit_page()
    assert [(row.action, row.outcome) for row in audit][:2] == [("endpoint_add", "ok"), ("endpoint_add", "refused")]
    assert_nowhere_on_page(user, TEAM_KEY)

    await _compatible_row(user, "Should teams share servers?")
    preset = one(user, "field-participants[0].preset")
    assert preset.options["endpoint:Team vLLM"] == f"Registered: Team vLLM ({fake_llm.openai_url})"
    with user:
        preset.value = "endpoint:Team vLLM"
        one(user, "field-participants[0].model").value = "team-model"
    await user.should_see(marker="endpoint-note-participants[0]")
    assert one(user, "field-participants[0].base_url").value == fake_llm.openai_url
    user.find(marker="start").click()
    await user.should_see(marker="status-completed", retries=100)
    [session] = (await engine()).sessions.values()
    assert session.state.status is State.COMPLETED
    assert {r.headers["authorization"] for r in fake_llm.model_requests} == {f"Bearer {TEAM_KEY}"}


@pytest.fixture
def sign_in_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_AUTH", "on")
    get_settings.cache_clear()


async def test_only_an_admin_registers_endpoints_checked_on_the_server(user: User, sign_in_on: None) -> None:
    await add_users(("boss", "admin"), ("ops", "operator"))
    await signed_in(user, "ops", page="/settings")
    await user.should_not_see(marker="endpoints")  # not shown to operators
    other = browser()
    await signed_in(other, "boss", page="/settings")
    await other.should_see(marker="endpoints")
    with other:
        one(other, "endpoint-name").value = "Team vLLM"
        one(other, "endpoint-url").value = "http://10.0.0.5:8000/v1"
    await (await accounts()).set_role("boss", "operator")  # demoted while the page is open
    refused = notified("Not done", other)
    other.find(marker="endpoint-add").click()
    await asyncio.wait_for(refused.wait(), 5)
    assert await EndpointStore((await engine()).store).list() == []
    assert [(r.actor, r.outcome) for r in await audit_rows("server_settings")][:1] == [("boss", "refused")]
