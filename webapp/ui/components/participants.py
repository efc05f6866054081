"""Participants panel: colour, name, position, model, and a live "thinking…/speaking…" indicator."""

from __future__ import annotations

from nicegui import ui

from webapp.engine.machine import State
from webapp.engine.state import DebateState
from webapp.engine.stream import LiveTurn
from webapp.models import TEMPERATURE_IGNORED_BY
from webapp.ui.components.badges import safe_color
from webapp.ui.components.transcript import phase_visible


def activity(state: DebateState, live: dict[str, LiveTurn]) -> dict[str, str]:
    """participant id (or "judge") -> what it is doing right now."""
    doing: dict[str, str] = {}
    for turn in live.values():
        if not phase_visible(state, turn.phase):
            doing[turn.speaker] = "preparing…"
        else:
            # `parts`, not `text`: this runs on every flush, and `text` joins the whole stream so far.
            doing[turn.speaker] = "speaking…" if any(turn.parts) else "thinking…"
    if state.status is State.JUDGING:
        doing["judge"] = "judging…"
    elif state.status is State.CLARIFYING:
        doing["judge"] = "collecting questions…"
    return doing


class ParticipantsPanel:
    """Built once; `update` only changes the indicator labels."""

    def __init__(self, state: DebateState) -> None:
        self.indicators: dict[str, ui.label] = {}
        with ui.card().classes("w-full gap-2").mark("participants"):
            ui.label("Participants").classes("text-base font-semibold")
            for p in state.config.participants:
                with ui.row().classes("w-full items-center gap-2 no-wrap"):
                    ui.element("span").classes("rostrum-dot").style(f"background:{safe_color(p.color)}")
                    with ui.column().classes("gap-0 min-w-0 grow"):
                        with ui.row().classes("items-center gap-1"):
                            ui.label(p.name).classes("font-medium")
                            ui.label(f"({p.position})").classes("text-xs text-grey-7")
                        ui.label(f"{p.provider}:{p.model}").classes("text-xs text-grey-6 font-mono")
                        if p.temperature is not None and p.provider in TEMPERATURE_IGNORED_BY:
                            ui.label(f"temperature {p.temperature:g} not sent ({p.provider} does not accept it)") \
                                .classes("text-xs text-grey-6").mark(f"temperature-note-{p.id}")
                    self.indicators[p.id] = ui.label().classes("text-xs text-primary font-medium") \
                        .mark(f"activity-{p.id}")
            if state.config.judge.enabled:
                ui.separator()
                with ui.row().classes("w-full items-center gap-2 no-wrap"):
                    ui.icon("gavel").classes("text-grey-7")
                    with ui.column().classes("gap-0 grow"):
                        ui.label("Judge").classes("font-medium")
                        labels = ", ".join(j.label for j in state.config.judge.judges)
                        ui.label(labels).classes("text-xs text-grey-6 font-mono")
                    self.indicators["judge"] = ui.label().classes("text-xs text-primary font-medium") \
                        .mark("activity-judge")
        self._shown: dict[str, str] = {}

    def update(self, state: DebateState, live: dict[str, LiveTurn]) -> None:
        doing = activity(state, live)
        if doing == self._shown:
            return
        self._shown = doing
        for pid, label in self.indicators.items():
            text = doing.get(pid, "")
            label.text = text
            label.classes(replace="text-xs font-medium " + ("text-primary animate-pulse" if text else ""))
