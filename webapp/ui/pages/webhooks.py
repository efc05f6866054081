"""Admin `/admin/webhooks`: register endpoints (the signing secret is shown once, right after), remove
them, and the delivery log (status code, attempts, last error) with a Redeliver button per delivery.
Admins only; every change goes through the gate (`WebhookAdmin`) and is audited."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

from fastapi import Request
from fastapi.responses import Response
from nicegui import ui

from webapp.access.roles import Action, Principal, actor_label
from webapp.settings import get_settings
from webapp.store.webhooks import DeliveryRow
from webapp.ui.auth import admit
from webapp.ui.auth import gate as auth_gate
from webapp.ui.components.copy_field import copy_field
from webapp.ui.layout import columns, log_table, section, titled_frame
from webapp.webhooks.events import EVENT_HELP, EVENTS
from webapp.webhooks.guard import WebhookRefused
from webapp.webhooks.manage import UnknownWebhook, WebhookAdmin

PAGE_SIZE = 25
REFRESH_S = 2.0  # seconds between reads of the delivery log while a delivery is pending
DELIVERY_COLUMNS = columns(("at", "Queued (UTC)"), ("event", "Event"), ("subject", "Debate / tournament"),
                           ("endpoint", "Endpoint"), ("status", "Status"), ("attempts", "Attempts", "right"),
                           ("code", "HTTP", "right"), ("error", "Last error"), ("again", "Action"))
INTRO = ("Signed HTTP notifications of debate and tournament events. Each delivery is queued and sent in the "
         "background with retries for up to 24 hours; see the README, \"Webhooks\", for the payload and how "
         "to verify the X-Rostrum-Signature header.")


def _when(seconds: float | None) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S") if seconds else "—"


def delivery_cells(row: DeliveryRow, urls: dict[str, str]) -> dict[str, object]:
    """One row of the delivery table (plain text: the page escapes it)."""
    status: str = row.status
    if status == "pending" and row.lease_until is not None and row.lease_until > time.time():
        status = f"sending (attempt {row.attempts})"  # claimed by a sender: its answer is not in yet
    elif status == "pending" and row.attempts:
        status = f"retrying at {_when(row.next_attempt_at)[11:]}"
    return {"id": row.id, "at": _when(row.created_at), "event": row.event, "subject": row.subject or "—",
            "endpoint": urls.get(row.endpoint_id, row.endpoint_id), "status": status, "attempts": row.attempts,
            "code": row.last_status if row.last_status is not None else "—", "error": (row.last_error or "")[:200],
            "again": row.id}


class WebhooksPanel:
    """The endpoints card, the form that adds one and the delivery log, for one admin tab."""

    def __init__(self, admin: WebhookAdmin) -> None:
        self.admin = admin
        self.page = 1
        with section("Add an endpoint"):
            self.url = ui.input("Endpoint URL", placeholder="https://example.com/hooks/rostrum") \
                .props("outlined dense").classes("w-full").mark("webhook-url")
            ui.label("Events").classes("text-sm font-medium")
            self.events = {name: ui.checkbox(f"{name} — {EVENT_HELP[name]}", value=name == "debate.completed")
                           .mark(f"webhook-event-{name}") for name in EVENTS}
            self.slack = ui.checkbox("Slack-compatible messages ({\"text\": …}) for a Slack incoming webhook") \
                .mark("webhook-slack")
            ui.button("Add endpoint", icon="add", on_click=self.add).props("unelevated no-caps").mark("webhook-add")
            self.secret_box = ui.column().classes("w-full gap-1")
        with section("Endpoints"):
            self.endpoints_box = ui.column().classes("w-full gap-2")
        with section("Deliveries"):
            self.deliveries_box = ui.column().classes("w-full gap-2")
        # The log follows the senders while anything is on its way (they may be other processes: read again).
        self.pending = False
        ui.timer(REFRESH_S, self._follow)

    async def load(self) -> None:
        await self.load_endpoints()
        await self.load_deliveries()

    async def add(self) -> None:
        chosen = [name for name, box in self.events.items() if box.value]
        try:
            done = await self.admin.add(self.url.value or "", chosen, "slack" if self.slack.value else "json")
        except (WebhookRefused, ValueError, PermissionError) as exc:
            ui.notify(f"Not added: {exc}", type="negative", multi_line=True)
            return
        self.url.value = ""
        self.secret_box.clear()
        with self.secret_box:
            ui.label(f"Added {done.endpoint.url}. Its signing secret, shown only now: copy it to the receiver.") \
                .classes("text-sm")
            copy_field(done.secret, "Signing secret", "webhook-secret", what="Secret")
        await self.load_endpoints()

    async def load_endpoints(self) -> None:
        endpoints = await self.admin.endpoints()
        self.endpoints_box.clear()
        with self.endpoints_box:
            if not endpoints:
                ui.label("No endpoints yet.").classes("text-sm text-grey-7").mark("webhook-none")
            for endpoint in endpoints:
                with ui.row().classes("w-full items-center gap-3 no-wrap").mark(f"webhook-{endpoint.id}"):
                    with ui.column().classes("gap-0 grow min-w-0"):
                        ui.label(endpoint.url).classes("font-medium break-all")
                        info = endpoint.public()
                        ui.label(f"{', '.join(endpoint.events)} · {endpoint.format} · secret {info['secret_hint']} · "
                                 f"by {actor_label(endpoint.created_by)}").classes("text-sm text-grey-7")
                    ui.button("Remove", on_click=lambda e=endpoint.id: self.remove(e)) \
                        .props("flat dense no-caps color=negative").mark("webhook-remove")

    async def remove(self, endpoint_id: str) -> None:
        try:
            row = await self.admin.remove(endpoint_id)
        except (UnknownWebhook, PermissionError) as exc:
            ui.notify(f"Not removed: {exc}", type="negative")
        else:
            ui.notify(f"Removed {row.url}", type="positive")
        await self.load()

    async def load_deliveries(self) -> None:
        rows, total = await self.admin.deliveries((self.page - 1) * PAGE_SIZE, PAGE_SIZE)
        self.pending = any(row.status == "pending" for row in rows)
        urls = {e.id: e.url for e in await self.admin.endpoints()}
        self.deliveries_box.clear()
        with self.deliveries_box:
            ui.label(f"{total} deliver{'y' if total == 1 else 'ies'}").classes("text-sm text-grey-7") \
                .mark("webhook-delivery-count")
            table = log_table(DELIVERY_COLUMNS, [delivery_cells(r, urls) for r in rows], "webhook-deliveries")
            table.add_slot("body-cell-again", '<q-td :props="props"><q-btn flat dense no-caps label="Redeliver" '
                                              '@click="$parent.$emit(\'redeliver\', props.row.id)" /></q-td>')
            table.on("redeliver", lambda e: self.redeliver(str(e.args)))
            pages = max(1, math.ceil(total / PAGE_SIZE))
            if pages > 1:
                ui.pagination(1, pages, direction_links=True, value=self.page, on_change=lambda e: self.go(e.value)) \
                    .props("max-pages=7 boundary-numbers").mark("webhook-pages")

    async def _follow(self) -> None:
        if self.pending:
            await self.load_deliveries()

    async def redeliver(self, delivery_id: str) -> None:
        try:
            row = await self.admin.redeliver(delivery_id)
        except (UnknownWebhook, ValueError, PermissionError) as exc:
            ui.notify(f"Not redelivered: {exc}", type="negative")
        else:
            ui.notify(f"{row.event} will be sent again", type="positive")
        await self.load_deliveries()

    async def go(self, page: int) -> None:
        self.page = page
        await self.load_deliveries()


async def page(request: Request) -> Response | None:
    admitted = await admit(request, Action.MANAGE_WEBHOOKS, "manage webhooks")
    if not isinstance(admitted, Principal):
        return admitted
    admin = WebhookAdmin(auth_gate(admitted), get_settings().webhook_allow_private)
    with titled_frame("/admin", admitted, "Webhooks", INTRO):
        panel = WebhooksPanel(admin)
    await panel.load()
    return None
