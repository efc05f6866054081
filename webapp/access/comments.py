"""Comments and reactions on finished turns, through the gate: who may (roles, and a share link's own
switch), what is accepted (plain text up to `MAX_COMMENT_CHARS`, a finished visible turn, one of the fixed
reactions), how often (`RATE_LIMIT` comments per `RATE_WINDOW` seconds per person, counted in the store so
it holds across tabs and processes), and the audit trail of deletions.

A person is named by the caller (`person`): a signed-in user, a share-link holder's browser session, or,
without sign-in, one browser. After each change `changed(debate_id)` is called so that the live layer can
tell every spectator of the debate (on this process and, through the bus, on the others).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable

from webapp.access.gate import Gate
from webapp.access.roles import Action, PermissionDenied, Principal
from webapp.engine.runner import DebateSession
from webapp.store.comments import MAX_COMMENT_CHARS, REACTIONS, CommentRow, CommentStore

RATE_LIMIT = 5  # comments per person…
RATE_WINDOW = 60.0  # …per this many seconds

Changed = Callable[[str], Awaitable[None] | None]


class CommentRefused(ValueError):
    """A comment or reaction that is not accepted (too long, empty, too many, not a finished turn)."""


def person_key(principal: Principal, browser_id: str) -> str:
    """Who counts once: a user by name; a share-link holder by link and browser session; without sign-in,
    one browser."""
    if principal.kind in ("user", "proxy"):
        return f"user:{principal.name.lower()}"
    if principal.kind == "share-link":
        return f"link:{principal.name.removeprefix('share link ')}:{browser_id}"
    return f"browser:{principal.kind}:{browser_id}"


def author_name(principal: Principal, person: str) -> str:
    """The name shown with a comment: the user's, or "Guest" and a short tag that tells guests apart."""
    if principal.kind in ("user", "proxy"):
        return principal.name
    return "Guest " + hashlib.sha256(person.encode()).hexdigest()[:4]


class CommentDesk:
    """What one person (one page) may say about a debate's turns, checked and recorded."""

    def __init__(self, gate: Gate, person: str, changed: Changed | None = None) -> None:
        self.gate = gate
        self.person = person
        self.store = CommentStore(gate.engine.store)
        self._changed = changed

    async def _signal(self, debate_id: str) -> None:
        if self._changed is not None:
            result = self._changed(debate_id)
            if result is not None:
                await result

    async def _authorize(self, action: Action, session: DebateSession) -> Principal:
        principal = await self.gate.authorize(action, session.id)
        if principal.kind == "share-link":  # a link revoked or expired since the page opened stops here
            link_id = principal.name.removeprefix("share link ")
            links = {link.id: link for link in await self.gate.accounts.links(session.id)}
            link = links.get(link_id)
            if link is None or link.status() != "active" or (action is Action.COMMENT and not link.comments):
                await self.gate.accounts.audit(principal.actor, action.value, session.id, outcome="refused",
                                               detail=f"share link {link_id} is not active or forbids it")
                raise PermissionDenied(principal, action, session.id)
        return principal

    @staticmethod
    def _finished_turn(session: DebateSession, turn_key: str) -> None:
        turn = next((t for t in session.state.turns if t.key == turn_key), None)
        if turn is None or not turn.visible:
            raise CommentRefused(f"turn: {turn_key!r} is not a finished turn of this debate")

    async def comment(self, session: DebateSession, turn_key: str, text: str) -> CommentRow:
        """Store a comment on a finished turn (plain text, kept as written, shown escaped)."""
        principal = await self._authorize(Action.COMMENT, session)
        self._finished_turn(session, turn_key)
        body = text.strip()
        if not body:
            raise CommentRefused("comment: write something first")
        if len(body) > MAX_COMMENT_CHARS:
            raise CommentRefused(f"comment: at most {MAX_COMMENT_CHARS} characters (this one has {len(body)})")
        now = time.time()
        since = now - RATE_WINDOW
        if await self.store.recent_count(self.person, since) >= RATE_LIMIT:
            oldest = await self.store.oldest_since(self.person, since) or now
            wait = max(1, int(oldest + RATE_WINDOW - now + 0.999))
            raise CommentRefused(f"comment: at most {RATE_LIMIT} comments a minute; try again in {wait} s")
        row = await self.store.add(session.id, turn_key, self.person, author_name(principal, self.person), body)
        await self._signal(session.id)
        return row

    async def react(self, session: DebateSession, turn_key: str, emoji: str) -> bool:
        """Toggle one of the fixed reactions on a finished turn; returns whether it is now on."""
        await self._authorize(Action.REACT, session)
        if emoji not in REACTIONS:
            raise CommentRefused(f"reaction: one of {' '.join(REACTIONS)}")
        self._finished_turn(session, turn_key)
        on = await self.store.toggle(session.id, turn_key, self.person, emoji)
        await self._signal(session.id)
        return on

    async def delete(self, session: DebateSession, comment_id: str) -> bool:
        """Delete a comment for everyone (operators and admins); audited with what it said."""
        principal = await self._authorize(Action.MODERATE_COMMENTS, session)
        row = await self.store.get(comment_id)
        if row is None or row.debate_id != session.id:
            raise CommentRefused(f"comment: no comment {comment_id!r} on this debate")
        deleted = await self.store.delete(comment_id, principal.actor)
        if deleted:
            await self.gate.accounts.audit(principal.actor, "comment_delete", session.id, detail={
                "comment": row.id, "author": row.author, "turn": row.turn_key, "text": row.body[:200]})
            await self._signal(session.id)
        return deleted

    async def mine(self, debate_id: str) -> dict[str, list[str]]:
        return await self.store.mine(debate_id, self.person)
