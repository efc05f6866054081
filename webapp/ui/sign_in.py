"""A browser's sign-in session, from the checked password to Sign out.

After a right password (`pages/login.py`) `begin_sign_in` leaves a ticket bound to this browser, and the
browser fetches `FINISH_PATH` over HTTP (so its cookie can change: a websocket message cannot set one),
where `finish_sign_in` trades the ticket for a session token and a fresh browser id. `sign_out` ends the
session on the server and cuts off every tab of it. Who a request acts as is `ui.auth`'s business; this
module sits below it and below the page frame (`ui.layout`, whose account menu signs out).
"""

from __future__ import annotations

import logging
import unicodedata
import uuid
from datetime import timedelta
from urllib.parse import quote, unquote, urlsplit

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from webapp.access.passwords import new_token, token_digest
from webapp.access.roles import Principal
from webapp.models import utcnow
from webapp.settings import get_settings
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
