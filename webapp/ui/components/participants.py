"""Participants panel: colour, name, position and model of each speaker, and the judge.

Who is speaking right now is shown by the live status bar (fed by the live stream, not per page)."""

from __future__ import annotations

from nicegui import ui

from webapp.engine.state import DebateState
from webapp.models import TEMPERATURE_IGNORED_BY
from webapp.ui.components.badges import safe_color


class ParticipantsPanel:
    """Built once; nothing in it changes while the debate runs."""

    def __init__(self, state: DebateState) -> None:
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
            if state.config.judge.enabled:
                ui.separator()
                with ui.row().classes("w-full items-center gap-2 no-wrap"):
                    ui.icon("gavel").classes("text-grey-7")
                    with ui.column().classes("gap-0 grow"):
                        ui.label("Judge").classes("font-medium")
                        labels = ", ".join(j.label for j in state.config.judge.judges)
                        ui.label(labels).classes("text-xs text-grey-6 font-mono")
