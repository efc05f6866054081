"""Who is asking, for every page: a signed-in user (a session token in the signed session cookie,
checked against `login_sessions` on every page and command), a user named by a
trusted proxy's identity header, a share link, or — with sign-in off — the one local person.

Pages call `admit(request, action)` first; it returns the principal, or the response to send instead
(a redirect to `/login`), or None after it rendered a "not allowed" page. Commands go through the
`Gate` that `gate(principal)` makes, which checks the role again on the server for every command.
"""

from __future__ import annotations

import logging
import unicodedata
import uuid
from datetime import timedelta
from urllib.parse import quote, unquote, urlsplit

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from nicegui import context, ui

from webapp.access.gate import Gate
from webapp.access.passwords import new_token, token_digest
from webapp.access.roles import LOCAL, Action, Principal, Role
from webapp.access.users import check_username
from webapp.models import utcnow
from webapp.settings import Settings, get_settings
from webapp.store.accounts import Accounts, UserRow
from webapp.store.sign_ins import SignIns
from webapp.ui import runtime

log = logging.getLogger("rostrum.access")

# The key of this app's session token in the browser's signed session cookie (Starlette's
# `request.session`, which NiceGUI also uses for its browser id `id`).
COOKIE_KEY = "rostrum"
FINISH_PATH = "/login/finish"


def safe_next(target: str | None) -> str:
    """Only a path on this server: never an open redirect to another site. Control characters are
    removed first (browsers drop tabs and line breaks from a URL, so `/\t/evil.example` would go to
    `//evil.example`), then the parsed target must have neither scheme nor host."""
    target = unquote(target or "/")
    target = "".join(ch for ch in target if unicodedata.category(ch) != "Cc")
    parts = urlsplit(target)
    if (parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//")
            or "\\" in target):
        return "/"
    return target


def browser_id(request: Request) -> str:
    """The digest of NiceGUI's browser id in this request's session cookie (what `app.storage.user` is
    keyed by): a sign-in ticket is bound to the browser that asked for it."""
    return token_digest(str(request.session.get("id", "")))


async def begin_sign_in(user: UserRow, request: Request, address: str, next_page: str) -> str:
    """After a checked password: a session waiting for this browser, and the address the browser goes
    to next to receive it (over HTTP, so its cookie can change: a websocket message cannot set one)."""
    engine = await runtime.current().engine()
    ticket = new_token()
    expires_at = utcnow() + timedelta(hours=get_settings().session_hours)
    await SignIns(engine.store).begin(user.username, token_digest(ticket), browser_id(request), address, expires_at)
    return f"{FINISH_PATH}?ticket={quote(ticket, safe='')}&next={quote(next_page, safe='')}"


async def finish_sign_in(request: Request) -> Response:
    """`/login/finish?ticket=…`: trade a fresh ticket made for this browser for a session. The browser
    gets a new NiceGUI browser id and a new session token — nothing of the cookie it had before signing
    in stays valid or carries over (no session fixation: a copy of the old cookie is not signed in), and
    its per-browser storage starts empty."""

    engine = await runtime.current().engine()
    ticket = request.query_params.get("ticket", "")[:200]
    target = safe_next(request.query_params.get("next"))
    token = new_token()
    row = await SignIns(engine.store).redeem(token_digest(ticket), browser_id(request), token_digest(token)) \
        if ticket else None
    if row is None:
        log.warning("sign-in ticket refused from %s (unknown, used, stale or another browser's)",
                    client_address(request) or "?")
        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
    rotate_browser(request)
    request.session[COOKIE_KEY] = token
    return RedirectResponse(target, status_code=303)


def rotate_browser(request: Request) -> None:
    """A new browser id (and no session token) in the cookie this response sets."""
    request.session.clear()
    request.session["id"] = str(uuid.uuid4())


async def sign_out(principal: Principal) -> None:
    """End this browser's session on the server: every tab of it, in every process, is cut off (the
    next page load finds the cookie's token dead and gives the browser a fresh id)."""
    if principal.session_id is None:
        return
    engine = await runtime.current().engine()
    if await SignIns(engine.store).end(principal.session_id, "signed out"):
        await Accounts(engine.store).audit(principal.actor, "sign_out")
    runtime.current().cutoff.cut_sessions({principal.session_id}, "You signed out.")


def client_address(request: Request) -> str:
    return request.client.host if request.client else ""


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
    from webapp.ui.layout import frame  # the layout imports this module (a cycle listed in ARCHITECTURE.md)

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
