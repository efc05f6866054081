"""A human seat on the debate page: while the debate waits for a person's turn, the seat holder gets a
composer ("Your turn — <phase>", the word limit with a live count, a countdown when there is a time
limit, Send turn) and everyone else sees "<Name> is writing…".

The turn goes through the page's command runner (the gate: role checked and audited); the engine
checks again that the seat is this person's. The count and the countdown run in the browser, so
typing and waiting cost the server nothing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from nicegui import ui

from webapp.engine.api import SeatDraft
from webapp.engine.public import DebateState, State

Command = Callable[..., Awaitable[None]]
# "Draft with a model": (model label, called with the text so far) -> the draft. Goes through the gate.
Draft = Callable[[str, Callable[[str], None]], Awaitable[SeatDraft]]
SEAT_OWN = "rostrum-seat"  # the composer's controls: the seat holder's own, also on a read-only page

# Counts words like the engine (whitespace-separated) and ticks the countdown, both in the browser.
_SCRIPT = """
window.rostrumSeat = {limit: %(limit)s, deadline: %(deadline)s};
if (!window.rostrumSeatInstalled) {
  window.rostrumSeatInstalled = true;
  document.addEventListener('input', (e) => {
    const box = e.target.closest && e.target.closest('[data-seat-text]');
    const count = document.querySelector('[data-seat-count]');
    if (!box || !count) return;
    const value = (e.target.value || '').trim(), limit = window.rostrumSeat.limit;
    const n = value ? value.split(/\\s+/).length : 0;
    count.textContent = limit ? `${n} / ${limit} words` : `${n} words`;
    count.classList.toggle('text-negative', !!limit && n > limit);
  });
  setInterval(() => {
    const deadline = window.rostrumSeat.deadline;
    if (!deadline) return;
    const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
    for (const clock of document.querySelectorAll('[data-seat-clock]'))
      clock.textContent = `${Math.floor(left / 60)}:${String(left %% 60).padStart(2, '0')} left`;
  }, 1000);
}
"""


_RECOUNT = ("document.querySelector('textarea[data-seat-text], [data-seat-text] textarea')"
            "?.dispatchEvent(new Event('input', {bubbles: true}))")


def seat_signature(state: DebateState) -> tuple[Any, ...]:
    """What the seat panel depends on: the turn waited for and since when (a pause restarts the clock)."""
    return (state.seat.key if state.seat else None, state.awaiting_since, state.status is State.AWAITING_TURN)


def may_write(state: DebateState, actor: str | None, holder: str | None) -> bool:
    """Whether `actor` is the person the waited-for seat belongs to (anyone, while nobody took it)."""
    return state.status is State.AWAITING_TURN and (holder is None or holder == actor)


def render_seat(state: DebateState, run: Command, actor: str | None, holder: str | None,
                draft: Draft | None = None, models: list[str] | None = None) -> None:
    """The composer for the seat holder, "<Name> is writing…" for everyone else (nothing when not waiting)."""
    seat = state.seat
    if state.status is not State.AWAITING_TURN or seat is None:
        return
    participant = state.config.participant(seat.speaker)
    phase = state.format.phase(seat.phase).title
    limit = seat.word_limit
    deadline: datetime | None = state.seat_deadline
    deadline_ms = int(deadline.timestamp() * 1000) if deadline is not None else "null"
    if not may_write(state, actor, holder):
        with ui.card().classes("w-full").props("flat bordered").mark("seat-waiting"), \
                ui.row().classes("items-center gap-2"):
            ui.spinner("dots", size="md")
            ui.label(f"{participant.name} is writing…").classes("font-medium").mark("seat-writing")
            if deadline is not None:
                ui.label("").classes("text-sm text-grey-7").props("data-seat-clock aria-live=off")
        ui.run_javascript(_SCRIPT % {"limit": json.dumps(limit), "deadline": deadline_ms})
        return
    with ui.card().classes("w-full gap-2").props("flat bordered").mark("seat-composer"):
        with ui.row().classes("items-center gap-2 w-full"):
            ui.icon("edit_note").classes("text-2xl text-primary")
            ui.label(f"Your turn — {phase}").classes("text-lg font-semibold").mark("seat-title")
            ui.space()
            if deadline is not None:
                ui.label("").classes("text-sm font-mono").props("data-seat-clock role=timer aria-live=off") \
                    .mark("seat-clock")
        ui.label(f"You speak as {participant.name} ({participant.position}). The judges see your turn like any "
                 "other. If the time runs out, the turn is skipped.").classes("text-sm text-grey-7")
        text = ui.textarea(label="Your turn", placeholder="Write your turn…").classes("w-full") \
            .props("outlined autogrow data-seat-text").mark("seat-text").classes(SEAT_OWN)
        assisted: dict[str, str | None] = {"by": None}  # the model whose draft is in the box, if any
        if draft is not None and models:
            with ui.row().classes("items-center gap-2 w-full"):
                picked = ui.select(models, value=models[0], label="Draft with").props("outlined dense") \
                    .classes("w-72").mark("seat-draft-model")
                picked.classes(SEAT_OWN)

                async def make_draft() -> None:
                    model = str(picked.value)
                    button.disable()
                    try:
                        def show(so_far: str) -> None:
                            text.value = so_far
                        made = await draft(model, show)
                        text.value = made.text
                        assisted["by"] = made.model
                        ui.run_javascript(_RECOUNT)  # the count follows text the server put in the box
                        if made.warning:  # capped to the hard limit, or spending reached warn-at
                            ui.notify(made.warning, type="warning", multi_line=True)
                    except Exception as exc:  # a provider error, a refusal: say it, keep what was typed
                        ui.notify(f"No draft: {exc}", type="warning", multi_line=True)
                    finally:
                        button.enable()

                button = ui.button("Draft with a model", icon="auto_awesome", on_click=make_draft) \
                    .props("outline no-caps").mark("seat-draft").classes(SEAT_OWN)
                ui.label("The model writes a draft here; edit it, then send. The turn says it was assisted.") \
                    .classes("text-xs text-grey-7")
        with ui.row().classes("items-center gap-2 w-full"):
            ui.label(f"0 / {limit} words" if limit else "0 words").classes("text-sm") \
                .props("data-seat-count aria-live=polite").mark("seat-count")
            ui.space()

            async def send() -> None:
                value = (text.value or "").strip()
                if not value:
                    ui.notify("Write your turn first.", type="warning")
                    return
                if assisted["by"]:
                    await run("send_turn", text=value, assisted_by=assisted["by"])
                else:
                    await run("send_turn", text=value)

            ui.button("Send turn", icon="send", on_click=send).props("unelevated no-caps").mark("seat-send") \
                .classes(SEAT_OWN)
    ui.run_javascript(_SCRIPT % {"limit": json.dumps(limit), "deadline": deadline_ms})
