"""The admin's Webhooks page: add an endpoint (a private address refused unless allowed; the secret
shown once), the endpoint listed without its secret, the delivery log with Redeliver, and a viewer kept
out."""

from __future__ import annotations

import time

import pytest
from nicegui.testing import User

from tests.ui.helpers import engine, one
from tests.ui.test_access import add_users, auth_on, signed_in  # noqa: F401 (auth_on is a fixture)
from webapp.settings import get_settings
from webapp.store.webhooks import WebhookStore


async def test_an_admin_adds_an_endpoint_sees_its_secret_once_and_redelivers(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    await user.open("/admin/webhooks")  # sign-in off on loopback: the local person is an admin
    await user.should_see(marker="webhook-none")
    user.find(marker="webhook-url").type("http://127.0.0.1:9/hook")
    user.find(marker="webhook-add").click()
    await user.should_see("ROSTRUM_WEBHOOK_ALLOW_PRIVATE=1")
    hooks = WebhookStore((await engine()).store)
    assert await hooks.endpoints() == []

    monkeypatch.setenv("ROSTRUM_WEBHOOK_ALLOW_PRIVATE", "1")
    get_settings.cache_clear()
    await user.open("/admin/webhooks")
    user.find(marker="webhook-url").type("http://127.0.0.1:9/hook")
    user.find(marker="webhook-event-debate.error").click()
    user.find(marker="webhook-add").click()
    await user.should_see(marker="webhook-secret")
    [endpoint] = await hooks.endpoints()
    assert endpoint.events == ["debate.completed", "debate.error"]
    assert one(user, "webhook-secret").value == endpoint.secret
    await user.should_see(marker=f"webhook-{endpoint.id}")

    await hooks.enqueue("debate.completed", "d1:9", {"event": "debate.completed"}, subject="d1", now=time.time(),
                        window=3600)
    [claimed] = await hooks.claim(await hooks.due(time.time(), 5), "test", time.time(), 60)
    await hooks.finish(claimed.delivery.id, "test", now=time.time(), status_code=500, error="HTTP 500: nope",
                       retry_at=None)
    await user.open("/admin/webhooks")
    await user.should_see(marker="webhook-deliveries")
    [row] = one(user, "webhook-deliveries").rows
    assert (row["event"], row["status"], row["code"], row["error"]) == ("debate.completed", "failed", 500,
                                                                       "HTTP 500: nope")
    assert endpoint.secret not in str(one(user, "webhook-deliveries").rows)
    # The Redeliver button is a slot of the table: its click emits the table's `redeliver` event.
    user.find(marker="webhook-deliveries").trigger("redeliver", claimed.delivery.id)
    await user.should_see("will be sent again")
    again = await hooks.delivery(claimed.delivery.id)
    assert again is not None and again.status == "pending"


async def test_a_viewer_cannot_open_the_webhooks_page(user: User, auth_on: None) -> None:  # noqa: F811
    await add_users(("vic", "viewer"))
    await signed_in(user, "vic")
    response = await user.http_client.get("/admin/webhooks")
    assert response.status_code == 403
