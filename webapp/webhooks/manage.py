"""What admins do with webhooks (register, list, remove, redeliver), checked and audited through the
gate like every other control action; the CLI and the admin page both call these.

Registering checks the URL with the SSRF guard (`resolve_target`) before anything is stored, and
returns the signing secret: the one time it is shown.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from webapp.access.gate import Gate
from webapp.access.roles import Action
from webapp.store.webhooks import DeliveryRow, EndpointFormat, EndpointRow, WebhookStore
from webapp.webhooks.events import parse_events
from webapp.webhooks.guard import resolve_target, shown_url
from webapp.webhooks.sender import RETRY_WINDOW
from webapp.webhooks.signing import new_secret


class UnknownWebhook(KeyError):
    """No endpoint (or delivery) with that id."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Registered:
    """A new endpoint and its signing secret (shown once, never again)."""

    endpoint: EndpointRow
    secret: str


class WebhookAdmin:
    """Webhook management as one principal (`gate`); every change needs `MANAGE_WEBHOOKS` and is audited."""

    def __init__(self, gate: Gate, allow_private: bool) -> None:
        self.gate = gate
        self.webhooks = WebhookStore(gate.engine.store)
        self.allow_private = allow_private

    async def add(self, url: str, events: str | list[str], format: EndpointFormat = "json") -> Registered:
        """Register an endpoint; raises `WebhookRefused` (bad or private URL) or ValueError (events)."""
        principal = await self.gate.authorize(Action.MANAGE_WEBHOOKS)
        names = parse_events(events)
        url = url.strip()
        await resolve_target(url, self.allow_private)
        secret = new_secret()
        row = await self.webhooks.add_endpoint(url, names, secret, principal.actor, format)
        await self.gate.accounts.audit(principal.actor, "webhook_add",
                                       detail={"endpoint": row.id, "url": shown_url(url), "events": names,
                                               "format": format})
        return Registered(row, secret)

    async def endpoints(self) -> list[EndpointRow]:
        await self.gate.authorize(Action.MANAGE_WEBHOOKS)
        return await self.webhooks.endpoints()

    async def remove(self, endpoint_id: str) -> EndpointRow:
        principal = await self.gate.authorize(Action.MANAGE_WEBHOOKS)
        row = await self.webhooks.endpoint(endpoint_id.strip())
        if row is None or not await self.webhooks.remove_endpoint(row.id):
            raise UnknownWebhook(f"no webhook endpoint with id {endpoint_id.strip()!r}")
        await self.gate.accounts.audit(principal.actor, "webhook_remove",
                                       detail={"endpoint": row.id, "url": shown_url(row.url)})
        return row

    async def deliveries(self, offset: int = 0, limit: int = 50,
                         endpoint_id: str | None = None) -> tuple[list[DeliveryRow], int]:
        await self.gate.authorize(Action.MANAGE_WEBHOOKS)
        return await self.webhooks.deliveries(offset, limit, endpoint_id=endpoint_id)

    async def redeliver(self, delivery_id: str) -> DeliveryRow:
        """Send a delivery again (a sender takes it at its next look); ValueError while it is being sent."""
        principal = await self.gate.authorize(Action.MANAGE_WEBHOOKS)
        row = await self.webhooks.delivery(delivery_id.strip())
        if row is None:
            raise UnknownWebhook(f"no webhook delivery with id {delivery_id.strip()!r}")
        if not await self.webhooks.redeliver(row.id, time.time(), RETRY_WINDOW):
            raise ValueError(f"delivery {row.id} is being sent right now; look again in a moment")
        await self.gate.accounts.audit(principal.actor, "webhook_redeliver",
                                       detail={"delivery": row.id, "endpoint": row.endpoint_id, "event": row.event})
        return row
