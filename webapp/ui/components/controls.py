"""Pause, Resume, Stop, Retry (and Acknowledge): enabled exactly when the machine allows them and
the person's role does.

A click disables its button at once (no double commands from one tab); the engine serialises
commands, and one the machine refuses (another tab was faster) is shown with its reason. Every
command goes through the `Gate`, which checks the role on the server: the buttons still deliver
their events when disabled, so a forged click reaches the gate and is refused and logged there
rather than silently dropped. While a debate is in error, Retry says whose call it runs again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nicegui import ui

from webapp.access.gate import COMMANDS, Gate
from webapp.engine.api import Command
from webapp.engine.machine import State, TransitionNotAllowed
from webapp.engine.runner import DebateSession
from webapp.store import StoreError
from webapp.ui.components.failure import explain_error

# button -> (label, icon, the command it sends, colour when enabled)
BUTTONS = {
    "pause": ("Pause", "pause", Command.PAUSE, "amber-8"),
    "resume": ("Resume", "play_arrow", Command.RESUME, "primary"),
    "retry": ("Retry", "replay", Command.RETRY, "orange-8"),
    "stop": ("Stop", "stop", Command.STOP, "negative"),
}


class Controls:
    """The command buttons of one debate page."""

    def __init__(self, session: DebateSession, gate: Gate, after: Callable[[], None]) -> None:
        self.session = session
        self.gate = gate
        self.after = after
        self.busy = False
        self._shown: dict[str, bool] | None = None  # what the buttons show (`update` skips a no-op)
        self.buttons: dict[str, ui.button] = {}
        with ui.row().classes("w-full items-center gap-2").mark("controls") as self.row:
            for name, (label, icon, _, _) in BUTTONS.items():
                # Stop opens a menu (with or without a verdict) instead of running at once; the menu is
                # made on the first click: every element costs each open page memory.
                on_click = self.stop_menu if name == "stop" else (lambda n=name: self.run(n))
                button = ui.button(label, icon=icon, on_click=on_click).props("no-caps").mark(name)
                button.ignores_events_when_disabled = False  # the gate decides, and logs refusals
                self.buttons[name] = button
        self.menu: ui.menu | None = None
        if not any(self.gate.principal.can(COMMANDS[name], session.id) for name in BUTTONS):
            with ui.row().classes("items-center"):
                ui.label(f"{self.gate.principal.role.value.capitalize()}s can watch and export; "
                         "controls need an operator.").classes("text-xs text-grey-7").mark("read-only")
        self.update()

    def stop_menu(self) -> None:
        if self.menu is None:
            with self.buttons["stop"], ui.menu() as self.menu:
                ui.menu_item("Stop and judge what was said", on_click=lambda: self.run("stop", verdict=True)) \
                    .mark("stop-judge")
                ui.menu_item("Stop without a verdict", on_click=lambda: self.run("stop", verdict=False)) \
                    .mark("stop-now")
        self.menu.open()

    def allowed(self) -> dict[str, bool]:
        allowed, principal = self.session.allowed_commands, self.gate.principal
        return {name: command in allowed and principal.can(COMMANDS[name], self.session.id)
                for name, (_, _, command, _) in BUTTONS.items()}

    def retry_text(self) -> str:
        """"Retry Opposition's turn (3 left)" while the debate is in error: whose call runs again."""
        state = self.session.state
        if state.status is not State.ERROR:
            return BUTTONS["retry"][0]
        left = max(0, state.max_retries - state.retries_used)
        return explain_error(state, state.error, left).retry_label

    def update(self) -> None:
        """Called on every committed event: re-style the buttons only when what they show changed."""
        shown: dict[str, Any] = {name: allowed and not self.busy for name, allowed in self.allowed().items()}
        shown["retry-text"] = self.retry_text()
        if shown == self._shown:
            return
        self._shown = shown
        self.buttons["retry"].set_text(str(shown["retry-text"]))
        for name in BUTTONS:
            enabled = bool(shown[name])
            button = self.buttons[name]
            button.set_enabled(enabled)
            # Enabled buttons are filled in their colour, disabled ones flat grey: state at a glance.
            button.props(remove="unelevated outline flat color")
            button.props(f"unelevated color={BUTTONS[name][3]}" if enabled else "flat color=grey-6")

    async def run(self, command: str, **kwargs: object) -> None:
        if self.busy:
            return
        self.busy = True
        self.update()
        try:
            await self.gate.command(self.session, command, **kwargs)
        except (TransitionNotAllowed, PermissionError, ValueError) as exc:
            ui.notify(f"Not done: {exc}", type="warning", multi_line=True)
        except StoreError as exc:
            ui.notify(f"Not done: {exc} ({exc.advice})", type="negative", multi_line=True)
        finally:
            self.busy = False
            self.after()
