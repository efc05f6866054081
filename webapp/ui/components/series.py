"""The series card (side-swapped rematches: did the model or the position win?) and the Rematch button
of the debate page.

`render_series(state, siblings)` draws the card from the debates of a series (pure: tested on its
own); `SeriesCard` loads the series for a page and follows it — the page's own debate through
`update()` (the page calls it on each of its events), the other debates of the series through the
hub's throttled change signal; `RematchButton` starts the rematch through the gate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nicegui import background_tasks, context, ui

from webapp.access.gate import Gate
from webapp.access.roles import Action
from webapp.engine.public import TERMINAL_STATES, DebateSession, DebateState
from webapp.engine.schedule import ConfigError
from webapp.engine.series import NotEnded, participant_label, series_result, series_states
from webapp.store import StoreError
from webapp.ui import runtime

ICONS = {"pending": "hourglass_top", "incomplete": "help_outline", "same-model": "emoji_events",
         "same-position": "swap_horiz", "ties": "balance", "mixed": "call_split"}


def series_signature(state: DebateState, siblings: list[DebateState]) -> tuple[Any, ...]:
    result = series_result(siblings)
    return (state.id, result)


def render_series(state: DebateState, siblings: list[DebateState], links: bool = True) -> None:
    """The series card of `state`'s page, from every debate of the series (oldest first, `state`
    among them); nothing for a debate alone. `links`: link the other debates (not for a share link,
    which may open its one debate only)."""
    result = series_result(siblings)
    if result is None:
        return
    first = siblings[0]
    with ui.card().classes("w-full gap-1 py-3").props("flat bordered").mark("series"):
        with ui.row().classes("w-full items-center gap-x-2 gap-y-0"):
            ui.icon(ICONS.get(result.kind, "flag")).classes("text-2xl shrink-0 text-primary") \
                .props('aria-hidden="true"')
            ui.label(f"Series of {len(siblings)} debates, sides swapped:").classes("text-sm text-grey-8 shrink-0")
            ui.label(result.headline).classes("text-base font-semibold min-w-0 break-words").mark("series-headline")
        for index, game in enumerate(result.games):
            with ui.row().classes("w-full items-center gap-x-2 gap-y-0 text-sm min-w-0").mark("series-debate"):
                title = "First debate" if index == 0 else f"Rematch {index}" if len(siblings) > 2 else "Rematch"
                if game.id == state.id:
                    ui.label(f"{title} (this one)").classes("font-medium")
                elif not links:
                    ui.label(title).classes("font-medium")
                else:
                    ui.link(title, f"/debate/{game.id}").classes("font-medium")
                # Each participant by its one name across the series; its side in this debate beside it.
                sides = ", ".join(f"{position}: {participant_label(first, pid)}"
                                  for pid, position in zip(game.seats, game.positions, strict=True))
                ui.label(sides).classes("text-grey-8 min-w-0 break-words").mark("series-sides")
                if not game.ended:
                    ui.label(f"· {game.status.replace('_', ' ')}").classes("text-grey-7")
                elif not game.judged:
                    ui.label("· no verdict").classes("text-grey-7")
                elif game.winner is None:
                    ui.label("· tie").classes("font-medium")
                else:
                    side = game.seat_label(game.seat(game.winner) or 0)
                    ui.label(f"· {participant_label(first, game.winner)} won, as {side}").classes("font-medium")


class SeriesCard:
    """The series card of one page: loaded once the page is built, kept current afterwards.

    The page's own debate is followed through `update()` (no query: its state is at hand). The other
    debates are re-read from the store when the hub says one of them changed, when a debate this card
    has not heard of appears (a new rematch), or when another process changed something — and, for a
    debate alone, only once it has ended (a rematch starts from an ended debate)."""

    def __init__(self, session: DebateSession, gate: Gate, place: Callable[[Callable[[], None]], None]) -> None:
        """`place(render)` shows what `render` builds in the card's place on the page (replacing what it
        showed before): a debate alone shows nothing, and no element stands empty for it."""
        self.session = session
        self.links = gate.principal.kind != "share-link"
        self.place = place
        self.page = context.slot.parent  # any element of the page: its lifetime is the page's
        self.states: list[DebateState] = []  # the series as last loaded (empty: the debate is alone)
        self.seen: set[str] = set()  # debates the hub has told this card about
        self.signature: tuple[Any, ...] | None = None
        self.loading = False
        self.again = False
        background_tasks.create(self._start(), name="series-card")

    async def _start(self) -> None:
        hub = await runtime.current().hub()
        if self.page.is_deleted:
            return
        with self.page:  # subscribed in the page's context: unsubscribed when the page goes
            hub.dashboard.subscribe(self._changed)
        await self.load()

    def _changed(self, changed: set[str]) -> None:
        new, ids = changed - self.seen, {s.id for s in self.states}
        self.seen |= changed
        if len(ids) < 2 and self.session.state.status not in TERMINAL_STATES:
            return
        if not changed or changed & ids or new:
            background_tasks.create(self.load(), name="series-card")

    def current(self) -> list[DebateState]:
        """The loaded series with this page's debate as it is now."""
        own = self.session.state
        return [own if s.id == own.id else s for s in self.states]

    def update(self) -> None:
        """The page's own debate moved (the page calls this on each of its events)."""
        if self.states:
            self._show(self.states)

    async def load(self) -> None:
        if self.loading:  # one load at a time; a change meanwhile loads once more after it
            self.again = True
            return
        self.loading = True
        try:
            while True:
                self.again = False
                engine = await runtime.current().engine()
                try:
                    states = await series_states(engine, self.session.state)
                except StoreError:
                    return
                self._show(states)
                if not self.again:
                    return
        finally:
            self.loading = False

    def _show(self, states: list[DebateState]) -> None:
        if self.page.is_deleted:
            return
        self.states = states
        states = self.current()
        signature = series_signature(self.session.state, states)
        if signature == self.signature:
            return
        self.signature = signature
        own = self.session.state
        self.place(lambda: render_series(own, states, self.links))


class RematchButton:
    """"Rematch, sides swapped": enabled once the debate has ended; shown to those who may create."""

    def __init__(self, session: DebateSession, gate: Gate) -> None:
        self.session = session
        self.gate = gate
        self.busy = False
        self.button = ui.button("Rematch, sides swapped", icon="swap_horiz", on_click=self.click) \
            .props("flat dense no-caps").mark("rematch")
        # A title rather than a tooltip element (each element costs every open page memory).
        self.button.props('title="Run this debate again with the participants\' positions exchanged, to see '
                          'whether the model or the position won"')
        self.button.set_visibility(gate.principal.kind != "share-link" and gate.principal.can(Action.CREATE))
        self.update()

    def update(self) -> None:
        self.button.set_enabled(not self.busy and self.session.state.status in TERMINAL_STATES)

    async def click(self) -> None:
        if self.busy:
            return
        self.busy = True
        self.update()
        try:
            session = await self.gate.rematch(self.session.id)
        except (PermissionError, NotEnded, ConfigError, StoreError) as exc:
            ui.notify(f"Not done: {exc}", type="negative", multi_line=True)
            return
        finally:
            self.busy = False
            if not self.button.is_deleted:
                self.update()
        ui.navigate.to(f"/debate/{session.id}")
