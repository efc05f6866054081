"""Dashboard `/`: every debate as one compact row — status, topic, models, tags, outcome, cost, when — with
search (topic or tag), status filter, sort, pagination, live updates and per-row Clone, Re-run and Delete.

Paging and sorting happen in SQL (`engine.list_debates`), so a thousand stored debates cost one small
query. The outcome of an ended (or failed) debate is not in the listing row: it is folded from the
debate's log once (`outcome_of`, as on the debate page) and cached by the row's `updated_at`, so a
refresh re-reads no log that has not changed. The page refreshes when the hub signals that a debate
changed (throttled across all debates), and once a minute for the relative times.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import Request
from fastapi.responses import Response
from nicegui import Client, background_tasks, ui

from webapp.access.gate import Gate
from webapp.access.roles import Action, Principal
from webapp.engine.api import CreatedPayload
from webapp.engine.engine import Engine
from webapp.engine.formats import FORMATS
from webapp.engine.machine import TERMINAL_STATES, State
from webapp.engine.schedule import ConfigError
from webapp.engine.state import DebateState
from webapp.models import DebateConfig, utcnow
from webapp.store import DebateRow, StoreError
from webapp.tournament.store import TournamentStore
from webapp.ui import runtime
from webapp.ui.auth import admit
from webapp.ui.auth import gate as auth_gate
from webapp.ui.components.badges import (
    STATUS_FILTERS,
    STATUS_STYLE,
    model_beside,
    money,
    safe_color,
    status_badge,
)
from webapp.ui.components.deferred import after_connect
from webapp.ui.components.failure import explain_error, explain_stop
from webapp.ui.components.outcome import HEADLINE_CHARS, ICONS, _clip, outcome_of
from webapp.ui.components.presets import quick_demo_config
from webapp.ui.layout import frame, heading, title_row
from webapp.wording import counted

PAGE_SIZE = 20
E = TypeVar("E", bound=ui.element)
REFRESH_SECONDS = 60  # relative times ("3 min ago") move on even when no debate changes
SORTS = {"newest": "Newest first", "oldest": "Oldest first", "cost": "Highest cost", "status": "Status"}
# Status, debate, outcome, cost, when, actions; one column under `md`.
GRID = ("grid grid-cols-1 md:grid-cols-[8.5rem_minmax(0,5fr)_minmax(0,4fr)_5.5rem_5.5rem_auto] "
        "items-center gap-x-3 gap-y-1")
MUTED = "text-slate-600 dark:text-slate-400"
ZONE_JS = "Intl.DateTimeFormat().resolvedOptions().timeZone"
# The outcome column is one truncated line (the whole text is its title, on hover): room for a winner
# and who stopped the debate where, or for an error's whole explanation.
ROW_CHARS = 220
BUTTON = "flat dense no-caps no-wrap padding='4px 8px'"


# --- pure parts --------------------------------------------------------------------------------


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
    if status == State.COMPLETED.value:
        return RowOutcome("ended", "Completed")
    if status == State.STOPPED.value:
        return RowOutcome("ended", "Stopped")
    if status == State.IDLE.value:
        return RowOutcome("waiting", "Not started yet")
    if status == State.AWAITING_ACK.value:
        return RowOutcome("waiting", "Waiting: the spending warning needs an answer")
    if status == State.AWAITING_CLARIFICATION.value:
        return RowOutcome("waiting", "Waiting for answers to the clarification questions")
    if status == State.AWAITING_TURN.value:
        return RowOutcome("waiting", "Waiting for a person's turn (a human seat)")
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


# --- the page ----------------------------------------------------------------------------------


class Dashboard:
    """The state of one dashboard tab: filters, sort, current page, the rendered list."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.query = ""
        self.statuses: list[str] = []
        self.model: str | None = None  # "provider:model": only debates where a participant uses it
        self.tag: str | None = None
        self.order = "newest"
        self.page = 1
        self.container = ui.column().classes("w-full gap-2")
        self.dialogs = ui.element("div")  # outside the container: a reload must not delete an open dialog
        self._delete_dialog: ui.dialog | None = None
        self._delete_text: ui.label | None = None
        self._delete_id: str | None = None
        self._lock = asyncio.Lock()
        self.zone: str | None = None  # the viewer's time zone, once the browser has said it

    async def load(self, quick: bool = False) -> bool:
        """Render the current page of rows. `quick` reads no debate's log: rows whose outcome is not
        known yet say what their listing says; returns whether some were left so (the first render
        of a tab, so the page answers at once; the full outcomes follow when its socket connects)."""
        async with self._lock:  # a burst of signals must not interleave two renders
            engine = await runtime.current().engine()
            states = [s for key in self.statuses for s in STATUS_FILTERS.get(key, [])]
            rows, total = await engine.list_debates(self.query, states or None, (self.page - 1) * PAGE_SIZE,
                                                    PAGE_SIZE, self.order, model=self.model, tag=self.tag)
            if total and not rows and self.page > 1:  # the page emptied (filters changed): go to the last
                self.page = max(1, math.ceil(total / PAGE_SIZE))
                rows, total = await engine.list_debates(self.query, states or None,
                                                        (self.page - 1) * PAGE_SIZE, PAGE_SIZE, self.order,
                                                        model=self.model, tag=self.tag)
            names = await tournament_names(engine, rows)
            pending = False
            outcomes: list[RowOutcome] = []
            for row in rows:
                known = OUTCOMES.known(row)
                if known is None and quick:
                    pending = True
                    known = row_outcome(row, None)
                outcomes.append(known if known is not None else await OUTCOMES.outcome(engine, row))
            if self.container.is_deleted:
                return False
            self.container.clear()
            with self.container:
                self._render(rows, outcomes, total, names)
            return pending

    def _render(self, rows: list[DebateRow], outcomes: list[RowOutcome], total: int,
                names: dict[str, str] | None = None) -> None:
        filtered = bool(self.query.strip() or self.statuses or self.model or self.tag)
        if not rows:
            if filtered:
                with ui.card().classes("w-full items-center py-10"):
                    ui.icon("search_off").classes("text-5xl text-grey-6").props('aria-hidden="true"')
                    ui.label("No debates match these filters.").classes("text-lg")
            else:
                _empty_state(self.gate)
            return
        ui.label(counted(total, "debate")).classes(f"text-sm {MUTED}").mark("debate-count")
        now = utcnow()
        with ui.card().classes("w-full p-0 gap-0").props("flat bordered") \
                .mark("debate-list", f"sorted-{self.order}"):
            with ui.element("div").classes(f"{GRID} hidden md:grid w-full px-3 py-1 text-xs font-medium "
                                           f"uppercase tracking-wide {MUTED} border-b border-slate-500/20"):
                for title in ("Status", "Debate", "Outcome", "Cost", "Started", "Actions"):
                    ui.label(title)
            for tournament, members in grouped(list(zip(rows, outcomes, strict=True))):
                if tournament is None:
                    self._row(*members[0], now)
                    continue
                # A tournament's debates under its name, in one block (a round robin is many alike rows).
                with ui.element("div").classes("w-full rostrum-tournament-group").mark("tournament-group"):
                    with ui.row().classes(f"w-full items-center gap-x-2 gap-y-0 px-3 py-1 text-sm {MUTED} "
                                          "border-b border-slate-500/20"):
                        ui.icon("emoji_events").classes("text-base shrink-0").props('aria-hidden="true"')
                        name = (names or {}).get(tournament) or f"tournament {tournament}"
                        link = ui.link(f"Tournament: {name}", f"/tournaments/{tournament}") \
                            .classes("font-medium min-w-0 rostrum-topic").mark(f"tournament-group-{tournament}")
                        _titled(link, name)
                        ui.label(f"· {counted(len(members), 'debate')} on this page").classes("shrink-0")
                    with ui.element("div").classes("w-full rostrum-tournament-rows"):
                        for row, outcome in members:
                            self._row(row, outcome, now)
        pages = max(1, math.ceil(total / PAGE_SIZE))
        if pages > 1:
            with ui.row().classes("w-full justify-center"):
                ui.pagination(1, pages, direction_links=True, value=self.page,
                              on_change=lambda e: self._go(e.value)).props("max-pages=7 boundary-numbers")

    def _row(self, row: DebateRow, outcome: RowOutcome, now: datetime) -> None:
        principal = self.gate.principal
        with ui.element("div").classes(f"{GRID} w-full px-3 py-1.5 border-b border-slate-500/20 last:border-b-0 "
                                       "hover:bg-slate-500/5 rostrum-row").mark(f"debate-{row.id}"):
            with ui.element("div"):
                status_badge(row.status, row.interrupted)
            with ui.column().classes("gap-0 min-w-0"):
                topic = ui.link(row.topic, f"/debate/{row.id}").classes(
                    "block w-full text-sm font-medium truncate rostrum-topic text-inherit no-underline hover:underline")
                _titled(topic, row.topic).mark(f"topic-{row.id}")
                models = models_line(row)
                _titled(ui.label(models).classes(f"w-full text-xs truncate {MUTED}"), models).mark(f"models-{row.id}")
                if row.tags:
                    tags = tags_line(row)
                    _titled(ui.label(tags).classes(f"w-full text-xs truncate {MUTED}"), tags).mark(f"tags-{row.id}")
            with ui.row().classes("items-center gap-1 no-wrap min-w-0"):
                negative = outcome.kind in NEGATIVE
                ui.icon(OUTCOME_ICONS.get(outcome.kind, "flag")).classes(
                    f"text-base shrink-0 {'text-negative' if negative else MUTED}").props('aria-hidden="true"')
                if outcome.winner_color:
                    ui.element("span").classes("rostrum-dot shrink-0").style(f"background:{outcome.winner_color}") \
                        .props('aria-hidden="true"')
                _titled(ui.label(outcome.text).classes(
                    f"text-sm truncate {'text-negative' if negative else ''}"
                    f"{' font-medium' if outcome.kind in ('winner', 'tie', 'split') else ''}"),
                    outcome.text).mark(f"outcome-{row.id}")
            cost = money(row.cost_usd) + (" + unpriced" if row.unpriced else "")
            ui.label(cost).classes("text-sm font-mono tabular-nums").mark("cost")
            _titled(ui.label(relative_time(row.created_at, now)).classes(f"text-sm {MUTED}"),
                    exact_time(row.created_at, self.zone)).mark(f"time-{row.id}")
            with ui.row().classes("items-center gap-0 no-wrap"):
                buttons: list[ui.button] = []
                if principal.can(Action.CLONE, row.id) and principal.can(Action.CREATE):
                    clone = ui.button("Clone", icon="content_copy").props(BUTTON).mark(f"clone-{row.id}")
                    clone.props["href"] = f"/new?from={row.id}"  # a real link: the form reads `from`
                    clone.props["title"] = "Open the new-debate form filled in from this debate"
                    buttons.append(clone)
                if principal.can(Action.CREATE):
                    buttons.append(ui.button("Re-run", icon="replay", on_click=lambda r=row: rerun(self.gate, r.id))
                                   .props(BUTTON).mark(f"rerun-{row.id}"))
                    buttons[-1].props["title"] = "Start this debate again, with the same settings"
                if principal.can(Action.DELETE, row.id):
                    buttons.append(ui.button("Delete", icon="delete", on_click=lambda r=row: self.confirm_delete(r))
                                   .props(f"{BUTTON} color=negative").mark(f"delete-{row.id}"))
                for button in buttons:  # the visible label first, then which debate (one of many alike)
                    button.props["aria-label"] = f"{button.text}: {row.topic[:120]}"

    async def _go(self, page: int) -> None:
        if page != self.page:
            self.page = page
            await self.load()

    # --- delete ---------------------------------------------------------------------------------

    def confirm_delete(self, row: DebateRow) -> None:
        if self._delete_dialog is None:
            with self.dialogs, ui.dialog() as dialog, ui.card().mark("delete-dialog"):
                ui.label("Delete this debate?").classes("text-lg font-semibold")
                self._delete_text = ui.label().classes("text-sm font-medium rostrum-topic")
                ui.label("Its transcript, verdict, costs and share links are removed for good. "
                         "This cannot be undone.").classes("text-sm")
                with ui.row().classes("w-full justify-end gap-2"):
                    ui.button("Cancel", on_click=dialog.close).props("flat no-caps").mark("delete-cancel")
                    ui.button("Delete for good", on_click=self.delete) \
                        .props("unelevated color=negative no-caps").mark("delete-confirm")
            self._delete_dialog = dialog
        assert self._delete_text is not None
        self._delete_id = row.id
        self._delete_text.text = row.topic
        self._delete_dialog.open()

    async def delete(self) -> None:
        debate_id, self._delete_id = self._delete_id, None
        if self._delete_dialog is not None:
            self._delete_dialog.close()
        if debate_id is None:
            return
        try:
            await self.gate.delete(debate_id)
        except (PermissionError, KeyError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        except StoreError as exc:
            ui.notify(f"Not deleted: {exc} ({exc.advice})", type="negative", multi_line=True)
            return
        ui.notify("Debate deleted", type="positive")
        await self.load()


def grouped(items: list[tuple[DebateRow, RowOutcome]]) -> list[tuple[str | None, list[tuple[DebateRow, RowOutcome]]]]:
    """The page's rows in blocks: a debate of its own, or every debate of one tournament on this page
    (where its first one is), in the page's order within."""
    blocks: list[tuple[str | None, list[tuple[DebateRow, RowOutcome]]]] = []
    groups: dict[str, list[tuple[DebateRow, RowOutcome]]] = {}
    for item in items:
        tournament = item[0].tournament
        if tournament is None:
            blocks.append((None, [item]))
        elif tournament in groups:
            groups[tournament].append(item)
        else:
            groups[tournament] = [item]
            blocks.append((tournament, groups[tournament]))
    return blocks


async def tournament_names(engine: Engine, rows: list[DebateRow]) -> dict[str, str]:
    """The names of the tournaments the rows belong to (one read each; a page holds few)."""
    store = TournamentStore(engine.store)
    names: dict[str, str] = {}
    for tournament in dict.fromkeys(r.tournament for r in rows if r.tournament):
        try:
            found = await store.get(tournament)
        except StoreError:
            continue
        if found is not None:
            names[tournament] = found.tournament.name
    return names


def _titled(element: E, text: str) -> E:
    """`element` with `text` as its title attribute (shown on hover; set as a value, never parsed)."""
    element.props["title"] = text
    return element


def _empty_state(gate: Gate) -> None:
    with ui.card().classes("w-full items-center py-12 gap-3").mark("empty-state"):
        ui.icon("forum").classes("text-6xl text-primary").props('aria-hidden="true"')
        heading("No debates yet", 2)
        if not gate.principal.can(Action.CREATE):
            ui.label("Debates your team starts will show here, live.").classes(MUTED)
            return
        ui.label("Start a demo debate — it runs offline, no API key needed — or set one up yourself with "
                 "New debate.").classes(MUTED)
        ui.button("Start a demo debate", icon="play_arrow", on_click=lambda: start_demo(gate)) \
            .props("unelevated no-caps").mark("start-demo")


async def _start(gate: Gate, config: DebateConfig) -> None:
    try:
        session = await gate.start(config)
    except (PermissionError, ConfigError) as exc:
        ui.notify(f"Not done: {exc}", type="negative", multi_line=True)
        return
    except StoreError as exc:
        ui.notify(f"Not started: {exc} ({exc.advice})", type="negative", multi_line=True)
        return
    ui.navigate.to(f"/debate/{session.id}")


async def start_demo(gate: Gate) -> None:
    await _start(gate, quick_demo_config())


async def rerun(gate: Gate, debate_id: str) -> None:
    """Start a debate with the same config as `debate_id` right away (not as part of its series)."""
    events = await gate.engine.events(debate_id)
    created = events[0].payload if events else None
    if not isinstance(created, CreatedPayload):
        ui.notify("Not done: that debate no longer exists", type="negative")
        return
    await _start(gate, created.config.model_copy(update={"series": None}))


async def _filter_options() -> tuple[list[str], list[str]]:
    """The models and tags the filters offer; none when the store cannot say (the list still shows)."""
    try:
        return await (await runtime.current().engine()).store.models_and_tags()
    except StoreError:
        return [], []


async def page(request: Request) -> Response | None:
    rt = runtime.current()
    hub = await rt.hub()
    admitted = await admit(request, Action.LIST, "list debates")
    if not isinstance(admitted, Principal):
        return admitted
    gate = auth_gate(admitted)
    with frame("/", admitted):
        title_row("Debates", ("New debate", "/new", "new-debate") if admitted.can(Action.CREATE) else None)
        with ui.row().classes("w-full items-center gap-3"):
            search = ui.input(placeholder="Search topics…").props("clearable outlined dense debounce=300") \
                .classes("grow min-w-[200px]").mark("search")
            with search.add_slot("prepend"):
                ui.icon("search").props('aria-hidden="true"')
            status = ui.select({k: STATUS_STYLE[k][0] for k in STATUS_FILTERS}, multiple=True, label="Status",
                               value=[]).props("outlined dense use-chips clearable").classes("min-w-[240px]") \
                .mark("status-filter")
            sort = ui.select(SORTS, label="Sort by", value="newest").props("outlined dense") \
                .classes("min-w-[160px]").mark("sort")
            models, tags = await _filter_options()
            # Searchable (type to narrow the list); the options are set as values, never parsed as HTML.
            model = ui.select(models, label="Model", value=None, clearable=True, with_input=True) \
                .props("outlined dense").classes("min-w-[180px]").mark("model-filter")
            tag = ui.select(tags, label="Tag", value=None, clearable=True, with_input=True) \
                .props("outlined dense").classes("min-w-[140px]").mark("tag-filter")
        dashboard = Dashboard(gate)

        async def on_filters() -> None:
            dashboard.query = search.value or ""
            dashboard.statuses = list(status.value or [])
            dashboard.order = sort.value if sort.value in SORTS else "newest"
            dashboard.model = model.value or None
            dashboard.tag = tag.value or None
            dashboard.page = 1
            await dashboard.load()

        search.on_value_change(on_filters)
        status.on_value_change(on_filters)
        sort.on_value_change(on_filters)
        model.on_value_change(on_filters)
        tag.on_value_change(on_filters)

        hub.dashboard.subscribe(dashboard.load)  # which debates changed does not matter: reload the page
        ui.timer(REFRESH_SECONDS, dashboard.load, immediate=False)
        pending = await dashboard.load(quick=True)
        client = ui.context.client

        async def connected() -> None:
            """The full outcomes (when the first render left some out), and the exact times on hover
            in the viewer's time zone."""
            if pending:
                await dashboard.load()
            dashboard.zone = await viewer_zone(client)
            if dashboard.zone is not None:
                await dashboard.load()

        after_connect(lambda: background_tasks.create(connected(), name="dashboard-outcomes"), "hidden")
    return None
