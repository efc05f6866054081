"""What one dashboard row says, before any widget: when the debate started (relative, and exact in the
viewer's time zone), who debates with which model, its tags, and its outcome column.

The outcome of an ended (or failed) debate is not in the listing row: it is folded from the debate's
log once (`outcome_of`, as on the debate page) and cached by the row's `updated_at` (`OUTCOMES`), so a
refresh re-reads no log that has not changed. A running debate's column is where it is, from the row.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from nicegui import Client

from webapp.engine.engine import Engine
from webapp.engine.formats import FORMATS
from webapp.engine.public import TERMINAL_STATES, DebateState, State
from webapp.models import utcnow
from webapp.store import DebateRow, StoreError
from webapp.ui.components.badges import model_beside, safe_color
from webapp.ui.components.failure import explain_error, explain_stop
from webapp.ui.components.outcome import HEADLINE_CHARS, ICONS, _clip, outcome_of
from webapp.wording import counted

ZONE_JS = "Intl.DateTimeFormat().resolvedOptions().timeZone"
# The outcome column is one truncated line (the whole text is its title, on hover): room for a winner
# and who stopped the debate where, or for an error's whole explanation.
ROW_CHARS = 220


def relative_time(then: datetime, now: datetime | None = None) -> str:
    """'just now', '3 min ago', '2 h ago', 'yesterday', '5 days ago', then the date."""
    now = now or utcnow()
    seconds = (now - then).total_seconds()
    if seconds < 45:
        return "just now"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{max(1, minutes)} min ago"
    hours = int(seconds // 3600)
    if hours < 24:
        return f"{hours} h ago"
    days = int(seconds // 86400)
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"{days} days ago"
    return f"{then.day} {then:%b}" + (f" {then.year}" if then.year != now.year else "")


def exact_time(at: datetime, zone: str | None = None) -> str:
    """The exact time of `at` (a UTC time) in the viewer's time zone `zone` (an IANA name the browser
    reported), or in UTC while the zone is not known or not a zone this server knows."""
    tz = _zone(zone)
    if tz is None:
        return at.strftime("%Y-%m-%d %H:%M:%S UTC")
    local = at.replace(tzinfo=at.tzinfo or UTC).astimezone(tz)
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()} ({zone})"


def _zone(name: str | None) -> ZoneInfo | None:
    if not name or name == "UTC":
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):  # a browser may report a zone this machine lacks
        return None


async def viewer_zone(client: Client) -> str | None:
    """The browser's time zone (asked once per tab, after it connects); None when it does not say."""
    try:
        zone = await client.run_javascript(ZONE_JS, timeout=3)
    except TimeoutError:
        return None
    return zone if isinstance(zone, str) and _zone(zone) is not None else None


def models_line(row: DebateRow) -> str:
    """Who debates with which model: 'Ada (openai:gpt-4o) vs Bo (demo:demo)'; a participant named after its
    model says it once ('demo:gamma', not 'demo:gamma (demo:gamma)')."""
    def who(p: dict[str, Any]) -> str:
        name = str(p.get("name") or p.get("id") or "?")
        model = model_beside(name, str(p.get("provider") or ""), str(p.get("model") or ""))
        return f"{name} ({model})" if model else name

    return " vs ".join(who(p) for p in row.participants)


def tags_line(row: DebateRow) -> str:
    """The debate's topic tags as the row shows them: '#ethics #ai-policy' (the search matches them too)."""
    return " ".join(f"#{tag}" for tag in row.tags)


def _progress(row: DebateRow) -> str:
    fmt = FORMATS.get(row.format)
    parts: list[str] = []
    if row.phase and fmt is not None:
        titles = {p.id: p.title for p in fmt.phases}
        parts.append(titles.get(row.phase, row.phase))
    if fmt is not None and fmt.has_rounds and row.total_rounds:
        parts.append(f"Round {max(row.round, 1)} of {row.total_rounds}")
    parts.append(counted(row.turn_count, "turn"))
    return " · ".join(parts)


@dataclass(frozen=True)
class RowOutcome:
    """What the outcome column says about one debate."""

    kind: str  # an `Outcome.kind`, or error | interrupted | progress | waiting
    text: str
    winner_color: str | None = None


def _needs_log(row: DebateRow) -> bool:
    """Whether the outcome column needs the debate's log (the listing row does not say enough)."""
    return row.status in {s.value for s in TERMINAL_STATES} or row.status == State.ERROR.value or (
        row.status == State.PAUSED.value and row.interrupted)


# The outcome column of a debate whose status says it all (an ended one whose log could not be read,
# or one waiting to start or for a person): status -> (kind, text).
SAID_BY_STATUS: dict[str, tuple[str, str]] = {
    State.COMPLETED.value: ("ended", "Completed"),
    State.STOPPED.value: ("ended", "Stopped"),
    State.IDLE.value: ("waiting", "Not started yet"),
    State.AWAITING_ACK.value: ("waiting", "Waiting: the spending warning needs an answer"),
    State.AWAITING_CLARIFICATION.value: ("waiting", "Waiting for answers to the clarification questions"),
    State.AWAITING_TURN.value: ("waiting", "Waiting for a person's turn (a human seat)"),
}


def row_outcome(row: DebateRow, state: DebateState | None) -> RowOutcome:
    """The outcome column: the result of an ended debate (`outcome_of`, as the debate page's card says
    it), why a failed, stopped or interrupted one is where it is (in the words of the debate page's
    error panel and stopped note, `failure`), else where a running one is."""
    status = row.status
    if state is not None and status in {s.value for s in TERMINAL_STATES}:
        outcome = outcome_of(state)
        if outcome is not None:
            text = outcome.headline
            stopped = explain_stop(state) if state.status is State.STOPPED else None
            if stopped is not None:
                stopped = stopped.rstrip(".")
                if outcome.kind == "ended":  # no verdict: who stopped it, where, and after which error
                    text = stopped + " · no verdict"
                    if any(t.event == "STOP" and t.from_ is State.ERROR for t in state.transitions):
                        text += f" · after the error: {explain_error(state, None, 0).headline.rstrip('.')}"
                else:
                    text += f" · {stopped}"
            elif outcome.note and outcome.note.startswith("stopped"):
                text += f" · {outcome.note[0].upper()}{outcome.note[1:]}"
            color = None
            if outcome.winner is not None:
                color = next((safe_color(p.color) for p in state.config.participants if p.id == outcome.winner), None)
            return RowOutcome(outcome.kind, _clip(text, ROW_CHARS), color)
    if status == State.ERROR.value:
        if state is not None:
            failure = explain_error(state, state.error, 0)
            return RowOutcome("error", _clip(f"Error: {failure.headline.rstrip('.')}", ROW_CHARS))
        return RowOutcome("error", "Error")
    if status == State.PAUSED.value and row.interrupted:
        why = state.interruption if state is not None else None
        return RowOutcome("interrupted", _clip(f"Interrupted: {why}" if why else "Interrupted", HEADLINE_CHARS))
    if status in SAID_BY_STATUS:
        return RowOutcome(*SAID_BY_STATUS[status])
    prefix = "Paused · " if status == State.PAUSED.value else ""
    return RowOutcome("progress", prefix + _progress(row))


OUTCOME_ICONS = {**ICONS, "error": "error", "interrupted": "restart_alt", "progress": "play_circle",
                 "waiting": "hourglass_empty"}
NEGATIVE = {"error", "unavailable"}


class OutcomeCache:
    """States folded from the log of debates whose row has not changed since (by `updated_at`)."""

    def __init__(self, size: int = 2000) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[datetime, RowOutcome]] = OrderedDict()

    def known(self, row: DebateRow) -> RowOutcome | None:
        """The outcome without reading the log: what the row says, or what is cached (None: unknown)."""
        if not _needs_log(row):
            return row_outcome(row, None)
        cached = self._items.get(row.id)
        if cached is not None and cached[0] == row.updated_at:
            self._items.move_to_end(row.id)
            return cached[1]
        return None

    async def outcome(self, engine: Engine, row: DebateRow) -> RowOutcome:
        known = self.known(row)
        if known is not None:
            return known
        session = engine.sessions.get(row.id)
        state: DebateState | None
        if session is not None:
            state = session.state
        else:
            try:
                state = DebateState.from_events(await engine.events(row.id))
            except (ValueError, StoreError):  # deleted meanwhile, or storage trouble: say what the row says
                return row_outcome(row, None)
        result = row_outcome(row, state)
        self._items[row.id] = (row.updated_at, result)
        self._items.move_to_end(row.id)
        while len(self._items) > self.size:
            self._items.popitem(last=False)
        return result


OUTCOMES = OutcomeCache()
