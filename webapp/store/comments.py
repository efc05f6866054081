"""Comments and reactions on finished turns (migration `019_comments`), on either store: the SQL both
databases accept, `?` placeholders (`webapp.store.sql`).

A person (`person`: a user, a share-link holder's browser session, a browser) has at most one of each
reaction on a turn: toggling is an insert that does nothing when the row exists, or a delete. A comment
is plain text kept as written; it is rendered escaped wherever it is shown. Deleting one only marks it
(who, when): the audit trail can name what was removed, and nobody is shown it again.

The per-person rate limit is counted here, from the rows (deleted ones too), so that it holds across
tabs, reloads and processes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from webapp.store.protocol import EventStore
from webapp.store.sql import model_row, runner

REACTIONS: tuple[str, ...] = ("👍", "❓", "⚠️")  # the fixed set, in the order shown
MAX_COMMENT_CHARS = 500
SOMEONE = "a team member"  # a comment's author as a share link's holder sees a signed-in user


class CommentRow(BaseModel):
    """One comment on one turn. `at` and `deleted_at`: seconds since the epoch."""

    id: str
    debate_id: str
    turn_key: str
    person: str
    author: str
    body: str
    at: float
    deleted_at: float | None = None
    deleted_by: str | None = None

    def public(self, names: bool = True) -> dict[str, Any]:
        """What spectators and exports see: never the person key (a browser's id is a credential of sorts).
        Without `names` (a share link's holder), a team member (a signed-in user) is only "a team member";
        a guest's tag names nobody and stays."""
        author = self.author if names or not self.person.startswith("user:") else SOMEONE
        return {"id": self.id, "author": author, "text": self.body, "at": self.at}


class TurnTalk(BaseModel):
    """What people said about one turn: its visible comments, oldest first, and the reaction counts."""

    comments: list[CommentRow] = Field(default_factory=list)
    reactions: dict[str, int] = Field(default_factory=dict)

    def public(self, names: bool = True) -> dict[str, Any]:
        return {"comments": [c.public(names) for c in self.comments],
                "reactions": {emoji: self.reactions.get(emoji, 0) for emoji in REACTIONS}}


COMMENT_COLUMNS = tuple(CommentRow.model_fields)


def _comment(row: Iterable[Any]) -> CommentRow:
    return model_row(CommentRow, COMMENT_COLUMNS, row)


class CommentStore:
    """The comments and reactions tables, on any `EventStore`."""

    def __init__(self, store: EventStore) -> None:
        self.store = runner(store)

    async def add(self, debate_id: str, turn_key: str, person: str, author: str, body: str,
                  *, at: float | None = None) -> CommentRow:
        row = CommentRow(id=uuid.uuid4().hex[:12], debate_id=debate_id, turn_key=turn_key, person=person,
                         author=author, body=body, at=time.time() if at is None else at)
        async with self.store.transaction() as db:
            await db.execute(
                "INSERT INTO comments (id, debate_id, turn_key, person, author, body, at) VALUES (?,?,?,?,?,?,?)",
                (row.id, debate_id, turn_key, person, author, body, row.at))
        return row

    async def recent_count(self, person: str, since: float) -> int:
        """How many comments `person` wrote since `since` (deleted ones count: the limit is on writing)."""
        row = await self.store.fetchone("SELECT count(*) FROM comments WHERE person = ? AND at >= ?",
                                        (person, since))
        return int(row[0]) if row else 0

    async def oldest_since(self, person: str, since: float) -> float | None:
        row = await self.store.fetchone("SELECT min(at) FROM comments WHERE person = ? AND at >= ?",
                                        (person, since))
        return float(row[0]) if row and row[0] is not None else None

    async def get(self, comment_id: str) -> CommentRow | None:
        row = await self.store.fetchone(f"SELECT {', '.join(COMMENT_COLUMNS)} FROM comments WHERE id = ?",
                                        (comment_id,))
        return _comment(row) if row else None

    async def delete(self, comment_id: str, by: str, *, at: float | None = None) -> bool:
        """Mark a comment deleted; False when there is none or it was deleted already."""
        async with self.store.transaction() as db:
            cur = await db.execute(
                "UPDATE comments SET deleted_at = ?, deleted_by = ? WHERE id = ? AND deleted_at IS NULL",
                (time.time() if at is None else at, by, comment_id))
            return cur.rowcount > 0

    async def toggle(self, debate_id: str, turn_key: str, person: str, emoji: str) -> bool:
        """Add the person's `emoji` on a turn, or take it back if it was there; returns whether it is now on."""
        async with self.store.transaction() as db:
            cur = await db.execute(
                "DELETE FROM reactions WHERE debate_id = ? AND turn_key = ? AND person = ? AND emoji = ?",
                (debate_id, turn_key, person, emoji))
            if cur.rowcount > 0:
                return False
            await db.execute(
                "INSERT INTO reactions (debate_id, turn_key, person, emoji, at) VALUES (?,?,?,?,?)"
                " ON CONFLICT DO NOTHING",
                (debate_id, turn_key, person, emoji, time.time()))
            return True

    async def mine(self, debate_id: str, person: str) -> dict[str, list[str]]:
        """turn key -> the reactions `person` has on it."""
        rows = await self.store.fetchall(
            "SELECT turn_key, emoji FROM reactions WHERE debate_id = ? AND person = ? ORDER BY turn_key, emoji",
            (debate_id, person))
        out: dict[str, list[str]] = {}
        for key, emoji in rows:
            out.setdefault(str(key), []).append(str(emoji))
        return out

    async def for_debate(self, debate_id: str) -> dict[str, TurnTalk]:
        """turn key -> its visible comments and reaction counts (turns nobody talked about are absent)."""
        out: dict[str, TurnTalk] = {}
        rows = await self.store.fetchall(
            f"SELECT {', '.join(COMMENT_COLUMNS)} FROM comments WHERE debate_id = ? AND deleted_at IS NULL"
            " ORDER BY at, id", (debate_id,))
        for row in rows:
            comment = _comment(row)
            out.setdefault(comment.turn_key, TurnTalk()).comments.append(comment)
        counts = await self.store.fetchall(
            "SELECT turn_key, emoji, count(*) FROM reactions WHERE debate_id = ? GROUP BY turn_key, emoji",
            (debate_id,))
        for key, emoji, n in counts:
            out.setdefault(str(key), TurnTalk()).reactions[str(emoji)] = int(n)
        return out
