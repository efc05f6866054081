"""Admin `/admin`: the accounts (add one, change a role, disable, enable, give a new password) and the
audit trail of control actions across all debates, newest first, paged in SQL, each in words. Admins
only; every change goes through the gate and is audited."""

from __future__ import annotations

import math

from fastapi import Request
from fastapi.responses import Response
from nicegui import ui

from webapp.access.audit_text import describe
from webapp.access.gate import Gate
from webapp.access.passwords import MIN_PASSWORD_LENGTH, generate_password
from webapp.access.roles import ROLE_HELP, Action, Principal, Role, actor_label
from webapp.settings import get_settings
from webapp.store.accounts import AuditRow, UserRow
from webapp.ui.auth import admit
from webapp.ui.auth import gate as auth_gate
from webapp.ui.components.copy_field import copy_field
from webapp.ui.layout import columns, log_table, section, titled_frame
from webapp.wording import counted

PAGE_SIZE = 25
AUDIT_COLUMNS = columns(("at", "When (UTC)"), ("actor", "Who"), ("action", "What"), ("detail", "Detail"),
                        ("outcome", "Outcome"), ("debate", "Debate"))
# Widths that keep a row a few lines high on a phone (the table scrolls sideways inside its card instead).
for _column, _width in zip(AUDIT_COLUMNS, ("9rem", "8rem", "6rem", "18rem", "5rem", "7rem"), strict=True):
    _column["style"] = _column["headerStyle"] = f"min-width: {_width}"
# How a new account gets its first password.
GENERATE, TYPE, PROXY = "generate", "type", "proxy"
PASSWORD_CHOICES = {GENERATE: "Generate one (shown once, here)", TYPE: "Type one",
                    PROXY: "None: signs in through the proxy's identity header"}


async def audit_cells(gate: Gate, rows: list[AuditRow]) -> list[dict[str, object]]:
    """The table's rows: who in words ("this computer (no sign-in)"), the detail as a sentence naming
    the debate by its topic where it still exists."""
    topics: dict[str, str] = {}
    for debate_id in {r.debate_id for r in rows if r.debate_id}:
        found = await gate.engine.store.get_row(debate_id)
        if found is not None:
            topics[debate_id] = found.topic
    return [{"id": r.id, "at": r.at.strftime("%Y-%m-%d %H:%M:%S"), "actor": actor_label(r.actor),
             "action": r.action.replace("_", " "), "outcome": r.outcome, "debate": r.debate_id or "—",
             "detail": describe(r, topics.get(r.debate_id or ""))} for r in rows]


class AuditLog:
    """The paged audit table of one admin tab."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.page = 1
        self.container = ui.column().classes("w-full gap-2")

    async def load(self) -> None:
        await self.gate.authorize(Action.VIEW_AUDIT)
        rows, total = await self.gate.accounts.audit_page((self.page - 1) * PAGE_SIZE, PAGE_SIZE)
        cells = await audit_cells(self.gate, rows)
        self.container.clear()
        with self.container:
            ui.label(counted(total, "recorded action")).classes("text-sm text-grey-7") \
                .mark("audit-count")
            log_table(AUDIT_COLUMNS, cells, "audit")
            pages = max(1, math.ceil(total / PAGE_SIZE))
            if pages > 1:
                ui.pagination(1, pages, direction_links=True, value=self.page, on_change=lambda e: self.go(e.value)) \
                    .props("max-pages=7 boundary-numbers").mark("audit-pages")

    async def go(self, page: int) -> None:
        self.page = page
        await self.load()


class AddUser:
    """The form that adds an account: a name, a role, and a first password (generated and shown once,
    or typed). A refused name or password is said at its field; the form keeps what was typed."""

    def __init__(self, users: Users) -> None:
        self.users = users
        choices = dict(PASSWORD_CHOICES)
        if get_settings().auth_header is None:  # no proxy names people here: an account needs a password
            del choices[PROXY]
        ui.label("Add a user").classes("font-medium")
        with ui.row().classes("w-full items-start gap-3"):
            self.name = ui.input("Username", placeholder="e.g. ada").props("outlined dense") \
                .classes("w-56").mark("new-user-name")
            self.role = ui.select({r.value: r.value for r in Role}, value=Role.VIEWER.value, label="Role") \
                .props("outlined dense").classes("w-36").mark("new-user-role")
            self.how = ui.select(choices, value=GENERATE, label="First password").props("outlined dense") \
                .classes("w-72").mark("new-user-how")
            self.password = ui.input("Their password", password=True, password_toggle_button=True) \
                .props(f'outlined dense hint="at least {MIN_PASSWORD_LENGTH} characters" autocomplete="new-password"') \
                .classes("w-56").mark("new-user-password").bind_visibility_from(self.how, "value",
                                                                                 value=TYPE)
            ui.button("Add user", icon="person_add", on_click=self.add).props("unelevated no-caps") \
                .classes("mt-1").mark("new-user-add")
        # Said at the field (which a screen reader announces), and once more by the button: on a phone the
        # field may be out of sight.
        self.problem = ui.label().classes("text-sm text-negative").mark("new-user-problem")
        self.result = ui.column().classes("w-full gap-1")

    async def add(self) -> None:
        self.name.error = self.password.error = None
        self.problem.text = ""
        how = self.how.value
        password = generate_password() if how == GENERATE else None if how == PROXY else self.password.value or ""
        try:
            row = await self.users.gate.add_user(self.name.value or "", Role(self.role.value), password)
        except PermissionError as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        except ValueError as exc:  # the name (bad or taken) or the typed password: said at its field
            message = str(exc)
            if message.startswith("username"):
                self.name.error = message.removeprefix("username: ")
            else:
                self.password.error = message
            self.problem.text = f"Not added: {message}"
            return
        self.result.clear()
        with self.result, ui.card().classes("w-full rostrum-once").mark("new-user-done"):
            how_in = {GENERATE: "with the password below", TYPE: "with the password you typed",
                      PROXY: "only through the proxy's identity header"}[how]
            ui.label(f"Added {row.username} ({row.role}): they sign in {how_in}.").classes("font-medium")
            if how == GENERATE and password is not None:
                ui.label("Copy it now and give it to them: it is not shown again.").classes("text-sm")
                copy_field(password, "Generated password", "new-user-secret", what="Password")
        self.name.value = self.password.value = ""
        await self.users.load()


class Users:
    """The accounts card: add one, change a role, disable or enable an account, give a new password."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.form = AddUser(self)
        ui.separator()
        self.container = ui.column().classes("w-full gap-2")
        self.secrets: dict[str, ui.column] = {}  # under each row: a password just given, shown once

    async def load(self) -> None:
        users = await self.gate.accounts.users()
        self.container.clear()
        self.secrets.clear()
        with self.container:
            if not users:
                ui.label("No accounts yet.").classes("text-sm text-grey-7")
            for user in users:
                self._row(user)
            ui.label("The command line does the same: python -m webapp users add NAME --role ROLE.") \
                .classes("text-xs text-grey-7")

    def _row(self, user: UserRow) -> None:
        # Wraps on a phone instead of pushing the page wider than the screen.
        with ui.row().classes("w-full items-center gap-x-3 gap-y-1").mark(f"user-{user.username}"):
            ui.label(user.username).classes("font-medium w-40 truncate")
            ui.select([r.value for r in Role], value=user.role,
                      on_change=lambda e, u=user.username: self.set_role(u, e.value)) \
                .props(f'outlined dense aria-label="Role of {user.username}"').classes("w-32").mark("user-role")
            ui.badge("disabled" if user.disabled else "active",
                     color="grey-7" if user.disabled else "positive").mark("user-status")
            ui.label("password" if user.password_hash else "proxy header").classes("text-sm text-grey-7")
            last = user.last_login_at.strftime("%Y-%m-%d %H:%M") if user.last_login_at else "never"
            ui.label(f"last sign-in {last}").classes("text-sm text-grey-7 grow")
            label = "Enable" if user.disabled else "Disable"
            ui.button(label, on_click=lambda u=user.username, d=not user.disabled: self.set_disabled(u, d)) \
                .props("flat dense no-caps").mark(f"user-toggle user-toggle-{user.username}")
            if user.username != self.gate.principal.name:  # their own would end this very sign-in
                ui.button("New password", on_click=lambda u=user.username: self.new_password(u)) \
                    .props("flat dense no-caps").mark(f"user-passwd user-passwd-{user.username}")
        self.secrets[user.username] = ui.column().classes("w-full gap-1")

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

    async def new_password(self, username: str) -> None:
        """A generated password replaces theirs (their open sign-ins end), shown once under their row."""
        password = generate_password()
        try:
            await self.gate.set_password(username, password)
        except (PermissionError, ValueError, KeyError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        await self.load()
        with self.secrets[username]:
            ui.label(f"{username}'s new password. Copy it now and give it to them: it is not shown again.") \
                .classes("text-sm")
            copy_field(password, "New password", "user-new-secret", what="Password")


async def page(request: Request) -> Response | None:
    admitted = await admit(request, Action.VIEW_AUDIT, "see the admin page")
    if not isinstance(admitted, Principal):
        return admitted
    gate = auth_gate(admitted)
    with titled_frame("/admin", admitted, "Admin"):
        with section("Users"):
            with ui.column().classes("gap-0 text-sm text-grey-8"):
                for role, help_text in ROLE_HELP.items():
                    ui.label(f"{role.value}: {help_text}")
            users = Users(gate)
        with section("Webhooks"):
            ui.link("Endpoints and deliveries", "/admin/webhooks").mark("admin-webhooks")
        with section("Recent actions"):
            audit = AuditLog(gate)
    await users.load()
    await audit.load()
    return None
