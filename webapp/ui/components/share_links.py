"""The Share card of a debate page: create a read-only link (optionally expiring), list the links
with who made them and their status, revoke one. Shown to those who may share (operators, admins).

A token is shown once, when it is made: only its digest is stored, so it cannot be shown again. The tab
that made a link keeps its address in memory while it stays open, so each link made here has its Copy
button in the list; a link that is revoked or expired shows no address at all, only what it was.
"""

from __future__ import annotations

from datetime import datetime

from nicegui import background_tasks, ui

from webapp.access.gate import Gate
from webapp.access.roles import actor_label
from webapp.engine.public import DebateSession
from webapp.models import utcnow
from webapp.store.accounts import ShareLinkRow
from webapp.ui import runtime
from webapp.ui.components.copy_field import copy_field

EXPIRY_CHOICES = {0: "Never", 1: "1 hour", 24: "1 day", 24 * 7: "1 week", 24 * 30: "30 days"}
STATUS_COLOUR = {"active": "positive", "expired": "grey-7", "revoked": "negative"}
LONGEST_WAIT_S = 24 * 3600.0  # the list looks again at a link's expiry, at the latest after this


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
        self.urls: dict[str, str] = {}  # link id -> address, for the links made in this tab
        self.expiry_timer: ui.timer | None = None
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
            self.list = ui.column().classes("w-full gap-2").mark("share-links")
        background_tasks.create(self.refresh(), name="share-links")

    async def create(self) -> None:
        hours = self.expiry.value or None
        try:
            row, token = await self.gate.share(self.session, float(hours) if hours else None,
                                               comments=bool(self.comments.value))
        except (PermissionError, ValueError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        self.urls[row.id] = self.base_url + share_url(token)
        await self.refresh()
        ui.notify(f"Share link {row.id} created", type="positive")

    async def revoke(self, link: ShareLinkRow) -> None:
        try:
            await self.gate.revoke(self.session, link.id)
        except (PermissionError, ValueError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        # Tabs open on it here stop at once (other processes' within a second: `webapp.ui.cutoff`).
        runtime.current().cutoff.cut_links({link.id: "revoked"})
        # Said before the list is made again: that deletes the Revoke button this handler runs in, and a
        # notice after it had no page to go to (the confirmation was lost, with a traceback in the log).
        ui.notify(f"Share link {link.id} revoked", type="positive")
        await self.refresh()

    async def refresh(self) -> None:
        links = await self.gate.accounts.links(self.session.id)
        if self.list.is_deleted:
            return
        self.list.clear()
        with self.list:
            if not links:
                ui.label("No links yet.").classes("text-xs text-grey-7")
            for link in links:
                self._link(link)
        self._look_again_at([link.expires_at for link in links if link.status() == "active" and link.expires_at])

    def _link(self, link: ShareLinkRow) -> None:
        status = link.status()
        with ui.column().classes("w-full gap-1").mark(f"share-{link.id}"):
            with ui.row().classes("w-full items-center gap-x-2 gap-y-0 text-sm"):
                ui.badge(status, color=STATUS_COLOUR[status]).mark("share-status")
                if status == "revoked":
                    when = f" {link.revoked_at:%Y-%m-%d %H:%M} UTC" if link.revoked_at else ""
                    state = f"revoked{when}: it no longer opens the debate"
                elif status == "expired":
                    state = f"expired {link.expires_at:%Y-%m-%d %H:%M} UTC: it no longer opens the debate"
                else:
                    state = f"until {link.expires_at:%Y-%m-%d %H:%M} UTC" if link.expires_at else "no expiry"
                talk = "comments allowed" if link.comments else "no comments"
                ui.label(f"{link.id} · by {actor_label(link.created_by)} · {state} · {talk}") \
                    .classes("grow min-w-0 text-grey-8").mark("share-about")
                if status == "active":
                    ui.button("Revoke", on_click=lambda li=link: self.revoke(li)) \
                        .props("flat dense no-caps color=negative").mark("share-revoke")
            url = self.urls.get(link.id)
            if status != "active":
                self.urls.pop(link.id, None)  # nothing left to copy: the address no longer works
            elif url is not None:
                copy_field(url, "Share link", "share-url", what="Link")
                ui.label("Copy it now: once this page is closed, the address cannot be shown again "
                         "(only a digest of it is kept).").classes("text-xs text-grey-8")
            else:
                ui.label("Its address was shown only to the tab that made it; make a new link to share "
                         "again.").classes("text-xs text-grey-7")

    def _look_again_at(self, expiries: list[datetime]) -> None:
        """Refresh when the next active link expires, so it stops offering its address right then."""
        if self.expiry_timer is not None:
            self.expiry_timer.cancel()
            self.expiry_timer = None
        if not expiries:
            return
        wait = min(max((min(expiries) - utcnow()).total_seconds(), 0.0) + 0.5, LONGEST_WAIT_S)
        with self.expansion:  # not in the list: refreshing clears the list, which would cancel the refresh
            self.expiry_timer = ui.timer(wait, self.refresh, once=True)
