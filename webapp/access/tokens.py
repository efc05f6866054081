"""Personal API tokens: made for a person, shown once (`rst_…`), kept only as a digest, and turned
into a `Principal` for each HTTP API request.

A token never has more rights than its person: each request reads the account again and acts with the
lesser of the token's role and the account's role today, so demoting or disabling a person takes
effect on their tokens at once. Tokens may expire and may be revoked (by their person or an admin).

Each token may make `Settings.api_rate_per_minute` requests a minute (`TokenRateLimiter`, a sliding
window kept in memory per process: with several web processes behind a load balancer each counts its
own share).
"""

from __future__ import annotations

import math
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from webapp.access.passwords import token_digest
from webapp.access.roles import Action, PermissionDenied, Principal, Role
from webapp.models import utcnow
from webapp.store.accounts import Accounts, UnknownUser
from webapp.store.protocol import EventStore
from webapp.store.tokens import ApiTokens, TokenRow

PREFIX = "rst_"
MAX_DAYS = 3650
MAX_NAME = 100
RANK = {Role.VIEWER: 0, Role.OPERATOR: 1, Role.ADMIN: 2}
TOUCH_EVERY = timedelta(minutes=1)  # `last_used_at` is written at most this often per token


def new_api_token() -> str:
    """A token: the `rst_` prefix (so secret scanners and people recognise it) and 256 random bits."""
    return PREFIX + secrets.token_urlsafe(32)


def lesser(a: Role, b: Role) -> Role:
    return a if RANK[a] <= RANK[b] else b


class BadToken(PermissionError):
    """No such token, or it was revoked, has expired, or its person is disabled or gone."""


@dataclass(frozen=True)
class IssuedToken:
    row: TokenRow
    token: str  # shown once


async def issue(store: EventStore, username: str, role: Role | None = None, days: float | None = None,
                name: str = "", actor: str | None = None) -> IssuedToken:
    """Make a token for `username` (their role if `role` is None; never more than it). `actor`: who asked
    (audited); the person themself, an admin, or `cli`."""
    accounts = Accounts(store)
    user = await accounts.user(username)
    if user is None:
        raise UnknownUser(username)
    if user.disabled:
        raise ValueError(f"user: {user.username} is disabled")
    own = Role(user.role)
    role = role or own
    if RANK[role] > RANK[own]:
        raise ValueError(f"role: a token cannot have more rights than its user ({user.username} is {own.value})")
    if days is not None and not 0 < days <= MAX_DAYS:
        raise ValueError(f"expires: give a number of days between 1 and {MAX_DAYS}, or none")
    name = name.strip()
    if len(name) > MAX_NAME:
        raise ValueError(f"name: at most {MAX_NAME} characters")
    token = new_api_token()
    expires_at = utcnow() + timedelta(days=days) if days else None
    row = await ApiTokens(store).add(user.username, role.value, token_digest(token), token[-4:], name, expires_at)
    await accounts.audit(actor or user.username, "token_create", detail={
        "user": user.username, "token": row.id, "suffix": row.suffix, "role": role.value,
        "expires_at": expires_at.isoformat() if expires_at else None})
    return IssuedToken(row, token)


async def revoke(store: EventStore, token_id: str, by: Principal) -> TokenRow:
    """Revoke a token: its own person may, and admins may revoke anyone's."""
    tokens = ApiTokens(store)
    row = await tokens.get(token_id)
    if row is None or (row.username.lower() != by.name.lower() and not by.can(Action.MANAGE_USERS)):
        if row is not None:
            await Accounts(store).audit(by.actor, "token_revoke", outcome="refused", detail={"token": token_id})
            raise PermissionDenied(by, Action.MANAGE_USERS)
        raise KeyError(f"no API token {token_id!r}")
    if await tokens.revoke(row.id, by.actor):
        await Accounts(store).audit(by.actor, "token_revoke", detail={"user": row.username, "token": row.id,
                                                                       "suffix": row.suffix})
    revoked = await tokens.get(row.id)
    assert revoked is not None
    return revoked


async def authenticate(store: EventStore, token: str) -> Principal:
    """The principal a presented token acts as; raises `BadToken` (the same message whatever is wrong,
    so a caller learns nothing about other people's tokens)."""
    if not token.startswith(PREFIX) or len(token) > 200:
        raise BadToken("invalid API token")
    tokens = ApiTokens(store)
    row = await tokens.by_hash(token_digest(token))
    if row is None or row.status() != "active":
        raise BadToken("invalid, expired or revoked API token")
    user = await Accounts(store).user(row.username)
    if user is None or user.disabled:
        raise BadToken("invalid, expired or revoked API token")
    now = utcnow()
    if row.last_used_at is None or now - row.last_used_at >= TOUCH_EVERY:
        await tokens.touch(row.id, now)
    return Principal(name=user.username, role=lesser(Role(row.role), Role(user.role)), kind="token",
                     token_suffix=row.suffix)


@dataclass
class TokenRateLimiter:
    """At most `per_minute` requests per token in any sliding minute."""

    per_minute: int = 60
    clock: Callable[[], float] = time.monotonic
    _hits: dict[str, deque[float]] = field(default_factory=dict)

    def hit(self, key: str) -> int:
        """Count one request; 0 if allowed, else the whole seconds to wait (the request is not counted)."""
        now = self.clock()
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - 60.0:
            hits.popleft()
        if len(hits) >= self.per_minute:
            return max(1, math.ceil(hits[0] + 60.0 - now))
        hits.append(now)
        if len(self._hits) > 10_000:  # forget idle tokens now and then
            for other in [k for k, v in self._hits.items() if not v or v[-1] <= now - 60.0]:
                del self._hits[other]
        return 0
