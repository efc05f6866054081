"""Admin `/admin`: the accounts (role, disable, enable) and the audit trail of control actions across
all debates, newest first, paged in SQL. Admins only; every change goes through the gate."""

from __future__ import annotations

import math

from fastapi import Request
from fastapi.responses import Response
from nicegui import ui

from webapp.access.gate import Gate
from webapp.access.roles import ROLE_HELP, Action, Principal, Role
from webapp.ui.auth import admit
from webapp.ui.auth import gate as auth_gate
from webapp.ui.layout import frame, heading
from webapp.wording import counted

PAGE_SIZE = 25
AUDIT_COLUMNS = [
    {"name": "at", "label": "When (UTC)", "field": "at", "align": "left"},
    {"name": "actor", "label": "Who", "field": "actor", "align": "left"},
    {"name": "action", "label": "What", "field": "action", "align": "left"},
    {"name": "outcome", "label": "Outcome", "field": "outcome", "align": "left"},
    {"name": "debate", "label": "Debate", "field": "debate", "align": "left"},
    {"name": "detail", "label": "Detail", "field": "detail", "align": "left"},
]
USER_COLUMNS = [
    {"name": "username", "label": "User", "field": "username", "align": "left"},
    {"name": "role", "label": "Role", "field": "role", "align": "left"},
    {"name": "status", "label": "Status", "field": "status", "align": "left"},
    {"name": "sign_in", "label": "Signs in with", "field": "sign_in", "align": "left"},
    {"name": "last_login", "label": "Last sign-in (UTC)", "field": "last_login", "align": "left"},
]


class AuditLog:
    """The paged audit table of one admin tab."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.page = 1
        self.container = ui.column().classes("w-full gap-2")

    async def load(self) -> None:
        await self.gate.authorize(Action.VIEW_AUDIT)
        rows, total = await self.gate.accounts.audit_page((self.page - 1) * PAGE_SIZE, PAGE_SIZE)
        self.container.clear()
        with self.container:
            ui.label(counted(total, "recorded action")).classes("text-sm text-grey-7") \
                .mark("audit-count")
            ui.table(columns=AUDIT_COLUMNS, row_key="id", rows=[{
                "id": r.id, "at": r.at.strftime("%Y-%m-%d %H:%M:%S"), "actor": r.actor, "action": r.action,
                "outcome": r.outcome, "debate": r.debate_id or "—", "detail": r.detail[:160],
            } for r in rows]).props("flat dense wrap-cells").classes("w-full").mark("audit")
            pages = max(1, math.ceil(total / PAGE_SIZE))
            if pages > 1:
                ui.pagination(1, pages, direction_links=True, value=self.page, on_change=lambda e: self.go(e.value)) \
                    .props("max-pages=7 boundary-numbers").mark("audit-pages")

    async def go(self, page: int) -> None:
        self.page = page
        await self.load()


class Users:
    """The accounts card: change a role, disable or enable an account (creating one is a CLI command,
    so a password never passes through a browser form that someone else might be watching)."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.container = ui.column().classes("w-full gap-2")

    async def load(self) -> None:
        users = await self.gate.accounts.users()
        self.container.clear()
        with self.container:
            if not users:
                ui.label("No accounts yet.").classes("text-sm text-grey-7")
            for user in users:
                with ui.row().classes("w-full items-center gap-3 no-wrap").mark(f"user-{user.username}"):
                    ui.label(user.username).classes("font-medium w-48 truncate")
                    ui.select([r.value for r in Role], value=user.role,
                              on_change=lambda e, u=user.username: self.set_role(u, e.value)) \
                        .props("outlined dense").classes("w-36").mark("user-role")
                    ui.badge("disabled" if user.disabled else "active",
                             color="grey-7" if user.disabled else "positive")
                    ui.label("password" if user.password_hash else "proxy header").classes("text-sm text-grey-7")
                    last = user.last_login_at.strftime("%Y-%m-%d %H:%M") if user.last_login_at else "never"
                    ui.label(f"last sign-in {last}").classes("text-sm text-grey-7 grow")
                    label = "Enable" if user.disabled else "Disable"
                    ui.button(label, on_click=lambda u=user.username, d=not user.disabled: self.set_disabled(u, d)) \
                        .props("flat dense no-caps").mark("user-toggle")
            ui.label("Add users and set passwords with `python -m webapp users add NAME --role ROLE`.") \
                .classes("text-xs text-grey-7")

    async def set_role(self, username: str, role: str) -> None:
        try:
            await self.gate.set_role(username, Role(role))
        except (PermissionError, ValueError, KeyError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
        else:
            ui.notify(f"{username} is now {role}", type="positive")
        await self.load()

    async def set_disabled(self, username: str, disabled: bool) -> None:
        try:
            await self.gate.set_disabled(username, disabled)
        except (PermissionError, ValueError, KeyError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
        else:
            ui.notify(f"{username} {'disabled' if disabled else 'enabled'}", type="positive")
        await self.load()


async def page(request: Request) -> Response | None:
    admitted = await admit(request, Action.VIEW_AUDIT, "see the admin page")
    if not isinstance(admitted, Principal):
        return admitted
    gate = auth_gate(admitted)
    with frame("/admin", admitted):
        heading("Admin")
        with ui.card().classes("w-full"):
            heading("Users", 2)
            with ui.column().classes("gap-0 text-sm text-grey-8"):
                for role, help_text in ROLE_HELP.items():
                    ui.label(f"{role.value}: {help_text}")
            users = Users(gate)
        with ui.card().classes("w-full"):
            heading("Webhooks", 2)
            ui.link("Endpoints and deliveries", "/admin/webhooks").mark("admin-webhooks")
        with ui.card().classes("w-full"):
            heading("Recent actions", 2)
            audit = AuditLog(gate)
    await users.load()
    await audit.load()
    return None
