"""The audience through the gate: votes before and after a debate, people's verdicts on an ended one,
and operators opening or closing the after vote.

Who may is the gate's `authorize` (`Action.VOTE`, `JUDGE`, `MANAGE_VOTE`); whether a stage is open and
what a verdict may say is `webapp.engine.audience`; the rows are `webapp.store.audience`'s. Each answer
is audited, a refused one with its reason. `Gate.voter`, `vote`, `judge` and `set_after_vote` hand over
to `AudienceDesk`.
"""

from __future__ import annotations

import time
from typing import Any

from webapp.access.roles import Action, Authorize, Principal
from webapp.engine import audience
from webapp.engine.runner import DebateSession
from webapp.store.accounts import Accounts
from webapp.store.audience import AudienceStore, Choice, HumanVerdict, Stage
from webapp.store.protocol import EventStore


class AudienceDesk:
    """What one principal may answer as a member of a debate's audience, checked and recorded."""

    def __init__(self, authorize: Authorize, accounts: Accounts, store: EventStore) -> None:
        self.authorize = authorize
        self.accounts = accounts
        self.store = store

    def voter(self, principal: Principal, browser_id: str | None) -> str:
        """Who counts once: a signed-in user by name; a share-link holder, or anyone on an instance
        without sign-in, by their browser (its signed session cookie's id)."""
        if principal.kind in ("user", "proxy"):
            return f"user:{principal.name}"
        if principal.kind in ("share-link", "local"):
            if not browser_id:
                raise ValueError("vote: this browser has no session; allow cookies and reload the page")
            return f"browser:{browser_id}"
        return principal.kind

    async def _audience_state(self, session: DebateSession) -> tuple[float | None, float]:
        return await AudienceStore(self.store).after_closes(session.id), time.time()

    async def vote(self, session: DebateSession, stage: Stage, choice: Choice, browser_id: str | None = None,
                   after_minutes: float = audience.DEFAULT_AFTER_MINUTES) -> str:
        """Record this person's answer in the open stage `stage`; returns the voter key counted."""
        principal = await self.authorize(Action.VOTE, session.id)
        detail = {"stage": stage, "choice": choice}
        try:
            override, now = await self._audience_state(session)
            if not audience.has_vote(session.state):
                raise ValueError("vote: this debate has no pro and con sides to vote on")
            if not audience.stage_open(session.state, stage, override, now, after_minutes):
                raise ValueError(f"vote: the {stage} vote is closed")
            voter = self.voter(principal, browser_id)
            await AudienceStore(self.store).vote(session.id, stage, voter, choice)
        except ValueError as exc:
            await self.accounts.audit(principal.actor, Action.VOTE.value, session.id, outcome="failed",
                                      detail=str(exc)[:500])
            raise
        await self.accounts.audit(principal.actor, Action.VOTE.value, session.id, detail=detail)
        return voter

    async def judge(self, session: DebateSession, winner: str | None, scores: dict[str, Any], note: str = "",
                    browser_id: str | None = None,
                    after_minutes: float = audience.DEFAULT_AFTER_MINUTES) -> HumanVerdict:
        """Record (or change, while the after vote is open) this person's verdict on an ended debate."""
        principal = await self.authorize(Action.JUDGE, session.id)
        store = AudienceStore(self.store)
        try:
            state = session.state
            if audience.ended_at(state) is None:
                raise ValueError("verdict: the debate has not ended yet")
            voter = self.voter(principal, browser_id)
            override, now = await self._audience_state(session)
            closes = audience.after_closes_at(state, override, after_minutes)
            mine = [v for v in await store.verdicts(session.id) if v.by == voter]
            if mine and closes is not None and now >= closes:
                raise ValueError("verdict: yours is given and can no longer be changed (the after vote closed)")
            winner, clean, note = audience.check_human_verdict(state, winner, scores, note)
            verdict = await store.set_verdict(session.id, voter, winner, clean, note)
        except ValueError as exc:
            await self.accounts.audit(principal.actor, Action.JUDGE.value, session.id, outcome="failed",
                                      detail=str(exc)[:500])
            raise
        await self.accounts.audit(principal.actor, Action.JUDGE.value, session.id,
                                  detail={"winner": winner or audience.TIE})
        return verdict

    async def set_after_vote(self, session: DebateSession, open_: bool,
                             after_minutes: float = audience.DEFAULT_AFTER_MINUTES) -> float:
        """Close the after vote now, or reopen it for `after_minutes`; returns when it closes."""
        principal = await self.authorize(Action.MANAGE_VOTE, session.id)
        if audience.ended_at(session.state) is None:
            raise ValueError("after vote: the debate has not ended yet")
        closes = time.time() + (after_minutes * 60 if open_ else 0)
        await AudienceStore(self.store).set_after_closes(session.id, closes, principal.actor)
        await self.accounts.audit(principal.actor, Action.MANAGE_VOTE.value, session.id,
                                  detail={"after_vote": "reopened" if open_ else "closed"})
        return closes
