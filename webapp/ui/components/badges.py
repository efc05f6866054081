"""Status badges and participant chips, shared by the dashboard and the debate page."""

from __future__ import annotations

from html import escape
from typing import Any

from nicegui import ui

from webapp.engine.public import ACTIVE_STATES, State

# UI status name -> (label, Quasar colour, icon); several machine states read as "running".
STATUS_STYLE: dict[str, tuple[str, str, str]] = {
    "running": ("running", "primary", "play_circle"),
    "idle": ("created", "grey-6", "schedule"),
    "paused": ("paused", "amber-8", "pause_circle"),
    "interrupted": ("interrupted", "deep-orange-7", "restart_alt"),
    "awaiting_acknowledgement": ("awaiting acknowledgement", "orange-8", "savings"),
    "awaiting_clarification": ("awaiting answers", "cyan-8", "help"),
    "awaiting_turn": ("awaiting a person's turn", "teal-8", "edit_note"),
    "error": ("error", "negative", "error"),
    "completed": ("completed", "positive", "check_circle"),
    "stopped": ("stopped", "blue-grey-7", "stop_circle"),
}
# Filter choices on the dashboard: UI status -> machine states.
STATUS_FILTERS: dict[str, list[str]] = {
    "running": sorted(s.value for s in ACTIVE_STATES),
    "paused": [State.PAUSED.value],
    "awaiting_acknowledgement": [State.AWAITING_ACK.value],
    "awaiting_clarification": [State.AWAITING_CLARIFICATION.value],
    "awaiting_turn": [State.AWAITING_TURN.value],
    "error": [State.ERROR.value],
    "completed": [State.COMPLETED.value],
    "stopped": [State.STOPPED.value],
    "idle": [State.IDLE.value],
}


def ui_status(status: str, interrupted: bool = False) -> str:
    if status in STATUS_FILTERS["running"]:
        return "running"
    if status == State.PAUSED.value and interrupted:
        return "interrupted"
    return status if status in STATUS_STYLE else "idle"


def status_badge(status: str, interrupted: bool = False) -> ui.badge:
    shown = ui_status(status, interrupted)
    label, color, icon = STATUS_STYLE[shown]
    badge = ui.badge(color=color).classes("px-2 py-1 text-xs").props("rounded")
    with badge:
        ui.icon(icon).classes("mr-1 text-sm")
        ui.label(label)
    badge.mark(f"status-{shown}")
    return badge


def status_badge_html(status: str, interrupted: bool = False, note: str | None = None) -> tuple[str, str]:
    """The status badge as HTML (with `note`, e.g. why the debate ended, beside it) and its marker: one
    element on a page that follows a debate, where `status_badge` makes three."""
    shown = ui_status(status, interrupted)
    label, color, icon = STATUS_STYLE[shown]
    badge = (f'<span class="q-badge flex inline items-center no-wrap q-badge--single-line q-badge--rounded '
             f'bg-{color} text-white px-2 py-1 text-xs" role="status">'
             f'<i class="q-icon notranslate material-icons mr-1 text-sm" aria-hidden="true">{icon}</i>{label}</span>')
    if note:
        badge += f'<span class="text-xs text-grey-7">{escape(note)}</span>'
    return badge, f"status-{shown}"


def participant_chip(participant: dict[str, Any]) -> None:
    """A coloured dot and the participant's name (text only: names are user input)."""
    with ui.row().classes("items-center gap-1 no-wrap"):
        ui.element("span").classes("rostrum-dot").style(f"background:{safe_color(participant.get('color'))}")
        ui.label(str(participant.get("name") or participant.get("id") or "?")).classes("text-sm")


def safe_color(value: Any) -> str:
    """A CSS colour from user input, or grey: only #rgb/#rrggbb reach a style attribute."""
    text = str(value or "")
    if text.startswith("#") and len(text) in (4, 7) and all(c in "0123456789abcdefABCDEF" for c in text[1:]):
        return text
    return "#94a3b8"


def model_beside(name: str, provider: str, model: str) -> str:
    """The model to show beside a participant's name ("openai:gpt-4o"), or "" when the name already is
    it (a participant named "demo:gamma" is not shown as "demo:gamma (demo:gamma)")."""
    label = f"{provider or '?'}:{model or '?'}"
    return "" if name in (label, model) else label


def money(value: float | None) -> str:
    if value is None:
        return "unpriced"
    if value == 0:
        return "$0"
    if value < 1:
        return f"${value:.4f}"
    return f"${value:,.2f}"
