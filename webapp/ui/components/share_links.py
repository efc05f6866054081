"""The Share card of a debate page: create a read-only link (optionally expiring), list the links
with who made them and their status, revoke one. Shown to those who may share (operators, admins).

A token is shown once, when it is made: only its digest is stored, so it cannot be shown again.
"""

from __future__ import annotations

from nicegui import background_tasks, ui

from webapp.access.gate import Gate
from webapp.engine.runner import DebateSession
from webapp.store.accounts import ShareLinkRow
from webapp.ui import runtime

EXPIRY_CHOICES = {0: "Never", 1: "1 hour", 24: "1 day", 24 * 7: "1 week", 24 * 30: "30 days"}
STATUS_COLOUR = {"active": "positive", "expired": "grey-7", "revoked": "negative"}


def share_url(token: str) -> str:
    return f"/s/{token}"


class ShareLinks:
    """One page's share card: collapsed, its content (and the query for the links) made when opened,
    so that the many spectators of a debate who never open it cost nothing for it."""

    def __init__(self, session: DebateSession, gate: Gate, base_url: str, opened: bool = False) -> None:
        self.session = session
        self.gate = gate
        self.base_url = base_url.rstrip("/")
        self.built = False
        # The expansion is the card (one element less on every page that shows it).
        self.expansion = ui.expansion("Share read-only", icon="link", value=False,
                                      on_value_change=lambda e: self.open() if e.value else None) \
            .classes("w-full q-card py-1").mark("share-card share-section")
        if opened:
            self.expansion.value = True

    def open(self) -> None:
        if self.built:
            return
        self.built = True
        with self.expansion:
            ui.label("Anyone with a link can watch this debate live, export it and react to its turns, "
                     "without an account, and nothing else (comments only if you allow them).") \
                .classes("text-xs text-grey-8")
            with ui.row().classes("w-full items-center gap-2 no-wrap"):
                self.expiry = ui.select(EXPIRY_CHOICES, value=24 * 7, label="Expires").props("outlined dense") \
                    .classes("grow").mark("share-expiry")
                ui.button("Create link", icon="link", on_click=self.create).props("unelevated no-caps") \
                    .mark("share-create")
            # Holders may always react to turns; comments only where the link says so.
            self.comments = ui.switch("Holders may comment on turns", value=False).props("dense") \
                .classes("text-sm").mark("share-comments")
            self.fresh = ui.column().classes("w-full gap-1")
            self.list = ui.column().classes("w-full gap-1").mark("share-links")
        background_tasks.create(self.refresh(), name="share-links")

    async def create(self) -> None:
        hours = self.expiry.value or None
        try:
            row, token = await self.gate.share(self.session, float(hours) if hours else None,
                                               comments=bool(self.comments.value))
        except (PermissionError, ValueError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        self.fresh.clear()
        with self.fresh:
            ui.label("Copy this link now: it is shown only once.").classes("text-xs text-grey-8")
            ui.input(value=self.base_url + share_url(token), label="Share link") \
                .props("outlined dense readonly").classes("w-full").mark("share-url")
        await self.refresh()
        ui.notify(f"Share link {row.id} created", type="positive")

    async def revoke(self, link: ShareLinkRow) -> None:
        try:
            await self.gate.revoke(self.session, link.id)
        except (PermissionError, ValueError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        # Tabs open on it here stop at once (other processes' within a second: `webapp.ui.cutoff`).
        runtime.current().cutoff.cut_links(
            {link.id}, "This share link was revoked. Ask whoever shared it for a new one.")
        await self.refresh()
        ui.notify(f"Share link {link.id} revoked", type="positive")

    async def refresh(self) -> None:
        links = await self.gate.accounts.links(self.session.id)
        if self.list.is_deleted:
            return
        self.list.clear()
        with self.list:
            if not links:
                ui.label("No links yet.").classes("text-xs text-grey-7")
            for link in links:
                status = link.status()
                with ui.row().classes("w-full items-center gap-2 no-wrap text-sm").mark(f"share-{link.id}"):
                    ui.badge(status, color=STATUS_COLOUR[status]).mark("share-status")
                    expiry = f"until {link.expires_at:%Y-%m-%d %H:%M} UTC" if link.expires_at else "no expiry"
                    talk = "comments allowed" if link.comments else "no comments"
                    ui.label(f"{link.id} · by {link.created_by} · {expiry} · {talk}").classes("grow text-grey-8")
                    if status == "active":
                        ui.button("Revoke", on_click=lambda li=link: self.revoke(li)) \
                            .props("flat dense no-caps color=negative").mark("share-revoke")
