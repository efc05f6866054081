"""Webhook endpoints and their delivery queue (migration `016_webhooks`), on either store: the SQL both
databases accept, `?` placeholders (`webapp.store.sql`).

A delivery is one event for one endpoint. Queueing it is one insert that does nothing when the endpoint
already has that event (`event_key`): a process that sees an event twice, or two processes that both see
it, queue it once. A sender takes due deliveries with a conditional update (a lease, as the debate
workers take debates: `webapp.workers.leases`): of two senders claiming the same row at once exactly one
gets it, so each delivery is sent once; a sender that dies mid-send lets its lease lapse and another one
sends the delivery again later. Recording the result only touches a row the caller still holds.

The signing secret is stored because the sender needs it to sign every delivery (an API token or a
share-link token is only ever compared, so only its hash is kept); it is shown once, when the endpoint
is registered, and never listed, logged or sent to a browser again (`EndpointRow.public`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from webapp.models import utcnow
from webapp.store.protocol import EventStore
from webapp.store.sql import Where, model_row, page, runner

EndpointFormat = Literal["json", "slack"]
DeliveryStatus = Literal["pending", "delivered", "failed"]


class EndpointRow(BaseModel):
    """One registered endpoint: where to send, which events, signed with `secret`."""

    id: str
    url: str
    events: list[str]
    secret: str
    format: EndpointFormat = "json"
    created_by: str
    created_at: datetime

    def public(self) -> dict[str, Any]:
        """What may be listed or shown: the secret only as its last four characters."""
        return self.model_dump(mode="json", exclude={"secret"}) | {"secret_hint": "…" + self.secret[-4:]}


class DeliveryRow(BaseModel):
    """One event queued for one endpoint, and what came of sending it. Times: seconds since the epoch."""

    id: str
    endpoint_id: str
    event: str
    event_key: str
    subject: str = ""  # the debate's (or tournament's) id, for finding its deliveries
    payload: dict[str, Any]
    status: DeliveryStatus = "pending"
    attempts: int = 0
    created_at: float
    next_attempt_at: float
    give_up_at: float
    lease_owner: str | None = None
    lease_until: float | None = None
    last_attempt_at: float | None = None
    last_status: int | None = None
    last_error: str | None = None
    delivered_at: float | None = None


@dataclass(frozen=True)
class Claimed:
    """A delivery a sender holds, with what it needs to send it."""

    delivery: DeliveryRow
    url: str
    secret: str
    format: EndpointFormat


ENDPOINT_COLUMNS = tuple(EndpointRow.model_fields)
DELIVERY_COLUMNS = tuple(DeliveryRow.model_fields)
_ENDPOINT_SELECT = ", ".join(ENDPOINT_COLUMNS)
_DELIVERY_SELECT = ", ".join(f"d.{c}" for c in DELIVERY_COLUMNS)
# Taken only while nobody holds a live lease on it, so of two senders exactly one gets each row.
_CLAIM = """UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?, attempts = attempts + 1,
    last_attempt_at = ? WHERE id = ? AND status = 'pending' AND next_attempt_at <= ?
    AND (lease_until IS NULL OR lease_until < ?)"""
_QUEUE = """INSERT INTO webhook_deliveries (id, endpoint_id, event, event_key, subject, payload, status, attempts,
    created_at, next_attempt_at, give_up_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)
    ON CONFLICT (endpoint_id, event_key) DO NOTHING"""


def _endpoint(r: tuple[Any, ...]) -> EndpointRow:
    return model_row(EndpointRow, ENDPOINT_COLUMNS, r, json_columns=("events",))


def _delivery(r: tuple[Any, ...]) -> DeliveryRow:
    return model_row(DeliveryRow, DELIVERY_COLUMNS, r, json_columns=("payload",))


class WebhookStore:
    """The webhook tables of one store."""

    def __init__(self, store: EventStore) -> None:
        self.store = runner(store)

    # --- endpoints ---------------------------------------------------------------------------

    async def add_endpoint(self, url: str, events: Iterable[str], secret: str, created_by: str,
                           format: EndpointFormat = "json") -> EndpointRow:
        row = EndpointRow(id=uuid.uuid4().hex[:10], url=url, events=list(events), secret=secret, format=format,
                          created_by=created_by, created_at=utcnow())
        async with self.store.transaction() as tx:
            await tx.execute(
                f"INSERT INTO webhook_endpoints ({_ENDPOINT_SELECT}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (row.id, row.url, json.dumps(row.events), row.secret, row.format, row.created_by,
                 row.created_at.isoformat()))
        return row

    async def endpoints(self) -> list[EndpointRow]:
        rows = await self.store.fetchall(f"SELECT {_ENDPOINT_SELECT} FROM webhook_endpoints ORDER BY created_at, id")
        return [_endpoint(r) for r in rows]

    async def endpoint(self, endpoint_id: str) -> EndpointRow | None:
        row = await self.store.fetchone(f"SELECT {_ENDPOINT_SELECT} FROM webhook_endpoints WHERE id = ?",
                                        (endpoint_id,))
        return _endpoint(row) if row else None

    async def remove_endpoint(self, endpoint_id: str) -> bool:
        """Remove an endpoint with its deliveries (queued ones are not sent)."""
        async with self.store.transaction() as tx:
            done = await tx.execute("DELETE FROM webhook_endpoints WHERE id = ?", (endpoint_id,))
        return done.rowcount > 0

    # --- queueing ----------------------------------------------------------------------------

    async def enqueue(self, event: str, event_key: str, payload: dict[str, Any], *, subject: str = "",
                      now: float, window: float) -> int:
        """Queue `event` for every endpoint that asked for it (once per endpoint and `event_key`), to be
        tried until `now + window`; how many deliveries were queued."""
        wanted = [e for e in await self.endpoints() if event in e.events]
        if not wanted:
            return 0
        body = json.dumps(payload, sort_keys=True)
        queued = 0
        async with self.store.transaction() as tx:
            for endpoint in wanted:
                done = await tx.execute(_QUEUE, (uuid.uuid4().hex, endpoint.id, event, event_key, subject, body,
                                                 now, now, now + window))
                queued += max(done.rowcount, 0)
        return queued

    async def due(self, now: float, limit: int) -> list[str]:
        """Ids of deliveries that may be sent now (pending, their time come, nobody sending them)."""
        rows = await self.store.fetchall(
            "SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ?"
            " AND (lease_until IS NULL OR lease_until < ?) ORDER BY next_attempt_at, id LIMIT ?", (now, now, limit))
        return [str(r[0]) for r in rows]

    async def next_due(self) -> float | None:
        """When the next pending delivery falls due (None: nothing is pending)."""
        row = await self.store.fetchone("SELECT min(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending'")
        return float(row[0]) if row and row[0] is not None else None

    async def claim(self, ids: Iterable[str], owner: str, now: float, lease: float) -> list[Claimed]:
        """Take the deliveries of `ids` that nobody else has taken meanwhile (one conditional update each,
        in id order so two claimers lock rows in the same order); what this owner now holds."""
        taken: list[str] = []
        async with self.store.transaction() as tx:
            for delivery_id in sorted(set(ids)):
                done = await tx.execute(_CLAIM, (owner, now + lease, now, delivery_id, now, now))
                if done.rowcount > 0:
                    taken.append(delivery_id)
        if not taken:
            return []
        marks = ", ".join("?" * len(taken))
        rows = await self.store.fetchall(
            f"SELECT {_DELIVERY_SELECT}, e.url, e.secret, e.format FROM webhook_deliveries d"
            f" JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.lease_owner = ? AND d.id IN ({marks})"
            " ORDER BY d.next_attempt_at, d.id", (owner, *taken))
        n = len(DELIVERY_COLUMNS)
        return [Claimed(_delivery(r[:n]), str(r[n]), str(r[n + 1]), r[n + 2]) for r in rows]

    async def finish(self, delivery_id: str, owner: str, *, now: float, status_code: int | None, error: str | None,
                     retry_at: float | None) -> bool:
        """Record an attempt of a delivery this owner holds: delivered (`error` None), to be retried at
        `retry_at`, or given up (`retry_at` None). False when the lease was no longer this owner's."""
        if error is None:
            sql = ("UPDATE webhook_deliveries SET status = 'delivered', delivered_at = ?, last_status = ?,"
                   " lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?")
            params: tuple[Any, ...] = (now, status_code, delivery_id, owner)
        else:
            sql = ("UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, last_status = ?, last_error = ?,"
                   " lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?")
            params = ("pending" if retry_at is not None else "failed", retry_at if retry_at is not None else now,
                      status_code, error[:1000], delivery_id, owner)
        async with self.store.transaction() as tx:
            done = await tx.execute(sql, params)
        return done.rowcount > 0

    async def redeliver(self, delivery_id: str, now: float, window: float) -> bool:
        """Send a delivery again as soon as a sender looks (and retry it for `window` seconds more): a
        delivered or failed one, or a pending one nobody is sending right now."""
        async with self.store.transaction() as tx:
            done = await tx.execute(
                "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, give_up_at = ?,"
                " lease_owner = NULL, lease_until = NULL WHERE id = ? AND (status <> 'pending'"
                " OR lease_until IS NULL OR lease_until < ?)", (now, now + window, delivery_id, now))
        return done.rowcount > 0

    async def prune(self, before: float) -> int:
        """Forget delivered and failed deliveries queued before `before`; how many."""
        async with self.store.transaction() as tx:
            done = await tx.execute("DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ?",
                                    (before,))
        return max(done.rowcount, 0)

    # --- the log -----------------------------------------------------------------------------

    async def delivery(self, delivery_id: str) -> DeliveryRow | None:
        row = await self.store.fetchone(f"SELECT {_DELIVERY_SELECT} FROM webhook_deliveries d WHERE d.id = ?",
                                        (delivery_id,))
        return _delivery(row) if row else None

    async def deliveries(self, offset: int = 0, limit: int = 50, endpoint_id: str | None = None,
                         subject: str | None = None) -> tuple[list[DeliveryRow], int]:
        """Newest first, with the total count for paging."""
        where = Where()
        if endpoint_id:
            where.add("d.endpoint_id = ?", endpoint_id)
        if subject:
            where.add("d.subject = ?", subject)
        rows, total = await page(self.store, _DELIVERY_SELECT, "webhook_deliveries d", where,
                                 "d.created_at DESC, d.id DESC", offset, limit)
        return [_delivery(r) for r in rows], total
