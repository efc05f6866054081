"""Open tabs lose what their sign-in or share link allowed the moment it ends.

Every page of a browser sign-in or a share link registers here (`guard`, from the page frame). When
the session ends — signed out, a new password or role, a disabled account, expiry — or the link is
revoked or expires, each of its tabs is cut off: its streams stop (a page adds what to stop with
`on_cut`), its content, controls and exports included, is replaced by a short notice, and its elements
are gone from the server, so an event a tampered browser still sends finds nothing to run. (The gate
refuses any command of such a principal anyway: it checks the session or link on every command.)

What this process does itself (a sign-out, a revocation on its pages) is cut at once; what another
process did (a web instance behind the same load balancer, `python -m webapp users passwd`, expiry)
is found by one query per `CHECK_INTERVAL` over the sessions and links this process has tabs for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from nicegui import Client, background_tasks, context, ui

from webapp.access.roles import Principal
from webapp.store.accounts import Accounts
from webapp.store.protocol import EventStore
from webapp.store.sign_ins import SignIns

log = logging.getLogger("rostrum.access")

CHECK_INTERVAL = 1.0  # seconds between two looks at the sessions and links of the open tabs
WHY = {
    "signed out": "You signed out.",
    "password changed": "Your password was changed.",
    "role changed": "Your role was changed.",
    "account disabled": "Your account was disabled.",
    "expired": "Your sign-in has expired.",
}
LINK_WHY = {  # why a share link stopped working (`Accounts.links_over`) -> what its open tabs say
    "revoked": "This share link was revoked. Ask whoever shared it for a new one.",
    "expired": "This share link has expired. Ask whoever shared it for a new one.",
}


@dataclass(eq=False)
class _Tab:
    client: Client
    principal: Principal
    hooks: list[Callable[[], None]] = field(default_factory=list)


class Cutoff:
    """The guarded tabs of this process."""

    def __init__(self) -> None:
        self.tabs: dict[str, _Tab] = {}  # client id -> tab
        self.store: EventStore | None = None
        self._task: asyncio.Task[None] | None = None

    def guard(self, principal: Principal, store: EventStore) -> None:
        """Watch the current page's sign-in or share link (nothing to watch for other principals)."""
        if principal.session_id is None and principal.link_id is None:
            return
        client = context.client
        self.store = store
        self.tabs[client.id] = _Tab(client, principal)
        client.on_delete(lambda: self.tabs.pop(client.id, None))
        if self._task is None or self._task.done():
            self._task = background_tasks.create(self._watch(), name="cutoff-watch")

    def on_cut(self, hook: Callable[[], None]) -> None:
        """Run `hook` when the current page is cut off (before its content goes)."""
        tab = self.tabs.get(context.client.id)
        if tab is not None:
            tab.hooks.append(hook)

    def cut_sessions(self, reasons: dict[str, str] | Iterable[str], message: str | None = None) -> None:
        reasons = reasons if isinstance(reasons, dict) else dict.fromkeys(reasons, "ended")
        for tab in [t for t in self.tabs.values() if t.principal.session_id in reasons]:
            why = reasons[tab.principal.session_id or ""]
            self._cut(tab, message or WHY.get(why, "Your sign-in has ended."))

    def cut_links(self, reasons: dict[str, str]) -> None:
        """Cut off the tabs of these share links (link id -> why, as `Accounts.links_over` says it). Whichever
        notices first — the page that revoked it, or the periodic look — the tab says the same."""
        for tab in [t for t in self.tabs.values() if t.principal.link_id in reasons]:
            why = reasons[tab.principal.link_id or ""]
            self._cut(tab, LINK_WHY.get(why, "This share link no longer works."))

    def _cut(self, tab: _Tab, message: str) -> None:
        client = tab.client
        self.tabs.pop(client.id, None)
        if client.is_deleted:
            return
        for hook in tab.hooks:
            try:
                hook()
            except Exception:  # one failing hook must not leave the tab's content in place
                log.exception("cutting off tab %s", client.id)
        log.info("cut off a tab of %s: %s", tab.principal.actor, message)
        shared = tab.principal.kind == "share-link"
        with client:
            client.content.clear()
            with client.content, ui.card().classes("w-full items-center py-10 gap-3").mark("cut-off"):
                ui.icon("link_off" if shared else "logout").classes("text-5xl text-grey-8")
                ui.label("No longer available" if shared else "Signed out").classes("text-xl font-semibold") \
                    .props('role="alert"')
                ui.label(message + ("" if shared else " Sign in again to go on.")).mark("cut-off-message")
                if not shared:
                    ui.link("Sign in", "/login").mark("sign-in-again")

    async def _watch(self) -> None:
        """Look for ended sessions and links of open tabs, until no tab is guarded any more."""
        while self.tabs:
            await asyncio.sleep(CHECK_INTERVAL)
            store = self.store
            if store is None:
                continue
            try:
                sessions = [t.principal.session_id for t in self.tabs.values() if t.principal.session_id]
                links = [t.principal.link_id for t in self.tabs.values() if t.principal.link_id]
                if sessions:
                    self.cut_sessions(await SignIns(store).ended(sessions))
                if links:
                    over = await Accounts(store).links_over(links)
                    if over:
                        self.cut_links(over)
            except asyncio.CancelledError:
                raise
            except Exception:  # the store is busy or closing: look again next time
                log.debug("checking open tabs' sign-ins failed", exc_info=True)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.tabs.clear()
