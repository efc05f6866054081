"""Personal API tokens, kept beside the accounts in the same database (SQLite or PostgreSQL: the queries
are written in the SQL both accept, `?` placeholders).

A token arrives here as its SHA-256 digest (`webapp.access.passwords.token_digest`) with its last four
characters (`suffix`), which is all that is needed to tell a person's tokens apart in lists and in the
audit trail. The token itself is never stored.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from webapp.models import utcnow
from webapp.store.accounts import RoleName
from webapp.store.protocol import EventStore
from webapp.store.sql import model_row, runner


class TokenRow(BaseModel):
    """One API token: whose it is, the most it may do (`role`), and whether it still works."""

    id: str
    username: str
    name: str = ""
    role: RoleName
    suffix: str
    created_at: datetime
    expires_at: datetime | None = None
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None
    revoked_by: str | None = None

    def status(self, now: datetime | None = None) -> Literal["active", "expired", "revoked"]:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= (now or utcnow()):
            return "expired"
        return "active"

    def public(self) -> dict[str, Any]:
        """What a list shows (the row holds no secret: the digest is not part of it)."""
        return self.model_dump(mode="json") | {"status": self.status()}


TOKEN_COLUMNS = tuple(TokenRow.model_fields)
_SELECT = f"SELECT {', '.join(TOKEN_COLUMNS)} FROM api_tokens"


def _row(values: tuple[Any, ...]) -> TokenRow:
    return model_row(TokenRow, TOKEN_COLUMNS, values)


class ApiTokens:
    """The API tokens of one store."""

    def __init__(self, store: EventStore) -> None:
        self.store = runner(store)

    async def add(self, username: str, role: RoleName, token_hash: str, suffix: str, name: str = "",
                  expires_at: datetime | None = None) -> TokenRow:
        row = TokenRow(id=uuid.uuid4().hex[:10], username=username, name=name, role=role, suffix=suffix,
                       created_at=utcnow(), expires_at=expires_at)
        async with self.store.transaction() as db:
            await db.execute(
                "INSERT INTO api_tokens (id, username, name, role, token_hash, suffix, created_at, expires_at)"
                " VALUES (?,?,?,?,?,?,?,?)",
                (row.id, username, name, role, token_hash, suffix, row.created_at.isoformat(),
                 expires_at.isoformat() if expires_at is not None else None),
            )
        return row

    async def by_hash(self, token_hash: str) -> TokenRow | None:
        row = await self.store.fetchone(f"{_SELECT} WHERE token_hash = ?", (token_hash,))
        return _row(row) if row else None

    async def get(self, token_id: str) -> TokenRow | None:
        row = await self.store.fetchone(f"{_SELECT} WHERE id = ?", (token_id,))
        return _row(row) if row else None

    async def list(self, username: str | None = None) -> list[TokenRow]:
        """Newest first; one person's (names compared without case, like accounts) or everyone's."""
        if username is None:
            rows = await self.store.fetchall(f"{_SELECT} ORDER BY created_at DESC, id")
        else:
            rows = await self.store.fetchall(f"{_SELECT} WHERE lower(username) = lower(?) "
                                             "ORDER BY created_at DESC, id", (username,))
        return [_row(r) for r in rows]

    async def revoke(self, token_id: str, revoked_by: str) -> bool:
        """Revoke a token; False if there is no such token or it was already revoked."""
        async with self.store.transaction() as db:
            cur = await db.execute(
                "UPDATE api_tokens SET revoked_at = ?, revoked_by = ? WHERE id = ? AND revoked_at IS NULL",
                (utcnow().isoformat(), revoked_by, token_id),
            )
            return cur.rowcount > 0

    async def touch(self, token_id: str, at: datetime | None = None) -> None:
        """Note when a token was last used (callers do this at most once a minute per token)."""
        async with self.store.transaction() as db:
            await db.execute("UPDATE api_tokens SET last_used_at = ? WHERE id = ?",
                             ((at or utcnow()).isoformat(), token_id))
