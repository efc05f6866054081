"""Dashboard `/`: every debate, newest first, with search, status filter, pagination and live updates.

Paging happens in SQL (`engine.list_debates`), so a thousand stored debates cost one small query.
The page refreshes when the hub signals that a debate changed (throttled across all debates).
"""

from __future__ import annotations

import asyncio
import math

from fastapi import Request
from fastapi.responses import Response
from nicegui import ui

from webapp.access.gate import Gate
from webapp.access.roles import Action, Principal
from webapp.engine.formats import FORMATS
from webapp.engine.schedule import ConfigError
from webapp.store import DebateRow, StoreError
from webapp.ui import runtime
from webapp.ui.auth import admit
from webapp.ui.auth import gate as auth_gate
from webapp.ui.components.badges import STATUS_FILTERS, STATUS_STYLE, money, participant_chip, status_badge
from webapp.ui.components.presets import quick_demo_config
from webapp.ui.layout import frame

PAGE_SIZE = 20


def _progress(row: DebateRow) -> str:
    fmt = FORMATS.get(row.format)
    parts: list[str] = []
    if row.phase and fmt is not None:
        titles = {p.id: p.title for p in fmt.phases}
        parts.append(titles.get(row.phase, row.phase))
    if fmt is not None and fmt.has_rounds and row.total_rounds:
        parts.append(f"Round {max(row.round, 1)} of {row.total_rounds}")
    parts.append(f"{row.turn_count} turn{'s' if row.turn_count != 1 else ''}")
    return " · ".join(parts)


class Dashboard:
    """The state of one dashboard tab: filters, current page, the rendered list."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.query = ""
        self.statuses: list[str] = []
        self.page = 1
        self.container = ui.column().classes("w-full gap-2")
        self._lock = asyncio.Lock()

    async def load(self) -> None:
        async with self._lock:  # a burst of signals must not interleave two renders
            engine = await runtime.current().engine()
            states = [s for key in self.statuses for s in STATUS_FILTERS.get(key, [])]
            rows, total = await engine.list_debates(self.query, states or None, (self.page - 1) * PAGE_SIZE,
                                                    PAGE_SIZE)
            if total and not rows and self.page > 1:  # the page emptied (filters changed): go to the last
                self.page = max(1, math.ceil(total / PAGE_SIZE))
                rows, total = await engine.list_debates(self.query, states or None,
                                                        (self.page - 1) * PAGE_SIZE, PAGE_SIZE)
            if self.container.is_deleted:
                return
            self.container.clear()
            with self.container:
                self._render(rows, total)

    def _render(self, rows: list[DebateRow], total: int) -> None:
        filtered = bool(self.query.strip() or self.statuses)
        if not rows:
            if filtered:
                with ui.card().classes("w-full items-center py-10"):
                    ui.icon("search_off").classes("text-5xl text-grey-6")
                    ui.label("No debates match these filters.").classes("text-lg")
            else:
                _empty_state(self.gate)
            return
        ui.label(f"{total} debate{'s' if total != 1 else ''}").classes("text-sm text-grey-7").mark("debate-count")
        for row in rows:
            _row_card(row)
        pages = max(1, math.ceil(total / PAGE_SIZE))
        if pages > 1:
            with ui.row().classes("w-full justify-center"):
                ui.pagination(1, pages, direction_links=True, value=self.page,
                              on_change=lambda e: self._go(e.value)).props("max-pages=7 boundary-numbers")

    async def _go(self, page: int) -> None:
        if page != self.page:
            self.page = page
            await self.load()


def _row_card(row: DebateRow) -> None:
    link = ui.link(target=f"/debate/{row.id}").classes("w-full no-underline text-inherit")
    with link:
        card = ui.card().classes("w-full p-0 rostrum-row").mark(f"debate-{row.id}")
    with card, ui.row().classes("w-full items-start justify-between gap-3 p-4 no-wrap"):
        with ui.column().classes("gap-1 min-w-0 grow"):
            ui.label(row.topic).classes("text-base font-medium rostrum-topic line-clamp-2")
            with ui.row().classes("items-center gap-3 text-grey-7 text-sm"):
                fmt = FORMATS.get(row.format)
                ui.label(fmt.title if fmt else row.format)
                ui.label(_progress(row))
                ui.label(row.created_at.strftime("%Y-%m-%d %H:%M UTC"))
            with ui.row().classes("items-center gap-3"):
                for participant in row.participants:
                    participant_chip(participant)
        with ui.column().classes("items-end gap-2 shrink-0"):
            status_badge(row.status, row.interrupted)
            cost = money(row.cost_usd) + (" + unpriced" if row.unpriced else "")
            ui.label(cost).classes("text-sm font-mono text-grey-8").mark("cost")


def _empty_state(gate: Gate) -> None:
    with ui.card().classes("w-full items-center py-12 gap-3").mark("empty-state"):
        ui.icon("forum").classes("text-6xl text-primary")
        ui.label("No debates yet").classes("text-2xl font-semibold")
        if not gate.principal.can(Action.CREATE):
            ui.label("Debates your team starts will show here, live.").classes("text-grey-7")
            return
        ui.label("Start a demo debate — it runs offline, no API key needed — or set one up yourself.") \
            .classes("text-grey-7")
        with ui.row().classes("gap-2"):
            ui.button("Start a demo debate", icon="play_arrow", on_click=lambda: start_demo(gate)).mark("start-demo")
            ui.button("New debate", icon="add", on_click=lambda: ui.navigate.to("/new")).props("outline")


async def start_demo(gate: Gate) -> None:
    try:
        session = await gate.start(quick_demo_config())
    except (PermissionError, ConfigError) as exc:
        ui.notify(f"Not done: {exc}", type="negative", multi_line=True)
        return
    except StoreError as exc:
        ui.notify(f"Not started: {exc} ({exc.advice})", type="negative", multi_line=True)
        return
    ui.navigate.to(f"/debate/{session.id}")


async def page(request: Request) -> Response | None:
    rt = runtime.current()
    hub = await rt.hub()
    admitted = await admit(request, Action.LIST, "list debates")
    if not isinstance(admitted, Principal):
        return admitted
    gate = auth_gate(admitted)
    with frame("/", admitted):
        with ui.row().classes("w-full items-center justify-between"):
            ui.label("Debates").classes("text-2xl font-semibold")
            if admitted.can(Action.CREATE):
                ui.button("New debate", icon="add", on_click=lambda: ui.navigate.to("/new")).props("no-caps") \
                    .mark("new-debate")
        with ui.row().classes("w-full items-center gap-3"):
            search = ui.input(placeholder="Search topics…").props("clearable outlined dense debounce=300") \
                .classes("grow min-w-[200px]").mark("search")
            with search.add_slot("prepend"):
                ui.icon("search")
            status = ui.select({k: STATUS_STYLE[k][0] for k in STATUS_FILTERS}, multiple=True, label="Status",
                               value=[]).props("outlined dense use-chips clearable").classes("min-w-[240px]") \
                .mark("status-filter")
        dashboard = Dashboard(gate)

        async def on_filters() -> None:
            dashboard.query = search.value or ""
            dashboard.statuses = list(status.value or [])
            dashboard.page = 1
            await dashboard.load()

        search.on_value_change(on_filters)
        status.on_value_change(on_filters)

        hub.dashboard.subscribe(dashboard.load)  # which debates changed does not matter: reload the page
        await dashboard.load()
    return None
