"""Status badges and participant chips, shared by the dashboard and the debate page."""

from __future__ import annotations

from html import escape
from typing import Any

from nicegui import ui

# The labels themselves live below the components (the live stream sends them too); the components, the
# pages and the API import them from here.
from webapp.ui.labels import STATUS_FILTERS, STATUS_STYLE, model_beside, money, safe_color, ui_status

__all__ = ["STATUS_FILTERS", "STATUS_STYLE", "model_beside", "money", "participant_chip", "safe_color",
           "status_badge", "status_badge_html", "ui_status"]


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
