"""The command gate: every state-changing request from a page (and any future API) passes here.

It checks the principal's role on the server for each command, records the action in the audit
trail (allowed, refused or failed) and hands the engine the actor to record in the debate's log.
A refusal raises `PermissionDenied` and is logged; nothing reaches the engine.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from webapp.access.passwords import hash_password, new_token, token_digest
from webapp.access.roles import Action, PermissionDenied, Principal, Role
from webapp.engine import audience
from webapp.engine.api import Command, CommandResult, SeatDraft
from webapp.engine.engine import Engine
from webapp.engine.machine import TERMINAL_STATES
from webapp.engine.runner import DebateSession
from webapp.engine.schedule import ConfigError
from webapp.engine.series import check_can_rematch, rematch_config
from webapp.models import DebateConfig, utcnow
from webapp.store.accounts import Accounts, ShareLinkRow, UnknownUser, UserExists, UserRow
from webapp.store.audience import AudienceStore, Choice, HumanVerdict, Stage
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
USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
RESERVED_NAMES = {"cli", "system", "share-link", "local"}  # actors that are not people


def check_username(name: str) -> str:
    name = name.strip()
    if not USERNAME.match(name):
        raise ValueError("username: use 1-64 letters, digits and . _ @ + - (starting with a letter or digit)")
    if name.lower() in RESERVED_NAMES:
        raise ValueError(f"username: {name!r} is reserved for actions that are not a person's")
    return name


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

    # --- accounts ----------------------------------------------------------------------------

    async def add_user(self, username: str, role: Role, password: str | None) -> UserRow:
        """A new account (`password` None: it signs in only through the proxy's identity header).
        A bad or taken name or a weak password raises ValueError naming the field; audited either way."""
        principal = await self.authorize(Action.MANAGE_USERS)
        try:
            username = check_username(username)
            hashed = await asyncio.to_thread(hash_password, password) if password is not None else None
            try:
                row = await self.accounts.add_user(username, role.value, hashed)
            except UserExists as exc:  # names are compared without case: name the account that has it
                existing = await self.accounts.user(username)
                raise UserExists(f"username: a user named {existing.username!r} already exists" if existing
                                 else f"username: {exc}") from None
        except ValueError as exc:  # the reason only: never the password
            await self.accounts.audit(principal.actor, "user_add", outcome="failed", detail=str(exc)[:300])
            raise
        await self.accounts.audit(principal.actor, "user_add", detail={"user": username, "role": role.value})
        return row

    async def _existing(self, username: str) -> UserRow:
        row = await self.accounts.user(username)
        if row is None:
            raise UnknownUser(username)
        return row

    async def _keep_an_admin(self, row: UserRow, what: str) -> None:
        if row.role == Role.ADMIN.value and not row.disabled and await self.accounts.count_admins() <= 1:
            raise ValueError(f"{row.username} is the only active admin: {what} would leave nobody to manage "
                             "users. Make another admin first.")

    async def set_role(self, username: str, role: Role) -> None:
        principal = await self.authorize(Action.MANAGE_USERS)
        row = await self._existing(username)
        if role is not Role.ADMIN:
            await self._keep_an_admin(row, "demoting them")
        await self.accounts.set_role(row.username, role.value)
        await self.accounts.audit(principal.actor, "user_set_role",
                                  detail={"user": row.username, "role": role.value, "from": row.role})

    async def set_disabled(self, username: str, disabled: bool) -> None:
        principal = await self.authorize(Action.MANAGE_USERS)
        row = await self._existing(username)
        if disabled:
            await self._keep_an_admin(row, "disabling them")
        await self.accounts.set_disabled(row.username, disabled)
        await self.accounts.audit(principal.actor, "user_disable" if disabled else "user_enable",
                                  detail={"user": row.username})

    async def set_password(self, username: str, password: str) -> None:
        principal = await self.authorize(Action.MANAGE_USERS)
        row = await self._existing(username)
        await self.accounts.set_password_hash(row.username, await asyncio.to_thread(hash_password, password))
        await self.accounts.audit(principal.actor, "user_passwd", detail={"user": row.username})

    # --- the audience: votes, people's verdicts ------------------------------------------------

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
        return await AudienceStore(self.engine.store).after_closes(session.id), time.time()

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
            await AudienceStore(self.engine.store).vote(session.id, stage, voter, choice)
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
        store = AudienceStore(self.engine.store)
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
        await AudienceStore(self.engine.store).set_after_closes(session.id, closes, principal.actor)
        await self.accounts.audit(principal.actor, Action.MANAGE_VOTE.value, session.id,
                                  detail={"after_vote": "reopened" if open_ else "closed"})
        return closes
