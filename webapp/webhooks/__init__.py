"""Signed webhooks: admins register endpoints for debate and tournament events; a debate only queues a
delivery (in the store), and a background sender POSTs it, signed, with retries for up to 24 hours.

- `events`: which committed events are webhook events, and the JSON a delivery carries;
- `signing`: secrets and the `X-Rostrum-Signature` / `X-Rostrum-Timestamp` headers;
- `guard`: refuses endpoints on loopback or private addresses and pins the address it checked;
- `relay`: taps the engine (a debate's committed events, a tournament's end) and queues deliveries;
  `sender`: sends them (once, across processes);
- `manage`: registering, listing, removing and redelivering, through the gate.
`Webhooks` wires the relay and the sender into one process (the web app, a worker, a CLI command).
"""

from __future__ import annotations

from webapp.engine.engine import Engine
from webapp.settings import Settings
from webapp.webhooks.events import EVENTS
from webapp.webhooks.relay import WebhookRelay
from webapp.webhooks.sender import WebhookSender

__all__ = ["EVENTS", "WebhookRelay", "WebhookSender", "Webhooks"]


class Webhooks:
    """The relay (queues this process's events) and, with `send`, a sender, for one engine."""

    def __init__(self, engine: Engine, settings: Settings, send: bool = True) -> None:
        self.sender = WebhookSender(engine.store, allow_private=settings.webhook_allow_private) if send else None
        self.relay = WebhookRelay(engine, settings.base_url,
                                  on_queued=self.sender.wake if self.sender is not None else None)

    async def start(self) -> None:
        self.relay.start()
        if self.sender is not None:
            await self.sender.start()

    async def close(self, drain: float = 0.0) -> None:
        """Queue what was tapped; with `drain`, give what is due that many seconds to go out; stop."""
        await self.relay.close()
        if self.sender is not None:
            if drain > 0:
                await self.sender.drain(drain)
            await self.sender.close()

