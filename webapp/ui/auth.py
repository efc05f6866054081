"""Who is asking, for every page: a signed-in user (a session token in the signed session cookie,
checked against `login_sessions` on every page and command), a user named by a
trusted proxy's identity header, a share link, or — with sign-in off — the one local person.

Pages call `admit(request, action)` first; it returns the principal, or the response to send instead
(a redirect to `/login`), or None after it rendered a "not allowed" page. Commands go through the
`Gate` that `gate(principal)` makes, which checks the role again on the server for every command.
Signing in and out (the ticket, the session token, Sign out) is `ui.sign_in`'s.
"""

from __future__ import annotations

import logging
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from nicegui import context, ui

from webapp.access.gate import Gate
from webapp.access.passwords import token_digest
from webapp.access.roles import LOCAL, Action, Principal, Role
from webapp.access.users import check_username
from webapp.models import utcnow
from webapp.settings import Settings, get_settings
from webapp.store.accounts import Accounts
from webapp.store.sign_ins import SignIns
from webapp.ui import runtime
from webapp.ui.layout import frame
from webapp.ui.sign_in import COOKIE_KEY, client_address, rotate_browser

log = logging.getLogger("rostrum.access")


async def _from_header(request: Request, settings: Settings, accounts: Accounts) -> Principal | None:
    """A user named by the reverse proxy's identity header, if the request came through a trusted proxy."""
    header = settings.auth_header
    if header is None:
        return None
    name = (request.headers.get(header) or "").strip()
    if not name:
        return None
    address = client_address(request)
    if not settings.trusts(address):
        log.warning("ignored %s header from untrusted address %s", header, address or "?")
        return None
    name = name[:200]
    user = await accounts.user(name)
    if user is None:
        try:
            name = check_username(name)
        except ValueError as exc:
            log.warning("ignored %s header %r: %s", header, name, exc)
            return None
        user = await accounts.add_user(name, settings.auth_header_role, password_hash=None)
        await accounts.audit(name, "user_created", detail={"via": header, "role": user.role})
        log.info("new user %s from the %s header, role %s", name, header, user.role)
    if user.disabled:
        return None
    return Principal(name=user.username, role=Role(user.role), kind="proxy")


async def _from_session(request: Request, accounts: Accounts) -> Principal | None:
    token = request.session.get(COOKIE_KEY)
    if not isinstance(token, str) or not token:
        return None
    row = await SignIns(accounts.store).by_token(token_digest(token))
    user = await accounts.user(row.username) if row is not None and row.live(utcnow()) else None
    if row is None or user is None or user.disabled:
        _forget(request)
        return None
    return Principal(name=user.username, role=Role(user.role), kind="user", expires_at=row.expires_at,
                     session_id=row.id)


def _forget(request: Request) -> None:
    """A dead session token: a page answer (not yet sent) gives the browser a fresh cookie."""
    if not getattr(request.state, "responded", True) and "session" in request.scope:
        rotate_browser(request)


async def principal_for(request: Request) -> Principal | None:
    """Who this request acts as, or None when nobody is signed in (and sign-in is required)."""
    settings = get_settings()
    if not settings.auth_enabled:
        return LOCAL
    engine = await runtime.current().engine()
    accounts = Accounts(engine.store)
    return await _from_header(request, settings, accounts) or await _from_session(request, accounts)


def login_redirect(request: Request) -> RedirectResponse:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)


def forbidden(principal: Principal, what: str) -> None:
    """A clear "not allowed" page (HTTP 403) inside the normal frame."""
    context.client.status_code = 403
    with frame("", principal), ui.card().classes("w-full items-center py-10 gap-2").mark("forbidden"):
        ui.icon("lock").classes("text-5xl text-grey-7")
        ui.label("Not allowed").classes("text-xl font-semibold")
        ui.label(f"Your role ({principal.role.value}) cannot {what}. Ask an admin if you need it.")
        ui.link("All debates", "/")


async def admit(request: Request, action: Action, what: str,
                debate_id: str | None = None) -> Principal | Response | None:
    """The principal for a page needing `action`; or the redirect to sign in; or None once a 403
    page is rendered. The engine is open once this returns (so `gate` can be used)."""
    await runtime.current().engine()
    principal = await principal_for(request)
    if principal is None:
        return login_redirect(request)
    if not principal.can(action, debate_id):
        log.warning("refused page %s to %s (%s)", request.url.path, principal.actor, principal.role.value)
        forbidden(principal, what)
        return None
    return principal


def gate(principal: Principal) -> Gate:
    """The command gate for this principal (the engine must be open: pages await it first)."""
    engine = runtime.current().engine_
    if engine is None:
        raise RuntimeError("the engine is not open")
    return Gate(engine, principal, daily_usd=get_settings().user_daily_usd)
