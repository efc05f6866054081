"""Tournaments: the list `/tournaments`, the form `/tournaments/new` and one tournament's page
`/tournaments/{id}` (progress, cost against budget, an ETA, the live debates, every debate, the
standings: wins, losses and ties per model, and the tournament's own leaderboard: Bradley-Terry
ratings with intervals and the head-to-head over its judged debates, as `/leaderboard` draws them).

The page reads everything from the store (`webapp.tournament.progress.progress`) and reads it again
every `REFRESH_S` seconds while open: a tournament's state is its debates' rows, which other
processes may write too. Commands go through the gate; text from people (names, topics, model ids)
is only ever shown as text.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import Response
from nicegui import ui

from webapp.access.gate import Gate
from webapp.access.roles import Action, Principal, actor_label
from webapp.results.leaderboard import Leaderboard, LeaderboardFilters, leaderboard
from webapp.tournament.progress import Progress, progress, standings
from webapp.tournament.store import TournamentRow, TournamentStore
from webapp.ui import runtime
from webapp.ui.auth import admit
from webapp.ui.auth import gate as auth_gate
from webapp.ui.components.badges import money, status_badge
from webapp.ui.form.tournament_form import TournamentForm
from webapp.ui.layout import frame, heading, title_row
from webapp.ui.pages.leaderboard import pair_lines, render_leaderboard
from webapp.wording import counted

REFRESH_S = 1.0
STATUS_TEXT = {"planned": "Planned", "running": "Playing", "stopped": "Stopped", "completed": "Completed"}
STATUS_COLOR = {"planned": "grey-7", "running": "primary", "stopped": "warning", "completed": "positive"}


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def tournament_badge(status: str) -> ui.badge:
    badge = ui.badge(STATUS_TEXT.get(status, status), color=STATUS_COLOR.get(status, "grey-7")) \
        .classes("px-2 py-1 text-xs").props("rounded")
    return badge.mark(f"tournament-status-{status}")


# --- the list --------------------------------------------------------------------------------------


async def list_page(request: Request) -> Response | None:
    engine = await runtime.current().engine()
    admitted = await admit(request, Action.LIST, "see tournaments")
    if not isinstance(admitted, Principal):
        return admitted
    store = TournamentStore(engine.store)
    rows = await store.all()
    with frame("/tournaments", admitted):
        title_row("Tournaments", ("New tournament", "/tournaments/new", "new-tournament")
                  if admitted.can(Action.CREATE) else None)
        if not rows:
            ui.label("No tournaments yet.").classes("text-grey-8").mark("no-tournaments")
            return None
        with ui.card().classes("w-full gap-1").mark("tournament-list"):
            for row in rows:
                state = await progress(store, row)
                with ui.row().classes("w-full items-center gap-3").mark("tournament-row"):
                    ui.link(row.tournament.name, f"/tournaments/{row.id}").mark(f"tournament-link-{row.id}")
                    tournament_badge(row.status)
                    ui.label(f"{state.done}/{state.total} debates · {money(state.spent)}").classes("text-sm")
                    by = row.tournament.created_by
                    ui.label(f"by {actor_label(by) if by else '–'}").classes("text-sm text-grey-7")
    return None


# --- the form (`ui.form.tournament_form`) -----------------------------------------------------


async def new_page(request: Request) -> Response | None:
    await runtime.current().engine()
    admitted = await admit(request, Action.CREATE, "start tournaments")
    if not isinstance(admitted, Principal):
        return admitted
    with frame("/tournaments", admitted):
        heading("New tournament")
        ui.label("Every pair of models debates every topic (twice with sides swapped); one judge or panel "
                 "rules on all of them. The budget, if given, is checked before each debate starts, against "
                 "an estimate of its cost; the tournament stops cleanly when the next debate would not fit, "
                 "and can be continued.").classes("text-sm text-grey-8")
        TournamentForm(auth_gate(admitted)).build()
    return None


# --- one tournament --------------------------------------------------------------------------------


class TournamentView:
    """One tournament's page body, rebuilt from the store on every refresh."""

    def __init__(self, tournament_id: str, principal: Principal, gate: Gate) -> None:
        self.tournament_id = tournament_id
        self.principal = principal
        self.gate = gate
        self.last: tuple[Any, ...] | None = None
        self.playing = False
        self.elsewhere = False  # another process (the CLI, another server) plays it
        self.new_budget: ui.number | None = None
        self.judged: frozenset[str] | None = None  # the debates the shown board was computed over
        self.shown_board: Leaderboard | None = None  # that board: the standings say its pairs in words

    async def load(self) -> Progress | None:
        engine = await runtime.current().engine()
        store = TournamentStore(engine.store)
        row = await store.get(self.tournament_id)
        return None if row is None else await progress(store, row, engine.settings)

    async def marker(self, state: Progress) -> tuple[Any, ...]:
        """What the page shows, in short: it is redrawn only when this changes."""
        self.playing = (await runtime.current().tournaments()).plays(state.row)  # here, or on the workers
        self.elsewhere = not self.playing and state.row.claimed()
        return (state.row.status, state.row.stop_reason, state.row.tournament.budget_usd, self.playing, self.elsewhere,
                tuple(sorted((d.row.id, d.row.status, d.row.turn_count, d.has_verdict)
                             for d in state.debates.values())))

    async def refresh(self) -> None:
        state = await self.load()
        if state is None:
            return
        marker = await self.marker(state)
        judged = self.judged_ids(state)
        board = await self.board(judged) if judged != self.judged else None  # a new verdict only, not every turn
        if marker != self.last:  # an open page must not redraw every second for nothing
            self.last = marker
            self.body.refresh(state)
        if board is not None:
            self.ratings.refresh(board)

    @staticmethod
    def judged_ids(state: Progress) -> frozenset[str]:
        return frozenset(d.row.id for d in state.debates.values() if d.has_verdict)

    async def board(self, judged: frozenset[str]) -> Leaderboard:
        """The tournament's own leaderboard: the one fit `/leaderboard` makes, over its judged debates only
        (cached per set of debates: every open page of the tournament shares it)."""
        self.judged = judged
        engine = await runtime.current().engine()
        self.shown_board = await leaderboard(engine.store, LeaderboardFilters(debate_ids=judged))
        return self.shown_board

    @ui.refreshable_method
    def ratings(self, board: Leaderboard) -> None:
        with ui.column().classes("w-full gap-3").mark("tournament-leaderboard"):
            render_leaderboard(board, words=False)  # the standings above say the pairs in words

    @ui.refreshable_method
    def body(self, state: Progress) -> None:
        row, tournament = state.row, state.row.tournament
        with ui.row().classes("w-full items-center gap-3"):
            heading(tournament.name).mark("tournament-name")
            tournament_badge(row.status)
        if row.stop_reason:
            ui.label(f"Stopped: {row.stop_reason}").classes("text-warning").mark("tournament-reason")
        with ui.card().classes("w-full gap-2").mark("tournament-progress"):
            ui.label(f"Debates done: {state.done} / {state.total}").mark("tournament-done")
            ui.linear_progress(value=state.done / state.total if state.total else 0, show_value=False) \
                .props("rounded size=10px")
            if tournament.budget_usd is None:
                ui.label(f"Cost so far: {money(state.spent)} (no budget)").mark("tournament-cost")
            else:  # named so that they add up: spent + reserved + left = the budget
                budget = tournament.budget_usd
                held = f" · reserved for running debates {money(state.reserved)}" if state.reserved > 0 else ""
                ui.label(f"Budget {money(budget)}: spent {money(state.spent)}{held} · left "
                         f"{money(state.left(budget))}").mark("tournament-cost")
                more = state.add_to_finish(budget)
                if more is not None and row.status != "completed":
                    remaining = state.total - len(state.debates)
                    ui.label(f"Add {money(more)} to finish: the {remaining} debate{'s' if remaining != 1 else ''} "
                             f"not played yet may cost up to {money(state.to_finish)} in all.") \
                        .classes("text-sm text-warning").mark("tournament-add")
            ui.label(f"Time left (estimate): {_duration(state.eta_seconds)}").mark("tournament-eta")
            ui.label(f"{len(tournament.models)} models · {counted(len(tournament.topics), 'topic')} · format "
                     f"{tournament.format} · {'sides swapped' if tournament.swap_sides else 'one side each'} · "
                     f"{tournament.concurrency} at a time · judge "
                     f"{', '.join(j.label for j in tournament.judge.judges)}").classes("text-sm text-grey-7")
            self._controls(row)
        with ui.card().classes("w-full gap-2").mark("tournament-live"):
            heading("Live debates", 2)
            if not state.live:
                ui.label("None right now.").classes("text-grey-8")
            for debate in state.live:
                with ui.row().classes("items-center gap-2"):
                    ui.link(self._title(state, debate.slot), f"/debate/{debate.row.id}").mark("live-debate")
                    status_badge(debate.row.status, debate.row.interrupted)
        self._standings(state)
        self._debates(state)

    def _controls(self, row: TournamentRow) -> None:
        with ui.row().classes("items-center gap-2"):
            if self.playing and self.principal.can(Action.STOP):
                ui.button("Stop after the running debates", icon="stop", on_click=self.stop) \
                    .props("outline no-caps").mark("tournament-stop")
            if self.elsewhere:
                ui.label("Played by another process (the command line, or another server).") \
                    .classes("text-sm text-grey-8").mark("tournament-elsewhere")
            elif not self.playing and row.status != "completed" and self.principal.can(Action.RESUME):
                self.new_budget = ui.number("New total budget (USD, optional)", min=0, step=0.5) \
                    .mark("tournament-new-budget")
                ui.button("Continue", icon="play_arrow", on_click=self.resume) \
                    .props("unelevated no-caps").mark("tournament-continue")

    async def stop(self) -> None:
        try:
            await self.gate.stop_tournament(self.tournament_id, await runtime.current().tournaments())
        except PermissionError as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        ui.notify("No further debate will start; the running ones finish.")

    async def resume(self) -> None:
        field = self.new_budget
        budget = float(field.value) if field is not None and field.value else None
        try:
            await self.gate.continue_tournament(self.tournament_id, await runtime.current().tournaments(), budget)
        except (PermissionError, ValueError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        self.last = None
        await self.refresh()

    @staticmethod
    def _title(state: Progress, slot_key: str) -> str:
        tournament = state.row.tournament
        slot = next((s for s in state.slots if s.key == slot_key), None)
        if slot is None:
            return slot_key
        pro, con = tournament.models[slot.pro].label, tournament.models[slot.con].label
        return f"{pro} vs {con} — {tournament.topics[slot.topic][:80]}"

    def _standings(self, state: Progress) -> None:
        with ui.card().classes("w-full gap-2").mark("tournament-standings"):
            heading("Standings", 2)
            ui.label("Wins, losses and ties in the finished, judged debates (a verdict without a winner is a "
                     "tie).").classes("text-sm text-grey-7")
            columns = [
                {"name": "model", "label": "Model", "field": "model", "align": "left"},
                {"name": "played", "label": "Played", "field": "played"},
                {"name": "wins", "label": "Wins", "field": "wins"},
                {"name": "losses", "label": "Losses", "field": "losses"},
                {"name": "ties", "label": "Ties", "field": "ties"},
                {"name": "points", "label": "Points", "field": "points"},
            ]
            table = standings(state.row.tournament, state.debates)
            rows = [{"model": s.label, "played": s.played, "wins": s.wins, "losses": s.losses, "ties": s.ties,
                     "points": f"{s.points:g}"} for s in table]
            ui.table(columns=columns, rows=rows, row_key="model").props("flat dense").classes("w-full") \
                .mark("standings-table")
            # What the table means, in words: each model against the next one down, from the tournament's
            # ratings (the same lines as the leaderboard's, in the table's order).
            lines = self.shown_board.words_for([s.label for s in table]) if self.shown_board is not None else []
            if lines:
                pair_lines(lines)

    def _debates(self, state: Progress) -> None:
        with ui.card().classes("w-full gap-1").mark("tournament-debates"):
            heading("Debates", 2)
            for slot in state.slots:
                debate = state.debates.get(slot.key)
                with ui.row().classes("w-full items-center gap-2 text-sm").mark("tournament-slot"):
                    title = self._title(state, slot.key)
                    if debate is None:
                        ui.label(title).classes("text-grey-7")
                        ui.label("not started").classes("text-grey-7")
                        continue
                    ui.link(title, f"/debate/{debate.row.id}")
                    status_badge(debate.row.status, debate.row.interrupted)
                    if debate.has_verdict:
                        winner = next((f"{p.get('provider')}:{p.get('model')}" for p in debate.row.participants
                                       if p.get("id") == debate.winner), None)
                        ui.label(f"winner: {winner}" if winner else "tie")
                    ui.label(money(debate.row.cost_usd)).classes("text-grey-7")


async def page(request: Request, tournament_id: str) -> Response | None:
    await runtime.current().engine()
    admitted = await admit(request, Action.LIST, "see tournaments")
    if not isinstance(admitted, Principal):
        return admitted
    view = TournamentView(tournament_id, admitted, auth_gate(admitted))
    state = await view.load()
    with frame("/tournaments", admitted):
        if state is None:
            ui.context.client.status_code = 404  # an unknown id is not a page: HTTP says so too
            heading("Tournament not found")
            ui.label(f"There is no tournament with id {tournament_id}.").mark("tournament-missing")
            ui.link("All tournaments", "/tournaments")
            return None
        view.last = await view.marker(state)
        board = await view.board(view.judged_ids(state))  # first: the standings say it in words
        view.body(state)
        view.ratings(board)
        ui.timer(REFRESH_S, view.refresh)
    return None
