"""The transcript: turns grouped by phase (and round), streaming live, Markdown when finished.

A live turn is a card whose body grows by one small text element per flush (deltas, never the
whole text again). When the turn is committed, the deltas are replaced by one sanitised
`ui.markdown`. Text from models is only ever put in text elements or sanitised Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from nicegui import ui
from nicegui.elements.mixins.text_element import TextElement

from webapp.engine import schedule
from webapp.engine.state import DebateState
from webapp.engine.stream import LiveTurn, LiveTurnStarted
from webapp.live import Aborted, ChunkDelta
from webapp.models import Turn
from webapp.ui.components.badges import money, safe_color
from webapp.ui.components.safe_markdown import SafeMarkdown

TURN_KEY = re.compile(r"^[^/]+/r\d+/[^/]+/\d+$")  # phase/r<round>/<speaker>/<index>
ACT_LABELS = {"ask": "question", "answer": "answer", "prepare": "preparation", "propose": "proposal",
              "critique": "critique", "refine": "refinement", "synthesize": "synthesis"}


def phase_visible(state: DebateState, phase_id: str) -> bool:
    """Private phases (preparation notes) are shown only when the debate asks for it."""
    try:
        return schedule.phase_visible(state.format.phase(phase_id), state.config)
    except KeyError:
        return True


def group_title(state: DebateState, phase_id: str, round_no: int) -> str:
    try:
        phase = state.format.phase(phase_id)
    except KeyError:
        return phase_id
    if phase.scope == "round" and state.format.has_rounds:
        return f"{phase.title} · Round {round_no}"
    return phase.title


class Delta(TextElement):
    """A piece of streamed text: an inline span whose content is text, never HTML."""

    def __init__(self, text: str) -> None:
        super().__init__(tag="span", text=text)


class TurnCard:
    """One turn on screen: live (streaming deltas) or finished (Markdown)."""

    def __init__(self, state: DebateState, key: str, speaker: str, act: str, attempt: int | None) -> None:
        self.key = key
        self.attempt = attempt
        self.length = 0  # characters of streamed text shown
        self.finished = False
        self.retry_notes_shown = 0
        participant = _participant(state, speaker)
        color = safe_color(participant.get("color"))
        self.card = ui.card().classes("w-full rostrum-turn gap-1 py-3").style(f"--turn-color:{color}") \
            .props("flat bordered").mark(f"turn-{key}")
        with self.card:
            with ui.row().classes("w-full items-center gap-2 no-wrap"):
                ui.element("span").classes("rostrum-dot").style(f"background:{color}")
                ui.label(participant.get("name", speaker)).classes("font-semibold")
                if act in ACT_LABELS:
                    ui.badge(ACT_LABELS[act], color="grey-5").props("outline")
                ui.label(participant.get("model", "")).classes("text-xs text-grey-6")
                ui.space()
                self.meta = ui.label().classes("text-xs text-grey-6 font-mono")
            self.body = ui.column().classes("w-full gap-0")
            self.notes = ui.column().classes("w-full gap-0")
        with self.body:
            self.stream = ui.element("div").classes("rostrum-stream rostrum-caret").mark("stream")

    def append(self, text: str) -> None:
        if text:
            with self.stream:
                Delta(text)
            self.length += len(text)

    def reset_stream(self, attempt: int | None) -> None:
        self.attempt = attempt
        self.length = 0
        self.stream.clear()

    def note(self, text: str, icon: str = "info") -> None:
        with self.notes, ui.row().classes("items-center gap-1 text-xs text-grey-7 italic"):
            ui.icon(icon).classes("text-sm")
            ui.label(text)

    def finish(self, turn: Turn) -> None:
        self.finished = True
        self.body.clear()
        self.notes.clear()  # notes about abandoned attempts no longer apply; retry notes are re-added
        self.retry_notes_shown = 0
        with self.body:
            SafeMarkdown(turn.text).classes("w-full").mark("turn-text")  # sanitised by default: keep it so
        tokens = f"{turn.usage.input_tokens}→{turn.usage.output_tokens} tok"
        self.meta.text = f"{tokens} · {money(turn.cost_usd)}" + (f" · attempt {turn.attempt}" if turn.attempt > 1
                                                                  else "")
        for note in turn.notes:
            self.note(note, "rule" if "word" in note else "flag" if "topic" in note.lower() else "compress")


def _participant(state: DebateState, speaker: str) -> dict[str, Any]:
    try:
        p = state.config.participant(speaker)
    except KeyError:
        return {"name": speaker, "color": None, "model": ""}
    return {"name": p.name, "color": p.color, "model": f"{p.provider}:{p.model}"}


class Transcript:
    """All turn cards of a debate page, grouped by (phase, round) in the order they happened."""

    def __init__(self) -> None:
        self.container = ui.column().classes("w-full gap-3").mark("transcript")
        with self.container:
            self.empty = ui.label("No turns yet — the first speaker will appear here.") \
                .classes("text-grey-6 italic")
        self.groups: dict[tuple[str, int], ui.column] = {}
        self.cards: dict[str, TurnCard] = {}

    def _group(self, state: DebateState, phase: str, round_no: int) -> ui.column:
        key = (phase, round_no)
        if key not in self.groups:
            self.empty.set_visibility(False)
            with self.container:
                group = ui.column().classes("w-full gap-2").mark(f"group-{phase}-{round_no}")
            with group, ui.row().classes("items-center gap-2 mt-2"):
                ui.icon("segment").classes("text-primary")
                ui.label(group_title(state, phase, round_no)).classes("text-base font-semibold")
            self.groups[key] = group
        return self.groups[key]

    # --- snapshot and committed events --------------------------------------------------------

    def sync(self, state: DebateState, live: dict[str, LiveTurn]) -> None:
        """Show every finished turn and every live one not yet shown (idempotent)."""
        for turn in state.turns:
            if not turn.visible:
                continue
            card = self.cards.get(turn.key)
            if card is not None and card.finished:
                continue
            if card is None:
                with self._group(state, turn.phase, turn.round):
                    card = self.cards[turn.key] = TurnCard(state, turn.key, turn.speaker, turn.act, turn.attempt)
            card.finish(turn)
        for key, live_turn in list(live.items()):
            if key in state.turn_keys or not phase_visible(state, live_turn.phase):
                continue
            card = self.cards.get(key)
            if card is None:
                card = self._live_card(state, key, live_turn.speaker, live_turn.phase, live_turn.round,
                                       live_turn.act, live_turn.attempt)
            if card.attempt not in (None, live_turn.attempt):
                card.reset_stream(live_turn.attempt)
            card.append(live_turn.text[card.length:])  # what the card lacks, if anything (one join)
        retries: dict[str, list[dict[str, Any]]] = {}
        for note in state.notes:
            if note.get("type") == "retry":
                retries.setdefault(str(note.get("turn")), []).append(note)
        for key, notes in retries.items():
            card = self.cards.get(key)
            if card is None:
                continue
            for note in notes[card.retry_notes_shown:]:
                card.note(_retry_text(note), "replay")
            card.retry_notes_shown = len(notes)

    def _live_card(self, state: DebateState, key: str, speaker: str, phase: str, round_no: int, act: str,
                   attempt: int | None) -> TurnCard:
        with self._group(state, phase, round_no):
            card = self.cards[key] = TurnCard(state, key, speaker, act, attempt)
        return card

    # --- live messages ------------------------------------------------------------------------

    def started(self, state: DebateState, item: LiveTurnStarted) -> None:
        if item.key in state.turn_keys or not phase_visible(state, item.phase):
            return
        card = self.cards.get(item.key)
        if card is None:
            self._live_card(state, item.key, item.speaker, item.phase, item.round, item.act, item.attempt)
        elif not card.finished and card.attempt != item.attempt:
            card.reset_stream(item.attempt)

    def delta(self, state: DebateState, item: ChunkDelta, live: dict[str, LiveTurn]) -> None:
        card = self.cards.get(item.key)
        if card is None or card.finished or item.key in state.turn_keys:
            return
        if item.attempt is not None and card.attempt is not None and item.attempt != card.attempt:
            return  # text of an abandoned attempt
        if item.offset > card.length:  # a gap: take what the engine holds (it is authoritative)
            current = live.get(item.key)
            if current is not None:
                card.append(current.text[card.length:])
            return
        end = item.offset + len(item.text)
        if end > card.length:
            card.append(item.text[card.length - item.offset:])

    def aborted(self, state: DebateState, item: Aborted) -> None:
        card = self.cards.get(item.key)
        if card is None or card.finished:
            return
        if item.attempt is not None and card.attempt is not None and card.attempt > item.attempt:
            return  # the page already shows a newer attempt
        card.reset_stream(None)
        if item.reason == "cancelled":
            card.note("cut off by a pause or stop; it will be redone", "pause")
        else:
            card.note(f"attempt cut off: {item.reason}", "warning")


def _retry_text(note: dict[str, Any]) -> str:
    error = note.get("error") or {}
    return (f"attempt {note.get('attempt')} failed ({error.get('message', 'error')}); "
            f"retried after {note.get('wait_s', 0):g} s")


def aux_notes_signature(state: DebateState, live_keys: Iterable[str]) -> tuple:
    return len(state.notes), len(state.turn_keys), tuple(sorted(live_keys))


def render_aux_notes(state: DebateState, live_keys: Iterable[str] = ()) -> None:
    """Retries of calls that are not turns (judge, summaries, questions), and of turns that have no card
    (never finished, not streaming: e.g. the debate ended on the error): shown small and grey."""
    carded = set(state.turn_keys) | set(live_keys)
    for note in state.notes:
        turn = str(note.get("turn"))
        if note.get("type") != "retry" or (TURN_KEY.match(turn) and turn in carded):
            continue  # a turn's retries are shown on its card
        with ui.row().classes("items-center gap-1 text-xs text-grey-6 italic").mark("aux-note"):
            ui.icon("replay").classes("text-sm")
            ui.label(f"{note.get('turn')}: {_retry_text(note)}")
