"""Roles and what each may do, declared as data, and the principal a request acts as.

Enforced where commands enter (`webapp.access.gate`), never only by hiding buttons.
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import datetime
from enum import StrEnum
from typing import Literal, Protocol

from pydantic import BaseModel

from webapp.store.accounts import UNKNOWN_ACTOR


class Role(StrEnum):
    """A team member's role (the convention of self-hosted dashboards: admin, member, viewer)."""

    ADMIN = "admin"
    OPERATOR = "operator"
    VIEWER = "viewer"


class Action(StrEnum):
    """Everything a person can ask of Rostrum that is checked against their role."""

    WATCH = "watch"
    EXPORT = "export"
    LIST = "list"
    CREATE = "create"
    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"
    RETRY = "retry"
    ACKNOWLEDGE_WARNING = "acknowledge_warning"
    ANSWER_CLARIFICATION = "answer_clarification"
    SEND_TURN = "send_turn"  # write a human seat's turn (the engine checks that the seat is theirs)
    CLONE = "clone"
    SHARE = "share"
    REVOKE_SHARE = "revoke_share"
    DELETE = "delete"
    MANAGE_USERS = "manage_users"
    SERVER_SETTINGS = "server_settings"
    MANAGE_WEBHOOKS = "manage_webhooks"
    VIEW_AUDIT = "view_audit"
    # people in the debate: comments and reactions on turns (`webapp.access.comments`)
    COMMENT = "comment"
    REACT = "react"
    MODERATE_COMMENTS = "moderate_comments"
    VOTE = "vote"  # the audience vote on a debate with sides
    JUDGE = "judge"  # a person's verdict on an ended debate
    MANAGE_VOTE = "manage_vote"  # close an after vote early, or reopen it


_READ = {Action.WATCH, Action.EXPORT, Action.LIST}
_TALK = {Action.COMMENT, Action.REACT}  # spectators take part: every role
_TAKE_PART = {Action.VOTE, Action.JUDGE}  # every team member, viewers too
# A viewer may be given a seat in a debate: sending its turn is theirs to do (never a share link's).
_VIEW = _READ | _TALK | _TAKE_PART | {Action.SEND_TURN}
_OPERATE = _VIEW | {Action.MODERATE_COMMENTS, Action.MANAGE_VOTE} | {
    Action.CREATE, Action.PAUSE, Action.RESUME, Action.STOP, Action.RETRY, Action.ACKNOWLEDGE_WARNING,
    Action.ANSWER_CLARIFICATION, Action.CLONE, Action.SHARE, Action.REVOKE_SHARE,
}
PERMISSIONS: dict[Role, frozenset[Action]] = {
    Role.VIEWER: frozenset(_VIEW),
    Role.OPERATOR: frozenset(_OPERATE),
    Role.ADMIN: frozenset(Action),
}
# A share link watches, exports, reacts and votes on its one debate (and comments, if the link allows),
# nothing else (no list, no other debates).
SHARE_LINK_ACTIONS = frozenset({Action.WATCH, Action.EXPORT, Action.REACT, Action.VOTE})

ROLE_HELP = {
    Role.ADMIN: "everything: users, server defaults, deleting debates",
    Role.OPERATOR: "create debates; pause, resume, stop, retry and answer on any debate; share, export",
    Role.VIEWER: "watch and export, comment and react, vote and judge; nothing that spends money or changes a debate",
}


class Principal(BaseModel):
    """Who a request acts as. `name` is what the audit trail and the event log record."""

    name: str
    role: Role
    kind: Literal["user", "proxy", "local", "share-link", "cli", "system", "token"] = "user"
    debate_id: str | None = None  # a share link's one debate
    link_comments: bool = False  # a share link whose holders may comment
    expires_at: datetime | None = None  # when a browser sign-in runs out
    disabled: bool = False  # the account was disabled after this principal was made
    session_id: str | None = None  # a browser sign-in's session (`login_sessions`): checked on every command
    link_id: str | None = None  # a share link's id: checked on every export
    token_suffix: str | None = None  # an API token's last characters (kind "token"): named in the audit

    def can(self, action: Action, debate_id: str | None = None) -> bool:
        if self.disabled:
            return False
        if self.kind == "share-link":
            allowed = action in SHARE_LINK_ACTIONS or (action is Action.COMMENT and self.link_comments)
            return allowed and debate_id is not None and debate_id == self.debate_id
        return action in PERMISSIONS[self.role]

    @property
    def actor(self) -> str:
        """The name recorded with what this principal does (`share-link` for every link; a person acting
        with an API token as `ada (token …f3a9)`)."""
        if self.kind == "share-link":
            return "share-link"
        if self.kind == "token":
            return f"{self.name} (token …{self.token_suffix})"
        return self.name


class PermissionDenied(PermissionError):
    """A principal asked for something its role does not allow."""

    def __init__(self, principal: Principal, action: Action, debate_id: str | None = None) -> None:
        self.principal = principal
        self.action = action
        self.debate_id = debate_id
        who = "a share link" if principal.kind == "share-link" else f"{principal.name} ({principal.role.value})"
        super().__init__(f"not allowed: {who} cannot {action.value.replace('_', ' ')}")


class Authorize(Protocol):
    """A gate's check (`Gate.authorize`), handed to the parts it delegates to: the principal as it stands
    now if it may do `action`; otherwise the refusal is audited and `PermissionDenied` raised."""

    def __call__(self, action: Action, debate_id: str | None = None, detail: str = "") -> Awaitable[Principal]: ...


# Used when sign-in is off (a laptop bound to loopback): the one local person may do everything.
LOCAL = Principal(name="local", role=Role.ADMIN, kind="local")
CLI = Principal(name="cli", role=Role.ADMIN, kind="cli")
SYSTEM = "system"

# The actors that are not a person's name, as a reader should see them. The stored names stay short
# and stable (logs, exports and the audit trail are matched on them); only what is shown changes.
ACTOR_WORDS = {
    LOCAL.name: "this computer (no sign-in)",
    CLI.name: "the command line",
    SYSTEM: "Rostrum (automatic)",
    "share-link": "a share link",
    UNKNOWN_ACTOR: "an unknown username",  # failed sign-ins with a name no account has
}


def actor_label(actor: str | None) -> str:
    """Who did something, for a person to read: `local` (sign-in is off) is "this computer (no
    sign-in)", the other non-people are named for what they are, a person's name is kept as it is."""
    if not actor:
        return ACTOR_WORDS[SYSTEM]
    return ACTOR_WORDS.get(actor, actor)
