"""Pause, Resume, Stop, Retry (and Acknowledge): enabled exactly when the machine allows them and
the person's role does. The four buttons are one browser element (`CommandBar`, controls.js), in the
debate page's sticky bar; none are shown to a viewer or once the debate has ended.

A click disables its button at once (no double commands from one tab); the engine serialises
commands, and one the machine refuses (another tab was faster) is shown with its reason. Every
command goes through the `Gate`, which checks the role on the server: a press is handled whether
or not its button is enabled, so a forged one reaches the gate and is refused and logged there
rather than silently dropped. While a debate is in error, Retry says whose call it runs again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nicegui import ui
from nicegui.events import GenericEventArguments

from webapp.access.gate import COMMANDS, Gate
from webapp.engine.api import Command
from webapp.engine.public import TERMINAL_STATES, DebateSession, State, TransitionNotAllowed
from webapp.store import StoreError
from webapp.ui.components.failure import explain_error
from webapp.ui.components.html_parts import shared_prop

# button -> (label, icon, the command it sends, colour when enabled)
BUTTONS = {
    "pause": ("Pause", "pause", Command.PAUSE, "amber-8"),
    "resume": ("Resume", "play_arrow", Command.RESUME, "primary"),
    "retry": ("Retry", "replay", Command.RETRY, "orange-8"),
    "stop": ("Stop", "stop", Command.STOP, "negative"),
}


class CommandBar(ui.element, component="controls.js"):
    """The command buttons as one browser element (four buttons were four elements on every
    spectator's page)."""

    def __init__(self, buttons: list[list[str]]) -> None:
        super().__init__()
        self._props["buttons"] = shared_prop(buttons)
        self._props["enabled"] = shared_prop({})

    def show(self, buttons: list[list[str]], enabled: dict[str, bool]) -> None:
        self._props["buttons"] = shared_prop(buttons)
        self._props["enabled"] = shared_prop(enabled)
        self.update()

    def label(self, name: str) -> str | None:
        """What the button `name` says (None: not shown)."""
        return next((b[1] for b in self._props["buttons"] if b[0] == name), None)

    def enabled(self, name: str) -> bool:
        return bool(self._props["enabled"].get(name))


class Controls:
    """The command buttons of one debate page."""

    def __init__(self, session: DebateSession, gate: Gate, after: Callable[[], None]) -> None:
        self.session = session
        self.gate = gate
        self.after = after
        self.busy = False
        self._shown: dict[str, Any] | None = None  # what the buttons show (`update` skips a no-op)
        # A share link watches and exports: no command buttons at all.
        self.commands = gate.principal.kind != "share-link"
        self.row = CommandBar([]).mark("controls")
        # A press arrives whether or not its button is enabled in this browser: the gate decides, and
        # logs refusals (a tampered page can send any command).
        self.row.on("command", self._pressed)
        self.update()

    @property
    def operates(self) -> bool:
        """Whether this person may send any command here (a viewer and a share link may not)."""
        return self.commands and any(self.gate.principal.can(COMMANDS[command], self.session.id)
                                        for _, _, command, _ in BUTTONS.values())

    def read_only_note(self) -> None:
        """For a signed-in viewer: why there are no command buttons (the page places it)."""
        if self.commands and not self.operates:
            ui.label(f"{self.gate.principal.role.value.capitalize()}s can watch and export; "
                     "controls need an operator.").classes("text-xs text-grey-7").mark("read-only")

    async def _pressed(self, event: GenericEventArguments) -> None:
        args = event.args if isinstance(event.args, dict) else {}
        await self.press(str(args.get("name")), **({"verdict": bool(args["verdict"])} if "verdict" in args else {}))

    async def press(self, name: str, **kwargs: object) -> None:
        """A button pressed (Stop: one of its menu's items, `verdict=True|False`)."""
        if name not in BUTTONS:
            return
        if name == "stop" and "verdict" not in kwargs:
            return  # Stop itself opens its menu in the browser
        await self.run(name, **kwargs)

    def allowed(self) -> dict[str, bool]:
        allowed, principal = self.session.allowed_commands, self.gate.principal
        return {name: command in allowed and principal.can(COMMANDS[command], self.session.id)
                for name, (_, _, command, _) in BUTTONS.items()}

    def retry_text(self) -> str:
        """"Retry Opposition's turn (3 left)" while the debate is in error: whose call runs again."""
        state = self.session.state
        if state.status is not State.ERROR:
            return BUTTONS["retry"][0]
        left = max(0, state.max_retries - state.retries_used)
        return explain_error(state, state.error, left).retry_label

    def update(self) -> None:
        """Called on every committed event: re-send the buttons only when what they show changed."""
        shown: dict[str, Any] = {name: allowed and not self.busy for name, allowed in self.allowed().items()}
        shown["retry-text"] = self.retry_text()
        shown["ended"] = self.session.state.status in TERMINAL_STATES
        if shown == self._shown:
            return
        self._shown = shown
        # No buttons at all where none can ever be pressed: for a viewer or a link, and once the debate
        # has ended (four disabled buttons said nothing; Stop's open menu goes with its button).
        ended = self.session.state.status in TERMINAL_STATES
        buttons = [[name, str(shown["retry-text"]) if name == "retry" else label, icon, color]
                   for name, (label, icon, _, color) in BUTTONS.items()] if self.operates and not ended else []
        self.row.show(buttons, {name: bool(shown[name]) for name in BUTTONS})

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
