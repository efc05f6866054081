"""The transcript and the live status of a debate: one browser component each, fed by the debate's
live stream.

The server builds a snapshot once (finished turns, turns in flight with the text streamed so far) and
never touches these elements for streamed text again: the live channel sends the same compact items
to every spectator (`webapp/ui/live/`), and the browser appends, cuts and finishes turns itself. Model
output is rendered in the browser as Markdown with raw HTML escaped, images shown as links unless
their host is allowed, and DOMPurify over the result (`static/live/index.js`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from nicegui import ui

from webapp.engine.api import TERMINAL_STATES, RetryNote
from webapp.engine.public import DebateSession, DebateState
from webapp.settings import image_hosts
from webapp.ui.components.html_parts import shared_prop
from webapp.ui.live import wire
from webapp.ui.live.wire import group_title, phase_visible, retry_text

__all__ = ["LiveStatusView", "TranscriptView", "group_title", "phase_visible", "render_aux_notes"]

STATIC = Path(__file__).resolve().parents[3] / "static"
ESM = {"rostrum-live": str(STATIC / "live"), "rostrum-marked": str(STATIC / "vendor" / "marked"),
       "rostrum-talk": str(STATIC / "talk")}  # comments and reactions under each turn (`turn_talk`)
TURN_KEY = re.compile(r"^[^/]+/r\d+/[^/]+/\d+$")  # phase/r<round>/<speaker>/<index>


class TranscriptView(ui.element, component="transcript.js", esm=ESM):
    """Every visible turn of a debate, streaming live in the browser."""

    def __init__(self, session: DebateSession, kid: Callable[[str], int], follow: bool,
                 cut: Mapping[str, wire.CutTurn] | None = None) -> None:
        super().__init__()
        state = session.state
        self.turns = wire.snapshot_turns(session, kid, cut)
        # Shared by every page built from the same snapshot: a copy per page is memory per spectator.
        self._props["turns"] = shared_prop(self.turns)
        self._props["people"] = shared_prop(wire.people(state))
        self._props["empty"] = wire.empty_text(state)
        self._props["images"] = shared_prop(sorted(image_hosts()))
        self._props["follow"] = follow
        self._props["ended"] = state.status in TERMINAL_STATES  # what a cut-off turn's note says
        self.finished_turns = sum(1 for t in state.turns)  # turns the snapshot covers (visible or not)
        self.classes("w-full").mark("transcript")

    @property
    def keys(self) -> list[str]:
        return [t["key"] for t in self.turns]

    def texts(self) -> list[str]:
        """The text of each turn in the snapshot (for tests and the CLI's parity checks)."""
        return [t["text"] for t in self.turns]

    def set_ended(self, ended: bool) -> None:
        if self._props.get("ended") != ended:
            self._props["ended"] = ended
            self.update()


class LiveStatusView(ui.element, component="live_status.js", esm=ESM):
    """The live summary: `mode="bar"` for the sticky bar, `mode="cost"` for the cost card."""

    def __init__(self, status: dict[str, Any], mode: str) -> None:
        super().__init__()
        self._props["status"] = shared_prop(status)
        self._props["mode"] = mode

    @property
    def status(self) -> dict[str, Any]:
        return dict(self._props["status"])


def aux_notes(state: DebateState, live_keys: Iterable[str] = ()) -> list[str]:
    """Retries of calls that are not turns (judge, summaries, questions), and of turns that have no card
    (never finished, not streaming: e.g. the debate ended on the error)."""
    carded = set(state.turn_keys) | set(live_keys)
    out = []
    for note in state.notes:
        if not isinstance(note, RetryNote) or (TURN_KEY.match(note.turn) and note.turn in carded):
            continue  # a turn's retries are shown on its card
        out.append(f"{note.turn}: {retry_text(note)}")
    return out


def aux_notes_signature(state: DebateState, live_keys: Iterable[str]) -> tuple[str, ...]:
    """What the section shows: it re-renders only when that changes (not on every turn)."""
    return tuple(aux_notes(state, live_keys))


def render_aux_notes(state: DebateState, live_keys: Iterable[str] = ()) -> None:
    """The notes of `aux_notes`, small and grey."""
    for text in aux_notes(state, live_keys):
        with ui.row().classes("items-center gap-1 text-xs text-grey-6 italic").mark("aux-note"):
            ui.icon("replay").classes("text-sm")
            ui.label(text)
