"""Accounts, share links and the audit trail, kept in the same database as the event log (SQLite or
PostgreSQL: the queries are written in the SQL both accept, `?` placeholders).

Passwords arrive here already hashed (argon2, `webapp.access.passwords`) and share-link tokens as
their SHA-256 digest: neither a password nor a usable token is ever stored.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel

from webapp.models import utcnow
from webapp.store.errors import DuplicateKey
from webapp.store.protocol import EventStore
from webapp.store.sql import Where, model_row, page, runner

RoleName = Literal["admin", "operator", "viewer"]
# The audit's actor for failed sign-ins with a name no account has ("(" is never in a username).
UNKNOWN_ACTOR = "(unknown name)"
UNKNOWN_WINDOW = timedelta(hours=1)


class UserRow(BaseModel):
    """One account. `password_hash` is None for users known only through a proxy's identity header."""

    username: str
    password_hash: str | None = None
    role: RoleName
    created_at: datetime
    last_login_at: datetime | None = None
    disabled: bool = False

    def public(self) -> dict[str, Any]:
        """What may be listed or shown: never the hash."""
        return self.model_dump(mode="json", exclude={"password_hash"}) | {"has_password": bool(self.password_hash)}


class ShareLinkRow(BaseModel):
    """A read-only link to one debate (the token itself is not kept, only its digest)."""

    id: str
    debate_id: str
    created_by: str
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    comments: bool = False  # whether its holders may comment (they may always react)

    def status(self, now: datetime | None = None) -> Literal["active", "expired", "revoked"]:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= (now or utcnow()):
            return "expired"
        return "active"


class AuditRow(BaseModel):
    """One control action, allowed or refused, across all debates."""

    id: int
    at: datetime
    actor: str
    action: str
    debate_id: str | None = None
    outcome: Literal["ok", "refused", "failed"] = "ok"
    detail: str = ""


class UserExists(ValueError):
    """A username already taken (names are compared without case)."""


class UnknownUser(KeyError):
    """No account with that name."""

    def __str__(self) -> str:
        return f"no user named {self.args[0]!r}"


USER_COLUMNS = tuple(UserRow.model_fields)
LINK_COLUMNS = tuple(f for f in ShareLinkRow.model_fields)
AUDIT_COLUMNS = tuple(AuditRow.model_fields)


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


class Accounts:
    """Users, share links and audit rows of one store."""

    def __init__(self, store: EventStore) -> None:
        self.store = runner(store)

    # --- users -------------------------------------------------------------------------------

    async def add_user(self, username: str, role: RoleName, password_hash: str | None) -> UserRow:
        row = UserRow(username=username, role=role, password_hash=password_hash, created_at=utcnow())
        try:
            async with self.store.transaction() as db:
                await db.execute(
                    "INSERT INTO users (username, password_hash, role, created_at) VALUES (?,?,?,?)",
                    (row.username, row.password_hash, row.role, row.created_at.isoformat()),
                )
        except DuplicateKey:
            raise UserExists(f"a user named {username!r} already exists") from None
        return row

    async def user(self, username: str) -> UserRow | None:
        row = await self.store.fetchone(
            f"SELECT {', '.join(USER_COLUMNS)} FROM users WHERE username = ?", (username,)
        )
        return model_row(UserRow, USER_COLUMNS, row) if row else None

    async def users(self) -> list[UserRow]:
        rows = await self.store.fetchall(f"SELECT {', '.join(USER_COLUMNS)} FROM users ORDER BY username")
        return [model_row(UserRow, USER_COLUMNS, r) for r in rows]

    async def count_admins(self, enabled_only: bool = True) -> int:
        row = await self.store.fetchone(
            "SELECT count(*) FROM users WHERE role = 'admin'" + (" AND disabled = 0" if enabled_only else "")
        )
        return int(row[0]) if row else 0

    async def _update_user(self, username: str, sql: str, params: tuple[Any, ...],
                           end_sessions: str | None = None) -> None:
        """Change a user; with `end_sessions` (why), in the same transaction end every browser session
        of theirs (every process checks them: open tabs lose their controls, commands are refused)."""
        async with self.store.transaction() as db:
            cur = await db.execute(f"UPDATE users SET {sql} WHERE username = ?", (*params, username))
            if cur.rowcount == 0:
                raise UnknownUser(username)
            if end_sessions is not None:
                await db.execute(
                    "UPDATE login_sessions SET ended_at = ?, ended_why = ?, ticket_hash = NULL"
                    " WHERE username = ? AND ended_at IS NULL", (utcnow().isoformat(), end_sessions, username))

    async def set_role(self, username: str, role: RoleName) -> None:
        await self._update_user(username, "role = ?", (role,), end_sessions="role changed")

    async def set_disabled(self, username: str, disabled: bool) -> None:
        await self._update_user(username, "disabled = ?", (int(disabled),),
                                end_sessions="account disabled" if disabled else None)

    async def set_password_hash(self, username: str, password_hash: str) -> None:
        await self._update_user(username, "password_hash = ?", (password_hash,), end_sessions="password changed")

    async def touch_login(self, username: str) -> None:
        await self._update_user(username, "last_login_at = ?", (utcnow().isoformat(),))

    # --- share links -------------------------------------------------------------------------

    async def add_link(self, debate_id: str, token_hash: str, created_by: str,
                       expires_at: datetime | None, comments: bool = False) -> ShareLinkRow:
        row = ShareLinkRow(id=uuid.uuid4().hex[:10], debate_id=debate_id, created_by=created_by,
                           created_at=utcnow(), expires_at=expires_at, comments=comments)
        async with self.store.transaction() as db:
            await db.execute(
                "INSERT INTO share_links (id, debate_id, token_hash, created_by, created_at, expires_at, comments)"
                " VALUES (?,?,?,?,?,?,?)",
                (row.id, debate_id, token_hash, created_by, row.created_at.isoformat(), _when(expires_at),
                 int(comments)),
            )
        return row

    async def link_by_hash(self, token_hash: str) -> ShareLinkRow | None:
        row = await self.store.fetchone(
            f"SELECT {', '.join(LINK_COLUMNS)} FROM share_links WHERE token_hash = ?", (token_hash,)
        )
        return model_row(ShareLinkRow, LINK_COLUMNS, row) if row else None

    async def link(self, link_id: str) -> ShareLinkRow | None:
        row = await self.store.fetchone(
            f"SELECT {', '.join(LINK_COLUMNS)} FROM share_links WHERE id = ?", (link_id,)
        )
        return model_row(ShareLinkRow, LINK_COLUMNS, row) if row else None

    async def links_over(self, link_ids: list[str]) -> dict[str, str]:
        """Which of these links no longer work, each with why: "revoked", "expired", or "gone" (with its
        debate)."""
        over: dict[str, str] = {}
        ids = list(dict.fromkeys(link_ids))
        now = utcnow()
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows = await self.store.fetchall(
                f"SELECT {', '.join(LINK_COLUMNS)} FROM share_links WHERE id IN ({','.join('?' * len(chunk))})",
                tuple(chunk))
            found = {row.id: row for row in (model_row(ShareLinkRow, LINK_COLUMNS, r) for r in rows)}
            for link_id in chunk:
                row = found.get(link_id)
                status = row.status(now) if row is not None else "gone"
                if status != "active":
                    over[link_id] = status
        return over

    async def links(self, debate_id: str) -> list[ShareLinkRow]:
        rows = await self.store.fetchall(
            f"SELECT {', '.join(LINK_COLUMNS)} FROM share_links WHERE debate_id = ? ORDER BY created_at DESC",
            (debate_id,),
        )
        return [model_row(ShareLinkRow, LINK_COLUMNS, r) for r in rows]

    async def revoke_link(self, link_id: str, revoked_by: str) -> bool:
        """Revoke a link; False if it does not exist or was already revoked."""
        async with self.store.transaction() as db:
            cur = await db.execute(
                "UPDATE share_links SET revoked_at = ?, revoked_by = ? WHERE id = ? AND revoked_at IS NULL",
                (utcnow().isoformat(), revoked_by, link_id),
            )
            return cur.rowcount > 0

    # --- audit -------------------------------------------------------------------------------

    async def audit(self, actor: str, action: str, debate_id: str | None = None, outcome: str = "ok",
                    detail: str | dict[str, Any] = "") -> None:
        text = detail if isinstance(detail, str) else json.dumps(detail, sort_keys=True)
        async with self.store.transaction() as db:
            await db.execute(
                "INSERT INTO audit (at, actor, action, debate_id, outcome, detail) VALUES (?,?,?,?,?,?)",
                (utcnow().isoformat(), actor, action, debate_id, outcome, text[:2000]),
            )

    async def audit_unknown_sign_in(self, address: str, window: timedelta = UNKNOWN_WINDOW) -> None:
        """A failed sign-in with a name no account has: one row per address and `window`, counting the
        attempts, instead of a row per attempt. The name is not kept (people type passwords there)."""
        now = utcnow()
        address = address[:64]
        prefix = json.dumps({"address": address})[:-1]  # `{"address": "…"`: the detail's first key
        for _ in range(3):  # an update that lost a race with another reads the row again
            row = await self.store.fetchone(
                "SELECT id, detail FROM audit WHERE actor = ? AND action = 'sign_in' AND outcome = 'refused'"
                " AND at >= ? AND detail LIKE ? ORDER BY id DESC LIMIT 1",
                (UNKNOWN_ACTOR, (now - window).isoformat(), prefix.replace("%", "") + ", %"))
            if row is None:
                break
            try:
                detail = json.loads(row[1])
                attempts = int(detail["attempts"]) + 1
            except (ValueError, KeyError, TypeError):
                break
            detail.update(attempts=attempts, last=now.isoformat())
            async with self.store.transaction() as db:
                done = await db.execute("UPDATE audit SET at = ?, detail = ? WHERE id = ? AND detail = ?",
                                        (now.isoformat(), json.dumps(detail, sort_keys=True), row[0], row[1]))
            if done.rowcount == 1:
                return
        await self.audit(UNKNOWN_ACTOR, "sign_in", outcome="refused",
                         detail={"address": address, "attempts": 1, "since": now.isoformat()})

    async def audit_page(self, offset: int = 0, limit: int = 50, debate_id: str | None = None,
                         actor: str | None = None) -> tuple[list[AuditRow], int]:
        """Newest first, with the total count for paging."""
        where = Where()
        if debate_id:
            where.add("debate_id = ?", debate_id)
        if actor:
            where.add("actor = ?", actor)
        rows, total = await page(self.store, ", ".join(AUDIT_COLUMNS), "audit", where, "at DESC, id DESC",
                                 offset, limit)
        return [model_row(AuditRow, AUDIT_COLUMNS, r) for r in rows], total
