"""Pause, Resume, Stop, Retry (and Acknowledge): enabled exactly when the machine allows them.

A click disables its button at once (no double commands from one tab); the engine serialises
commands, and one the machine refuses (another tab was faster) is shown with its reason.
"""

from __future__ import annotations

from collections.abc import Callable

from nicegui import ui

from webapp.engine.machine import Event, TransitionNotAllowed
from webapp.engine.runner import DebateSession

COLORS = {"pause": "amber-8", "resume": "primary", "retry": "orange-8", "stop": "negative"}


class Controls:
    """The command buttons of one debate page."""

    def __init__(self, session: DebateSession, after: Callable[[], None]) -> None:
        self.session = session
        self.after = after
        self.busy = False
        with ui.row().classes("items-center gap-2").mark("controls"):
            self.pause = ui.button("Pause", icon="pause", on_click=lambda: self.run("pause")) \
                .props("no-caps").mark("pause")
            self.resume = ui.button("Resume", icon="play_arrow", on_click=lambda: self.run("resume")) \
                .props("no-caps").mark("resume")
            self.retry = ui.button("Retry", icon="replay", on_click=lambda: self.run("retry")) \
                .props("no-caps").mark("retry")
            self.stop = ui.button("Stop", icon="stop").props("no-caps").mark("stop")
            with self.stop, ui.menu():
                ui.menu_item("Stop and judge what was said", on_click=lambda: self.run("stop", verdict=True)) \
                    .mark("stop-judge")
                ui.menu_item("Stop without a verdict", on_click=lambda: self.run("stop", verdict=False)) \
                    .mark("stop-now")
        self.update()

    def allowed(self) -> dict[str, bool]:
        machine = self.session.state.machine
        return {
            "pause": machine.can(Event.PAUSE),
            "resume": machine.can(Event.RESUME),
            "retry": machine.can(Event.RETRY),
            "stop": machine.can(Event.STOP),
        }

    def update(self) -> None:
        allowed = self.allowed()
        for name, button in (("pause", self.pause), ("resume", self.resume), ("retry", self.retry),
                             ("stop", self.stop)):
            enabled = allowed[name] and not self.busy
            button.set_enabled(enabled)
            # Enabled buttons are filled in their colour, disabled ones flat grey: state at a glance.
            button.props(remove="unelevated outline flat color")
            button.props(f"unelevated color={COLORS[name]}" if enabled else "flat color=grey-6")

    async def run(self, command: str, **kwargs: object) -> None:
        if self.busy:
            return
        self.busy = True
        self.update()
        try:
            await getattr(self.session, command)(**kwargs)
        except TransitionNotAllowed as exc:
            ui.notify(f"Not done: {exc}", type="warning", multi_line=True)
        finally:
            self.busy = False
            self.after()
