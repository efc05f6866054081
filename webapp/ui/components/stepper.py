"""The phase stepper: every phase of the format, where the debate is, "Round N of M".

What each pill shows comes from the log, not from the status alone; that part is pure and lives below
the components (`ui/steps.py`, `stepper_view`), since the live stream sends it too.
"""

from __future__ import annotations

from nicegui import ui

from webapp.engine.public import DebateState
from webapp.ui.components.html_parts import shared_prop
from webapp.ui.steps import stepper_steps

# What a pill shows and says (title attribute and screen-reader text) in each condition; how it looks
# is the CSS class `rostrum-pill-<condition>` (static/styles.css), so an update carries no styling.
PILLS: dict[str, tuple[str, str]] = {  # condition -> (icon, words)
    "done": ("check", "done"),
    "current": ("arrow_right", "in progress"),
    "paused": ("pause", "paused here"),
    "waiting": ("hourglass_empty", "waiting for a person here"),
    "stopped": ("stop_circle", "stopped here"),
    "failed": ("error", "failed here"),
    "todo": ("", "to come"),
    "not-reached": ("", "not reached"),
    "unavailable": ("error", "verdict unavailable"),
}


class Stepper(ui.element, component="stepper.js"):
    """The stepper as one element. What it shows that changes while a debate runs (each pill's
    condition, the round) reaches the browser through the live stream's status items, serialised once
    per debate, so no page is updated for it; `show` sets it from the server (a page built later,
    tests)."""

    def __init__(self, state: DebateState) -> None:
        super().__init__()
        phases = [[p.id, p.title] for p in state.format.phases]
        if state.config.judge.enabled:
            phases.append(["verdict", "Verdict"])
        self._props["phases"] = shared_prop(phases)
        self._props["looks"] = shared_prop({condition: [icon, words] for condition, (icon, words) in PILLS.items()})
        self.classes("w-full").mark("stepper")
        self.show(state, send=False)

    def show(self, state: DebateState, send: bool = True) -> None:
        steps, round_text = stepper_steps(state)
        if steps == self._props.get("steps") and round_text == self._props.get("round"):
            return
        self._props["steps"] = shared_prop(steps)
        self._props["round"] = round_text
        if send:
            self.update()

    def pill(self, phase_id: str) -> dict[str, str] | None:
        """What the pill of a phase (or "verdict") shows: its condition and its words."""
        for (pid, title), condition in zip(self._props["phases"], self._props["steps"], strict=True):
            if pid == phase_id:
                return {"title": title, "condition": condition, "words": PILLS[condition][1]}
        return None

    @property
    def round_text(self) -> str | None:
        return self._props.get("round")


def render_stepper(state: DebateState) -> Stepper:
    return Stepper(state)
