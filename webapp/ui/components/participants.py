"""Participants panel: colour, name, position, model and persona of each speaker, and the judge.

Who is speaking right now is shown by the live status bar (fed by the live stream, not per page)."""

from __future__ import annotations

from nicegui import ui

from webapp.engine.public import DebateState
from webapp.models import TEMPERATURE_IGNORED_BY, Participant
from webapp.ui.components.badges import model_beside, safe_color
from webapp.ui.components.html_parts import shared_prop


def temperature_note(participant: Participant) -> str | None:
    if participant.temperature is not None and participant.provider in TEMPERATURE_IGNORED_BY:
        return f"temperature {participant.temperature:g} not sent ({participant.provider} does not accept it)"
    return None


class ParticipantsPanel(ui.element, component="participants.js"):
    """Built once, as one element (names are user input: the browser shows them as text)."""

    def __init__(self, state: DebateState) -> None:
        super().__init__()
        self.people = [
            {"id": p.id, "name": p.name, "position": p.position, "color": safe_color(p.color),
             "model": model_beside(p.name, p.provider, p.model), "notes": [n for n in (temperature_note(p),) if n],
             "persona": p.persona}
            for p in state.config.participants
        ]
        self._props["people"] = shared_prop(self.people)
        judge = state.config.judge
        self._props["judges"] = ", ".join(j.label for j in judge.judges) if judge.enabled else ""
        self.classes("w-full").mark("participants")

    def persona(self, participant_id: str) -> str:
        return next((str(p["persona"]) for p in self.people if p["id"] == participant_id), "")

    def notes(self, participant_id: str) -> list[str]:
        return next((list(p["notes"]) for p in self.people if p["id"] == participant_id), [])
