"""The audit trail in words: one sentence for each recorded action, for the admin page.

The trail stores each action's detail as it was given (JSON for the structured ones, a sentence for
refusals and failures): stable for machines, unreadable for people. `describe` turns a row into a
sentence ("role of ada changed from viewer to operator", "share link 3f2a created for debate “Tea or
coffee?”, expires 2026-12-04 09:00 UTC"), one function per action in `SENTENCES`; an action that has
none (a new one, or an older version's) still reads as words: its name without underscores and its
detail as "key value" pairs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from webapp.access.roles import actor_label
from webapp.store.accounts import AuditRow


class Detail:
    """One row's detail, read leniently: a missing or odd field reads as absent, never as an error
    (the trail holds rows written by every version of Rostrum)."""

    def __init__(self, row: AuditRow, topic: str | None) -> None:
        self.row = row
        self.fields: dict[str, Any] = {}
        self.text = row.detail.strip()
        if self.text.startswith("{"):
            try:
                loaded = json.loads(self.text)
            except ValueError:
                loaded = None
            if isinstance(loaded, dict):
                self.fields, self.text = loaded, ""
        self.topic = topic or self.text_of("topic")

    def text_of(self, key: str) -> str:
        value = self.fields.get(key)
        return "" if value is None else str(value)

    @property
    def debate(self) -> str:
        """`debate “Topic”`, or its id where the topic is not known (a deleted debate), or ""."""
        if self.topic:
            return f"debate “{shorten(self.topic)}”"
        return f"debate {self.row.debate_id}" if self.row.debate_id else "a debate"

    @property
    def user(self) -> str:
        return self.text_of("user") or "(name not recorded)"


def shorten(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def when(value: object) -> str:
    """An ISO time as `2026-12-04 09:00 UTC` (stored times are UTC); anything else as it is."""
    try:
        return f"{datetime.fromisoformat(str(value)):%Y-%m-%d %H:%M} UTC"
    except ValueError:
        return str(value)


def expiry(value: object) -> str:
    return f"expires {when(value)}" if value else "never expires"


def words(name: str) -> str:
    return name.replace("_", " ").replace("-", " ").strip()


def pairs(fields: Mapping[str, Any]) -> str:
    """`key value` pairs in words, for an action without a sentence of its own."""
    shown = []
    for key, value in fields.items():
        if isinstance(value, list | tuple):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, dict):
            value = pairs(value)
        elif value is None or value == "":
            continue
        shown.append(f"{words(str(key))} {shorten(str(value), 60)}")
    return "; ".join(shown)


def _stop(d: Detail) -> str:
    verdict = d.fields.get("verdict")
    how = "" if verdict is None else (" with a verdict" if verdict else " without a verdict")
    return f"{d.debate} stopped{how}"


def _send_turn(d: Detail) -> str:
    count = d.text_of("words")
    return f"a turn of {count} words sent in {d.debate}" if count else f"a turn sent in {d.debate}"


def _rematch(d: Detail) -> str:
    of = d.text_of("rematch_of")
    return f"side-swapped rematch of {d.debate} created" + (f" (rematch of {of})" if of else "")


def _share(d: Detail) -> str:
    talk = "; holders may comment" if d.fields.get("comments") else ""
    return f"share link {d.text_of('link')} created for {d.debate}, {expiry(d.fields.get('expires_at'))}{talk}"


def _set_role(d: Detail) -> str:
    before = d.text_of("from")
    if before:
        return f"role of {d.user} changed from {before} to {d.text_of('role')}"
    return f"role of {d.user} set to {d.text_of('role')}"


def _sign_in(d: Detail) -> str:
    address = d.text_of("address") or "an unknown address"
    attempts = d.fields.get("attempts")
    if attempts is not None:  # failed sign-ins with a name no account has, counted per address
        since = f" since {when(d.fields['since'])}" if d.fields.get("since") else ""
        return f"{attempts} sign-in attempt{'s' if attempts != 1 else ''} from {address}{since}"
    return f"sign-in from {address} refused" if d.row.outcome == "refused" else f"signed in from {address}"


def _vote(d: Detail) -> str:
    stage, choice = d.text_of("stage"), d.text_of("choice")
    return f"{stage + ' ' if stage else ''}vote on {d.debate}" + (f": {choice}" if choice else "")


def _manage_vote(d: Detail) -> str:
    return f"after vote on {d.debate} {d.text_of('after_vote') or 'changed'}"


def _comment_delete(d: Detail) -> str:
    said = d.text_of("text")
    author = d.text_of("author")
    return (f"comment by {actor_label(author) if author else 'someone'} deleted from {d.debate}"
            + (f": “{shorten(said, 60)}”" if said else ""))


def _endpoint(d: Detail) -> str:
    where, problem = d.text_of("base_url"), d.text_of("problem")
    verb = "registered" if d.row.action == "endpoint_add" else "removed"
    return (f"model endpoint {d.text_of('name')}" + (f" ({where})" if where else "") + f" {verb}"
            + (f": {problem}" if problem else ""))


def _defaults(d: Detail) -> str:
    listed = pairs(d.fields)
    return "defaults for new debates saved" + (f": {listed}" if listed else "")


def _token(d: Detail) -> str:
    suffix = d.text_of("suffix")
    name = f"API token …{suffix}" if suffix else f"API token {d.text_of('token')}"
    if d.row.action == "token_create":
        return f"{name} created for {d.user} as {d.text_of('role')}, {expiry(d.fields.get('expires_at'))}"
    return f"{name} of {d.user} revoked" if d.fields.get("user") else f"{name} revoked"


def _webhook_add(d: Detail) -> str:
    events = d.fields.get("events") or []
    listed = ", ".join(str(e) for e in events) if isinstance(events, list) else str(events)
    form = d.text_of("format")
    return (f"webhook endpoint {d.text_of('url')} added for {listed or 'no events'}"
            + (f" ({form} messages)" if form else ""))


TOURNAMENT_VERBS = {"tournament": "started", "continue_tournament": "continued", "stop_tournament": "stopped"}


def _tournament(d: Detail) -> str:
    name, budget = d.text_of("name"), d.fields.get("budget_usd")
    return ("tournament " + (f"“{shorten(name)}”" if name else d.text_of("tournament"))
            + f" {TOURNAMENT_VERBS[d.row.action]}"
            + (f" with a total budget of ${float(budget):.2f}" if isinstance(budget, int | float) else ""))


def _debate(verb: str) -> Callable[[Detail], str]:
    return lambda d: f"{d.debate} {verb}"


# One sentence per recorded action (the ok outcome; refusals and failures say what was tried, below).
SENTENCES: dict[str, Callable[[Detail], str]] = {
    "start": _debate("started"),
    "pause": _debate("paused"),
    "resume": _debate("resumed"),
    "stop": _stop,
    "retry": _debate("retried"),
    "delete": _debate("deleted"),
    "acknowledge_warning": lambda d: f"cost warning of {d.debate} acknowledged",
    "answer_clarification": lambda d: f"clarification questions of {d.debate} answered",
    "send_turn": _send_turn,
    "draft_turn": lambda d: f"a turn drafted with {d.text_of('model') or 'a model'} in {d.debate}",
    "rematch": _rematch,
    "tournament": _tournament,
    "continue_tournament": _tournament,
    "stop_tournament": _tournament,
    "share": _share,
    "revoke_share": lambda d: f"share link {d.text_of('link')} of {d.debate} revoked",
    "user_add": lambda d: f"user {d.user} added as {d.text_of('role')}",
    "user_created": lambda d: (f"account {d.row.actor} created at its first sign-in through the "
                               f"{d.text_of('via') or 'proxy'} header, as {d.text_of('role')}"),
    "user_set_role": _set_role,
    "user_disable": lambda d: f"account {d.user} disabled: they can no longer sign in",
    "user_enable": lambda d: f"account {d.user} enabled",
    "user_passwd": lambda d: f"new password set for {d.user}",
    "sign_in": _sign_in,
    "sign_out": lambda d: "signed out",
    "vote": _vote,
    "judge": lambda d: f"verdict given on {d.debate}: {d.text_of('winner') or 'no winner'}",
    "manage_vote": _manage_vote,
    "comment_delete": _comment_delete,
    "endpoint_add": _endpoint,
    "endpoint_remove": _endpoint,
    "server_settings": _defaults,
    "token_create": _token,
    "token_revoke": _token,
    "webhook_add": _webhook_add,
    "webhook_remove": lambda d: f"webhook endpoint {d.text_of('url') or d.text_of('endpoint')} removed",
    "webhook_redeliver": lambda d: (f"webhook delivery {d.text_of('delivery')} ({d.text_of('event')}) "
                                    "queued to be sent again"),
}
# Sentences that say themselves whether the action was refused (the others are for what was done).
OUTCOME_AWARE = {"sign_in"}
# Saved items of the library (`profile_saved`, `template_deleted` …): the kind is in the action's name.
LIBRARY = re.compile(r"^(?P<kind>[a-z]+)_(?P<verb>saved|renamed|deleted)$")
# What the gate writes when a role may not do something: "role viewer".
ROLE_REFUSAL = re.compile(r"^role (?P<role>[a-z]+)$")


def _library(kind: str, verb: str) -> Callable[[Detail], str]:
    return lambda d: f"{kind} “{shorten(d.text_of('name'))}” {verb}" if d.fields.get("name") else f"a {kind} {verb}"


def _attempt(row: AuditRow, d: Detail) -> str:
    """What was tried, for a refusal or failure: the action in words and the debate it was on."""
    tried = words(row.action)
    return f"{tried} of {d.debate}" if row.debate_id else tried


def describe(row: AuditRow, topic: str | None = None) -> str:
    """The row as one sentence; `topic`: the topic of the debate it names, where known."""
    d = Detail(row, topic)
    found = SENTENCES.get(row.action)
    library = LIBRARY.match(row.action)
    if found is None and library is not None:
        found = _library(library["kind"], library["verb"])
    if d.text and row.outcome != "ok":  # a refusal or failure, with its reason in words
        reason = d.text
        role = ROLE_REFUSAL.match(reason)
        if role:
            reason = f"the role {role['role']} may not do this"
        verb = "refused" if row.outcome == "refused" else "failed"
        return _capital(f"{_attempt(row, d)} {verb}: {shorten(reason, 300)}")
    if found is not None and (row.outcome == "ok" or row.action in OUTCOME_AWARE):
        return _capital(found(d) + (f": {shorten(d.text, 300)}" if d.text else ""))
    # No sentence for this (a new action, or a refusal with structured detail): still words, never JSON.
    listed = pairs(d.fields) or shorten(d.text, 300)
    verb = "" if row.outcome == "ok" else f" {row.outcome}"
    return _capital(_attempt(row, d) + verb + (f": {listed}" if listed else ""))


def _capital(text: str) -> str:
    """The sentence tidied (a field an older row lacks leaves no double space or empty brackets behind)
    and capitalised."""
    text = " ".join(text.replace(" ()", "").split()).replace(" ,", ",").removesuffix(" as")
    return text[:1].upper() + text[1:]
