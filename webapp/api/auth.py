"""Who an HTTP API request acts as: the person behind a personal API token (`Authorization: Bearer
rst_…`), or — with sign-in off, as on a laptop bound to loopback — the one local person, like the UI.

Every request then goes through the same `Gate` as the pages: the same roles, the same audit trail
(the actor reads `ada (token …f3a9)`), the same per-person daily limit. A token is looked up again on
every request, so a revoked token, an expired one, or one whose person was disabled stops at once, and
one whose person was demoted acts with the lesser role at once. Each token may make
`ROSTRUM_API_RATE_PER_MINUTE` requests a minute (429 with `Retry-After` beyond that).
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import HTTPException, Request

from webapp.access.gate import Gate
from webapp.access.passwords import token_digest
from webapp.access.roles import LOCAL, Action, PermissionDenied, Principal
from webapp.access.tokens import BadToken, TokenRateLimiter, authenticate
from webapp.engine.engine import Engine
from webapp.settings import get_settings
from webapp.ui import runtime

BEARER = "bearer"
_limiters: dict[int, TokenRateLimiter] = {}


def rate_limiter() -> TokenRateLimiter:
    """This process's limiter (one per configured rate, so tests that change the setting get a fresh one)."""
    per_minute = get_settings().api_rate_per_minute
    limiter = _limiters.get(per_minute)
    if limiter is None:
        _limiters.clear()
        limiter = _limiters[per_minute] = TokenRateLimiter(per_minute)
    return limiter


def unauthorized(message: str) -> HTTPException:
    return HTTPException(401, message, headers={"WWW-Authenticate": 'Bearer realm="rostrum"'})


def presented_token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != BEARER or not value.strip():
        raise unauthorized("use the header `Authorization: Bearer rst_…` with a personal API token")
    return value.strip()


@dataclass
class Caller:
    """One request's principal, its gate and the engine (the engine is open once this exists)."""

    principal: Principal
    gate: Gate
    engine: Engine

    async def require(self, action: Action, debate_id: str | None = None) -> Principal:
        """The principal if it may do `action` (refusals are audited, as the gate does for pages); 403
        otherwise."""
        try:
            return await self.gate.authorize(action, debate_id)
        except PermissionDenied as exc:
            raise HTTPException(403, str(exc)) from None


async def caller(request: Request) -> Caller:
    """The FastAPI dependency every API route takes."""
    engine = await runtime.current().engine()
    settings = get_settings()
    token = presented_token(request)
    if token is not None:
        try:
            principal = await authenticate(engine.store, token)
        except BadToken as exc:
            raise unauthorized(str(exc)) from None
        wait = rate_limiter().hit(token_digest(token))
        if wait:
            raise HTTPException(429, f"too many requests: at most {settings.api_rate_per_minute} a minute per "
                                f"token; try again in {wait} s", headers={"Retry-After": str(wait)})
    elif not settings.auth_enabled:
        principal = LOCAL
    else:
        raise unauthorized("sign-in is on: send a personal API token as `Authorization: Bearer rst_…`")
    return Caller(principal, Gate(engine, principal, daily_usd=settings.user_daily_usd), engine)
