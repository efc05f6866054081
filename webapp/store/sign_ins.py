"""Sign-in state kept in the database (migration `013_login_throttle`), so every web process shares it:
browser sessions and the sign-in throttle's counters. SQL both stores accept, `?` placeholders.

Sessions: a checked password makes a row holding a one-time *ticket* (its digest), bound to the browser
that asked; that browser's next request trades the ticket for the session's *token* (again only its
digest is kept), which its cookie then carries. Ending a session (sign-out, a new password, a new role,
a disabled account) sets `ended_at`: every page and command checks it.

Throttle: one counter per key (`user:NAME`, `addr:IP`). `reserve` counts an attempt *before* the
password is checked, for all keys at once or for none, so attempts made at the same moment cannot
all slip past the limit.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel

from webapp.models import utcnow
from webapp.store.protocol import EventStore
from webapp.store.sql import SqlRunner, model_row, runner

TICKET_SECONDS = 120  # a ticket not traded for a session by then is void
ENDED_KEPT = timedelta(days=2)  # ended and expired sessions are deleted after this


class SessionRow(BaseModel):
    """One browser sign-in."""

    id: str
    username: str
    created_at: datetime
    expires_at: datetime
    ended_at: datetime | None = None
    ended_why: str | None = None

    def live(self, now: datetime | None = None) -> bool:
        return self.ended_at is None and (now or utcnow()) < self.expires_at


SESSION_COLUMNS = tuple(SessionRow.model_fields)


class _Locked(Exception):
    """A throttle key is waiting: the reservation is rolled back."""


class SignIns:
    """Sessions and throttle counters of one store."""

    def __init__(self, store: EventStore | SqlRunner) -> None:
        self.store = runner(store)

    # --- sessions ------------------------------------------------------------------------------

    async def begin(self, username: str, ticket_hash: str, browser: str, address: str,
                    expires_at: datetime) -> str:
        """A session waiting for its ticket to be traded; returns its id. Old rows are pruned here."""
        session_id = uuid.uuid4().hex
        now = utcnow()
        async with self.store.transaction() as db:
            await db.execute("DELETE FROM login_sessions WHERE expires_at < ? OR ended_at < ?",
                             ((now - ENDED_KEPT).isoformat(), (now - ENDED_KEPT).isoformat()))
            await db.execute(
                "INSERT INTO login_sessions (id, username, ticket_hash, browser, address, created_at, expires_at)"
                " VALUES (?,?,?,?,?,?,?)",
                (session_id, username, ticket_hash, browser, address[:64], now.isoformat(), expires_at.isoformat()),
            )
        return session_id

    async def redeem(self, ticket_hash: str, browser: str, token_hash: str) -> SessionRow | None:
        """Trade a fresh ticket, from the browser it was made for, for the session's token: once only."""
        fresh = (utcnow() - timedelta(seconds=TICKET_SECONDS)).isoformat()
        async with self.store.transaction() as db:
            done = await db.execute(
                "UPDATE login_sessions SET token_hash = ?, ticket_hash = NULL WHERE ticket_hash = ? AND browser = ?"
                " AND created_at >= ? AND ended_at IS NULL",
                (token_hash, ticket_hash, browser, fresh),
            )
            if done.rowcount != 1:
                return None
        return await self.by_token(token_hash)

    async def by_token(self, token_hash: str) -> SessionRow | None:
        row = await self.store.fetchone(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM login_sessions WHERE token_hash = ?", (token_hash,))
        return model_row(SessionRow, SESSION_COLUMNS, row) if row else None

    async def get(self, session_id: str) -> SessionRow | None:
        row = await self.store.fetchone(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM login_sessions WHERE id = ?", (session_id,))
        return model_row(SessionRow, SESSION_COLUMNS, row) if row else None

    async def end(self, session_id: str, why: str) -> bool:
        async with self.store.transaction() as db:
            done = await db.execute(
                "UPDATE login_sessions SET ended_at = ?, ended_why = ?, ticket_hash = NULL"
                " WHERE id = ? AND ended_at IS NULL", (utcnow().isoformat(), why, session_id))
            return done.rowcount > 0

    async def ended(self, session_ids: Sequence[str]) -> dict[str, str]:
        """Which of these sessions are over now (ended, expired or gone), each with why."""
        over: dict[str, str] = {}
        ids = list(dict.fromkeys(session_ids))
        now = utcnow()
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = await self.store.fetchall(
                f"SELECT id, ended_at, ended_why, expires_at FROM login_sessions WHERE id IN ({marks})", chunk)
            found = {r[0]: r for r in rows}
            for session_id in chunk:
                row = found.get(session_id)
                if row is None:
                    over[session_id] = "ended"
                elif row[1] is not None:
                    over[session_id] = row[2] or "ended"
                elif datetime.fromisoformat(row[3]) <= now:
                    over[session_id] = "expired"
        return over

    # --- throttle --------------------------------------------------------------------------------

    async def reserve(self, keys: Sequence[str], now: float, forget_before: float,
                      waits: Sequence[tuple[int, float]]) -> bool:
        """Count one attempt on every key, or on none if any key must wait: True when counted.

        `waits` = (attempts, seconds) pairs: a key with at least that many attempts counted must wait
        that long after its last one (the largest matching pair applies). A key whose last attempt was
        before `forget_before` starts afresh. Keys are taken in sorted order, so two reservations sharing
        a key lock rows in the same order (no deadlock on PostgreSQL)."""
        wait = "CASE " + " ".join("WHEN attempts >= ? THEN ?" for _ in waits) + " ELSE 0 END"
        wait_params = [p for attempts, seconds in sorted(waits, reverse=True) for p in (attempts, seconds)]
        try:
            async with self.store.transaction() as db:
                for key in sorted(set(keys)):
                    await db.execute("INSERT INTO login_throttle (key, attempts, last_at) VALUES (?, 0, ?)"
                                     " ON CONFLICT (key) DO NOTHING", (key, now))
                    done = await db.execute(
                        "UPDATE login_throttle SET attempts = CASE WHEN last_at < ? THEN 1 ELSE attempts + 1 END,"
                        f" last_at = ? WHERE key = ? AND (last_at < ? OR last_at + ({wait}) <= ?)",
                        (forget_before, now, key, forget_before, *wait_params, now))
                    if done.rowcount != 1:
                        raise _Locked(key)
        except _Locked:
            return False
        return True

    async def waiting(self, keys: Sequence[str], now: float, forget_before: float,
                      waits: Sequence[tuple[int, float]]) -> float:
        """Seconds until every key may try again (0: now)."""
        if not keys:
            return 0.0
        marks = ",".join("?" * len(keys))
        rows = await self.store.fetchall(
            f"SELECT attempts, last_at FROM login_throttle WHERE key IN ({marks}) AND last_at >= ?",
            (*keys, forget_before))
        longest = 0.0
        for attempts, last_at in rows:
            seconds = max((s for a, s in waits if attempts >= a), default=0.0)
            longest = max(longest, float(last_at) + seconds - now)
        return longest

    async def clear(self, key: str) -> None:
        async with self.store.transaction() as db:
            await db.execute("DELETE FROM login_throttle WHERE key = ?", (key,))

    async def refund(self, key: str) -> None:
        """Take back one counted attempt (a success from an address keeps that address's other attempts)."""
        async with self.store.transaction() as db:
            await db.execute("UPDATE login_throttle SET attempts = attempts - 1 WHERE key = ? AND attempts > 0",
                             (key,))

    async def prune(self, forget_before: float, keep: int) -> None:
        """Forget counters idle since `forget_before`, and all but the `keep` most recent ones."""
        async with self.store.transaction() as db:
            await db.execute("DELETE FROM login_throttle WHERE last_at < ?", (forget_before,))
            await db.execute("DELETE FROM login_throttle WHERE key NOT IN (SELECT key FROM login_throttle"
                             " ORDER BY last_at DESC LIMIT ?)", (keep,))

    async def throttle_keys(self) -> int:
        row = await self.store.fetchone("SELECT count(*) FROM login_throttle")
        return int(row[0]) if row else 0
