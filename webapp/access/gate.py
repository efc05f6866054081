"""The command gate: every state-changing request from a page (and any future API) passes here.

It checks the principal's role on the server for each command, records the action in the audit
trail (allowed, refused or failed) and hands the engine the actor to record in the debate's log.
A refusal raises `PermissionDenied` and is logged; nothing reaches the engine.

Two parts live in modules of their own and are handed the gate's check (`authorize`): account
management (`webapp.access.users.UserAdmin`) and the audience's votes and verdicts
(`webapp.access.audience.AudienceDesk`); the gate's methods of the same names pass to them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from webapp.access.audience import AudienceDesk
from webapp.access.passwords import new_token, token_digest
from webapp.access.roles import Action, PermissionDenied, Principal, Role
from webapp.access.users import UserAdmin
from webapp.engine import audience
from webapp.engine.api import Command, CommandResult, SeatDraft
from webapp.engine.engine import Engine
from webapp.engine.machine import TERMINAL_STATES
from webapp.engine.runner import DebateSession
from webapp.engine.schedule import ConfigError
from webapp.engine.series import check_can_rematch, rematch_config
from webapp.models import DebateConfig, utcnow
from webapp.store.accounts import Accounts, ShareLinkRow, UserRow
from webapp.store.audience import Choice, HumanVerdict, Stage
from webapp.store.sign_ins import SignIns
from webapp.tournament.plan import Tournament, sample_configs
from webapp.tournament.runner import TournamentManager
from webapp.tournament.store import TournamentStore

log = logging.getLogger("rostrum.access")

# Debate commands a page can send, with the role permission each needs.
COMMANDS: dict[Command, Action] = {
    Command.PAUSE: Action.PAUSE,
    Command.RESUME: Action.RESUME,
    Command.STOP: Action.STOP,
    Command.RETRY: Action.RETRY,
    Command.ACKNOWLEDGE_WARNING: Action.ACKNOWLEDGE_WARNING,
    Command.ANSWER_CLARIFICATION: Action.ANSWER_CLARIFICATION,
    Command.SEND_TURN: Action.SEND_TURN,
}
MAX_SHARE_HOURS = 24 * 365


class SessionExpired(PermissionError):
    """The principal's sign-in ran out while a page was open."""


def start_of_day(now: datetime | None = None) -> datetime:
    now = now or utcnow()
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


class Gate:
    """The commands one principal may send, checked and recorded. Made per page (or per CLI run)."""

    def __init__(self, engine: Engine, principal: Principal, daily_usd: float | None = None) -> None:
        self.engine = engine
        self.principal = principal
        self.accounts = Accounts(engine.store)
        self.daily_usd = daily_usd
        self.users = UserAdmin(self.authorize, self.accounts)
        self.audience_desk = AudienceDesk(self.authorize, self.accounts, engine.store)

    # --- checking ----------------------------------------------------------------------------

    async def current(self) -> Principal:
        """The principal as it stands now: a user disabled, demoted or signed out since the page was
        opened acts with what the database says today, not with what it said then."""
        principal = self.principal
        if principal.expires_at is not None and utcnow() >= principal.expires_at:
            raise SessionExpired("your sign-in has expired: sign in again")
        if principal.session_id is not None:  # signed out, new password or role, disabled: in any process
            session = await SignIns(self.engine.store).get(principal.session_id)
            if session is None or not session.live():
                why = session.ended_why if session is not None and session.ended_why else "it ended"
                raise SessionExpired(f"your sign-in is over ({why}): sign in again")
        if principal.kind == "share-link" and principal.link_id is not None:
            link = await self.accounts.link(principal.link_id)
            if link is None or link.status() != "active":
                raise SessionExpired("this share link " + ("was revoked" if link is not None and
                                                           link.status() == "revoked" else "no longer works"))
        if principal.kind in ("user", "proxy"):
            row = await self.accounts.user(principal.name)
            if row is None or row.disabled:
                return principal.model_copy(update={"role": Role.VIEWER, "disabled": True})
            if row.role != principal.role.value:
                principal = principal.model_copy(update={"role": Role(row.role)})
                self.principal = principal
        return principal

    async def allowed(self, action: Action, debate_id: str | None = None) -> bool:
        try:
            principal = await self.current()
        except SessionExpired:
            return False
        return principal.can(action, debate_id)

    async def authorize(self, action: Action, debate_id: str | None = None, detail: str = "") -> Principal:
        """The principal if it may do `action`; otherwise log, audit and raise `PermissionDenied`."""
        try:
            principal = await self.current()
        except SessionExpired:
            await self._refused(self.principal, action, debate_id, "sign-in over")
            raise
        if not principal.can(action, debate_id):
            await self._refused(principal, action, debate_id, detail)
            raise PermissionDenied(principal, action, debate_id)
        return principal

    async def _refused(self, principal: Principal, action: Action, debate_id: str | None, detail: str) -> None:
        log.warning("refused: %s (%s, %s) tried to %s%s%s", principal.actor, principal.kind, principal.role.value,
                    action.value, f" debate {debate_id}" if debate_id else "", f" ({detail})" if detail else "")
        await self.accounts.audit(principal.actor, action.value, debate_id, outcome="refused",
                                  detail=detail or f"role {principal.role.value}")

    # --- debate commands ---------------------------------------------------------------------

    async def command(self, session: DebateSession, name: Command | str, **kwargs: Any) -> CommandResult:
        """Run one of `COMMANDS` on a debate, as this principal; returns what it did."""
        try:
            action = COMMANDS[Command(name)]
        except (ValueError, KeyError):
            raise ValueError(f"unknown command {name!r}") from None
        principal = await self.authorize(action, session.id)
        detail = {k: v for k, v in kwargs.items() if k not in ("answers", "text")}
        if isinstance(kwargs.get("text"), str):  # a human seat's turn: its size, not its words, in the audit
            detail["words"] = len(kwargs["text"].split())
        try:
            result = await self.engine.command(session, name, actor=principal.actor, **kwargs)
        except Exception as exc:
            await self.accounts.audit(principal.actor, action.value, session.id, outcome="failed",
                                      detail=str(exc)[:500])
            raise
        await self.accounts.audit(principal.actor, action.value, session.id, detail=detail or "")
        return result

    async def draft_turn(self, session: DebateSession, model: str, on_text: Callable[[str], None]) -> SeatDraft:
        """"Draft with a model" for a human seat: allowed to whoever may send the seat's turn (the engine
        checks it is theirs and that the debate's money allows the call), audited with the model; returns
        the draft (streamed to `on_text`) and what to say about money."""
        principal = await self.authorize(Action.SEND_TURN, session.id, detail="draft")
        try:
            draft = await session.draft_seat_turn(model, principal.actor, on_text)
        except Exception as exc:
            await self.accounts.audit(principal.actor, "draft_turn", session.id, outcome="failed",
                                      detail=str(exc)[:500])
            raise
        await self.accounts.audit(principal.actor, "draft_turn", session.id, detail={"model": model})
        return draft

    async def start(self, config: DebateConfig) -> DebateSession:
        """Create and start a debate: needs the create permission and fits the person's daily limit."""
        principal = await self.authorize(Action.CREATE)
        config = self.engine.validate(config)
        await self.check_daily_limit(principal, config)
        session = await self.engine.start(config, actor=principal.actor)
        await self.accounts.audit(principal.actor, "start", session.id, detail={"topic": config.topic[:200]})
        return session

    async def rematch(self, debate_id: str, start: bool = True) -> DebateSession:
        """Create (and, with `start`, start) the side-swapped rematch of a finished or stopped debate
        (`webapp.engine.series`): authorised like creating a debate, within the daily limit, audited
        as `rematch` with the original's id. Raises `NotEnded` for a debate that has not ended."""
        principal = await self.authorize(Action.CREATE, debate_id, detail="rematch")
        original = await self.engine.session(debate_id)
        try:
            check_can_rematch(original.state)
            config = self.engine.validate(rematch_config(original.state.config, original.id))
            await self.check_daily_limit(principal, config)
            if start:
                session = await self.engine.start(config, actor=principal.actor)
            else:
                session = await self.engine.session(await self.engine.create(config, actor=principal.actor))
        except Exception as exc:
            await self.accounts.audit(principal.actor, "rematch", original.id, outcome="failed", detail=str(exc)[:500])
            raise
        await self.accounts.audit(principal.actor, "rematch", session.id, detail={
            "rematch_of": original.id, "series": config.series, "topic": config.topic[:200]})
        return session

    # --- tournaments --------------------------------------------------------------------------

    async def start_tournament(self, tournament: Tournament, manager: TournamentManager) -> Tournament:
        """Store a tournament and start playing it: authorised like creating a debate; every debate it
        plans must be valid, and where a daily limit applies its total budget must fit in what is left
        today. Audited as `tournament`."""
        principal = await self.authorize(Action.CREATE, detail="tournament")
        for config in sample_configs(tournament):
            self.engine.validate(config)
        if self.daily_limit_applies(principal):
            assert self.daily_usd is not None
            if tournament.budget_usd is None:
                raise ConfigError("budget_usd", f"a total budget is required: each person may commit at most "
                                  f"${self.daily_usd:.2f} a day")
            remaining = max(0.0, self.daily_usd - await self.daily_spend(principal))
            if tournament.budget_usd > remaining + 1e-9:
                raise ConfigError("budget_usd", f"${tournament.budget_usd:.2f} is more than you have left today: "
                                  f"${remaining:.2f} of your ${self.daily_usd:.2f} daily limit")
        stored = await TournamentStore(self.engine.store).create(
            tournament.model_copy(update={"created_by": principal.actor}))
        await self.accounts.audit(principal.actor, "tournament", None, detail={"tournament": stored.id,
                                                                                "name": stored.name[:200]})
        await manager.play(stored.id, actor=principal.actor)  # here, or on the debate workers
        return stored

    async def continue_tournament(self, tournament_id: str, manager: TournamentManager,
                                  budget_usd: float | None = None) -> None:
        """Play a stopped tournament on (with a new total budget, if given); audited."""
        principal = await self.authorize(Action.RESUME, detail="tournament")
        store = TournamentStore(self.engine.store)
        if budget_usd is not None:
            await store.set_budget(tournament_id, budget_usd)
        await self.accounts.audit(principal.actor, "continue_tournament", None,
                                  detail={"tournament": tournament_id, "budget_usd": budget_usd})
        await manager.play(tournament_id, actor=principal.actor)

    async def stop_tournament(self, tournament_id: str, manager: TournamentManager) -> bool:
        """Start no further debate of a tournament (those running finish); audited."""
        principal = await self.authorize(Action.STOP, detail="tournament")
        stopping = await manager.stop(tournament_id)
        await self.accounts.audit(principal.actor, "stop_tournament", None, detail={"tournament": tournament_id})
        return stopping

    async def daily_spend(self, principal: Principal | None = None) -> float:
        principal = principal or self.principal
        # A person's limit covers what they start with their API tokens too (the store matches both).
        person = principal.name if principal.kind == "token" else principal.actor
        return await self.engine.store.committed_spend(person, start_of_day(),
                                                       [s.value for s in TERMINAL_STATES])

    def daily_limit_applies(self, principal: Principal | None = None) -> bool:
        principal = principal or self.principal
        return self.daily_usd is not None and principal.role is not Role.ADMIN

    async def check_daily_limit(self, principal: Principal, config: DebateConfig) -> None:
        """Refuse (naming the field) a debate that could push the person's spending today past the limit."""
        if not self.daily_limit_applies(principal):
            return
        assert self.daily_usd is not None
        limit = config.budget.cost_limit
        if limit is None:
            raise ConfigError("budget.cost_limit", f"a hard limit is required: each person may commit at most "
                              f"${self.daily_usd:.2f} a day to debates")
        spent = await self.daily_spend(principal)
        remaining = max(0.0, self.daily_usd - spent)
        if limit > remaining + 1e-9:
            raise ConfigError("budget.cost_limit", f"${limit:.2f} is more than you have left today: "
                              f"${remaining:.2f} of your ${self.daily_usd:.2f} daily limit "
                              f"(${spent:.2f} spent or reserved by today's debates)")

    async def delete(self, debate_id: str) -> None:
        principal = await self.authorize(Action.DELETE, debate_id)
        debate_id = await self.engine.store.find_id(debate_id) or debate_id  # a unique prefix names it too
        row = await self.engine.store.get_row(debate_id)
        await self.engine.delete(debate_id)
        await self.accounts.audit(principal.actor, Action.DELETE.value, debate_id,
                                  detail={"topic": row.topic[:200]} if row else "")

    # --- share links -------------------------------------------------------------------------

    async def share(self, session: DebateSession, expires_in_hours: float | None = None,
                    comments: bool = False) -> tuple[ShareLinkRow, str]:
        """A new read-only link to one debate; returns the row and the token (shown once, stored hashed).
        With `comments`, its holders may comment on turns (they may always react)."""
        principal = await self.authorize(Action.SHARE, session.id)
        if expires_in_hours is not None and not 0 < expires_in_hours <= MAX_SHARE_HOURS:
            raise ValueError(f"expiry: give a number of hours between 1 and {MAX_SHARE_HOURS}, or none")
        expires_at = utcnow() + timedelta(hours=expires_in_hours) if expires_in_hours else None
        token = new_token()
        row = await self.accounts.add_link(session.id, token_digest(token), principal.actor, expires_at, comments)
        detail: dict[str, Any] = {"link": row.id, "comments": comments}
        if expires_at is not None:
            detail["expires_at"] = expires_at.isoformat()
        await session.record_action("share_link_created", principal.actor, detail)
        await self.accounts.audit(principal.actor, Action.SHARE.value, session.id, detail=detail)
        return row, token

    async def revoke(self, session: DebateSession, link_id: str) -> bool:
        principal = await self.authorize(Action.REVOKE_SHARE, session.id)
        links = {link.id for link in await self.accounts.links(session.id)}
        if link_id not in links:
            raise ValueError(f"no share link {link_id!r} on this debate")
        revoked = await self.accounts.revoke_link(link_id, principal.actor)
        if revoked:
            await session.record_action("share_link_revoked", principal.actor, {"link": link_id})
            await self.accounts.audit(principal.actor, Action.REVOKE_SHARE.value, session.id,
                                      detail={"link": link_id})
        return revoked

    # --- accounts (`webapp.access.users`) -----------------------------------------------------

    async def add_user(self, username: str, role: Role, password: str | None) -> UserRow:
        """A new account, audited; a bad or taken name or a weak password raises ValueError naming the field."""
        return await self.users.add_user(username, role, password)

    async def set_role(self, username: str, role: Role) -> None:
        await self.users.set_role(username, role)

    async def set_disabled(self, username: str, disabled: bool) -> None:
        await self.users.set_disabled(username, disabled)

    async def set_password(self, username: str, password: str) -> None:
        await self.users.set_password(username, password)

    # --- the audience: votes, people's verdicts (`webapp.access.audience`) ------------------------

    def voter(self, principal: Principal, browser_id: str | None) -> str:
        """Who counts once in a vote: a user by name, anyone else by their browser."""
        return self.audience_desk.voter(principal, browser_id)

    async def vote(self, session: DebateSession, stage: Stage, choice: Choice, browser_id: str | None = None,
                   after_minutes: float = audience.DEFAULT_AFTER_MINUTES) -> str:
        """Record this person's answer in the open stage `stage`; returns the voter key counted."""
        return await self.audience_desk.vote(session, stage, choice, browser_id, after_minutes)

    async def judge(self, session: DebateSession, winner: str | None, scores: dict[str, Any], note: str = "",
                    browser_id: str | None = None,
                    after_minutes: float = audience.DEFAULT_AFTER_MINUTES) -> HumanVerdict:
        """Record (or change, while the after vote is open) this person's verdict on an ended debate."""
        return await self.audience_desk.judge(session, winner, scores, note, browser_id, after_minutes)

    async def set_after_vote(self, session: DebateSession, open_: bool,
                             after_minutes: float = audience.DEFAULT_AFTER_MINUTES) -> float:
        """Close the after vote now, or reopen it for `after_minutes`; returns when it closes."""
        return await self.audience_desk.set_after_vote(session, open_, after_minutes)
