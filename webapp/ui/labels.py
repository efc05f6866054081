"""How the pages and the live stream label values: a debate's status (its words, Quasar colour and
icon), money, a participant's colour and model. Plain functions of values, no NiceGUI element, so the
components and the live broadcast (`ui/live/`) both import them from below."""

from __future__ import annotations

from typing import Any

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
