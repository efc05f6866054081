"""The phase stepper: every phase of the format, the current one highlighted, "Round N of M"."""

from __future__ import annotations

from nicegui import ui

from webapp.engine.machine import TERMINAL_STATES, State
from webapp.engine.state import DebateState


def stepper_signature(state: DebateState) -> tuple:
    pos = state.position
    return (state.status.value, pos.phase, pos.round, state.total_rounds, len(state.phase_marks),
            state.verdict is not None)


def render_stepper(state: DebateState) -> None:
    fmt = state.format
    pos = state.position
    ids = [p.id for p in fmt.phases]
    current = ids.index(pos.phase) if pos.phase in ids else -1
    finished = state.status in TERMINAL_STATES or state.status is State.JUDGING
    started = state.status is not State.IDLE
    with ui.row().classes("w-full items-center gap-2").mark("stepper"):
        for index, phase in enumerate(fmt.phases):
            if finished or (started and index < current):
                style, icon = "rostrum-phase-done", "check"
            elif started and index == current and state.status not in (State.INITIALIZING, State.CLARIFYING,
                                                                        State.AWAITING_CLARIFICATION):
                style, icon = "rostrum-phase-current", "arrow_right"
            else:
                style, icon = "rostrum-phase-todo", ""
            with ui.row().classes(f"items-center gap-1 rostrum-phase-pill {style}").mark(f"phase-{phase.id}"):
                if icon:
                    ui.icon(icon).classes("text-sm")
                ui.label(phase.title)
            if index < len(fmt.phases) - 1:
                ui.icon("chevron_right").classes("text-grey-5")
        if state.config.judge.enabled:
            ui.icon("chevron_right").classes("text-grey-5")
            judged = state.verdict is not None
            style = "rostrum-phase-done" if judged else (
                "rostrum-phase-current" if state.status is State.JUDGING else "rostrum-phase-todo")
            with ui.row().classes(f"items-center gap-1 rostrum-phase-pill {style}"):
                ui.icon("gavel").classes("text-sm")
                ui.label("Verdict")
        if fmt.has_rounds:
            ui.space()
            round_no = max(1, pos.round or 1)
            total = state.total_rounds
            text = f"Round {round_no} of {total}"
            if fmt.termination.kind != "fixed":
                text = f"Round {round_no} (at most {total})"
            ui.label(text).classes("text-sm font-medium").mark("round")
