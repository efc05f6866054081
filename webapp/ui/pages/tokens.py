"""API tokens `/tokens`: a person makes, lists and revokes their own personal tokens for the HTTP API
(`webapp/api`); admins also see and revoke everyone's. A new token is shown once, on this page, and
only its digest is stored. A token never has more rights than its person (`webapp.access.tokens`)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response
from nicegui import ui

from webapp.access import tokens
from webapp.access.roles import Action, Principal, Role
from webapp.store.tokens import ApiTokens, TokenRow
from webapp.ui import runtime
from webapp.ui.auth import admit
from webapp.ui.components.copy_field import copy_field
from webapp.ui.layout import section, titled_frame

INTRO = ("A personal token lets a script use the HTTP API as you: send it as `Authorization: Bearer rst_…`. "
         "It can do at most what your role allows, stops working when revoked or expired, and is shown only "
         "once. The API's documentation: [/api/docs](/api/docs).")
EXPIRIES = {0: "Never", 7: "In 7 days", 30: "In 30 days", 90: "In 90 days", 365: "In a year"}


class TokensCard:
    """The create form, the token just made (once), and the list."""

    def __init__(self, principal: Principal) -> None:
        self.principal = principal
        self.admin = principal.can(Action.MANAGE_USERS)
        self.personal = principal.kind in ("user", "proxy")  # a person with an account can own tokens
        self.shown = ui.column().classes("w-full")
        self.container = ui.column().classes("w-full gap-2")

    async def store(self) -> ApiTokens:
        return ApiTokens((await runtime.current().engine()).store)

    async def load(self) -> None:
        rows = await (await self.store()).list(None if self.admin else self.principal.name)
        self.container.clear()
        with self.container:
            if not rows:
                ui.label("No API tokens yet.").classes("text-sm text-grey-7").mark("tokens-empty")
            for row in rows:
                self._row(row)

    def _row(self, row: TokenRow) -> None:
        status = row.status()
        with ui.row().classes("w-full items-center gap-3 no-wrap").mark(f"token-{row.id}"):
            ui.label(f"…{row.suffix}").classes("font-mono w-16")
            ui.label(row.name or "(no name)").classes("w-40 truncate")
            if self.admin:
                ui.label(row.username).classes("w-32 truncate").mark("token-user")
            ui.label(row.role).classes("w-20")
            ui.badge(status, color="positive" if status == "active" else "grey-7").mark("token-status")
            expires = row.expires_at.strftime("%Y-%m-%d") if row.expires_at else "never"
            used = row.last_used_at.strftime("%Y-%m-%d %H:%M") if row.last_used_at else "never"
            ui.label(f"expires {expires} · last used {used}").classes("text-sm text-grey-7 grow")
            if status == "active":
                ui.button("Revoke", on_click=lambda r=row: self.revoke(r)).props("flat dense no-caps color=negative") \
                    .mark("token-revoke")

    async def create(self, name: str, role: str, days: int) -> None:
        engine = await runtime.current().engine()
        try:
            issued = await tokens.issue(engine.store, self.principal.name, Role(role), days or None, name,
                                        actor=self.principal.actor)
        except (ValueError, KeyError, PermissionError) as exc:
            ui.notify(f"Not created: {exc}", type="negative")
            return
        self.shown.clear()
        with self.shown, ui.card().classes("w-full rostrum-once").mark("token-new"):
            ui.label("Your new token. Copy it now: it is not shown again.").classes("font-medium")
            copy_field(issued.token, "API token", "token-value", what="Token")
        await self.load()

    async def revoke(self, row: TokenRow) -> None:
        engine = await runtime.current().engine()
        try:
            await tokens.revoke(engine.store, row.id, self.principal)
        except (KeyError, PermissionError) as exc:
            ui.notify(f"Not revoked: {exc}", type="negative")
        else:
            ui.notify(f"Token …{row.suffix} revoked", type="positive")
        await self.load()


async def page(request: Request) -> Response | None:
    admitted = await admit(request, Action.LIST, "see API tokens")
    if not isinstance(admitted, Principal):
        return admitted
    with titled_frame("/tokens", admitted, "API tokens", INTRO, markdown=True):
        card = None
        with section("New token"):
            if admitted.kind in ("user", "proxy"):
                allowed = [r.value for r in Role if tokens.RANK[r] <= tokens.RANK[admitted.role]]
                with ui.row().classes("items-end gap-3 w-full"):
                    name = ui.input("Name", placeholder="what it is for, e.g. CI").props("outlined dense") \
                        .classes("w-64").mark("token-name")
                    role = ui.select(allowed, value=admitted.role.value, label="Role").props("outlined dense") \
                        .classes("w-36").mark("token-role")
                    expiry = ui.select(EXPIRIES, value=90, label="Expires").props("outlined dense") \
                        .classes("w-36").mark("token-expires")
                    create = ui.button("Create token").props("no-caps").mark("token-create")
            else:
                ui.label("Sign-in is off on this server: the API needs no token from this machine. Tokens "
                         "for people: python -m webapp tokens create --user NAME").classes("text-sm text-grey-7")
        with section("Everyone's tokens" if admitted.can(Action.MANAGE_USERS) else "Your tokens"):
            card = TokensCard(admitted)
        if admitted.kind in ("user", "proxy"):
            create.on_click(lambda: card.create(name.value or "", role.value, int(expiry.value or 0)))
    await card.load()
    return None
