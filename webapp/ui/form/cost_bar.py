"""The new-debate form's sticky action bar: the debate's estimated cost range (`engine.estimate`), a
note on what the estimate counts, "Kept in this tab", Reset and Start.

The estimate is recomputed only when what the cost depends on changed (participants, format, rounds,
judge, limits), never on a keystroke in the topic.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from nicegui import ui
from pydantic import ValidationError

from webapp.engine.estimate import LOW_TURN_TOKENS, DebateEstimate, estimate_debate
from webapp.models import DebateConfig
from webapp.ui.components.presets import form_to_config
from webapp.wording import noun

TOPIC_PLACEHOLDER = "e.g. Should cities ban private cars?"


def counts(low: int, high: int) -> str:
    """'7' or '5–7'."""
    return f"{high}" if low == high else f"{low}–{high}"


def estimate_basis(estimate: DebateEstimate) -> str:
    """What the estimate counts: turns and judge calls, from short answers to full ones."""
    turns = f"{counts(estimate.turns_low, estimate.turns_high)} {noun(estimate.turns_high, 'turn')}"
    calls = (f"{counts(estimate.judge_calls_low, estimate.judge_calls_high)} "
             f"{noun(estimate.judge_calls_high, 'judge call')}")
    if estimate.free:
        return f"{turns}, {calls}; demo and local models cost nothing"
    return (f"{turns}, {calls}; from short answers ({LOW_TURN_TOKENS} tokens) to full ones (each turn's max "
            "tokens or word limit)")


class ActionBar:
    """Sticky at the bottom of the window: the estimated cost of the whole debate, Reset and Start."""

    def __init__(self, form: dict[str, Any], reset: Callable[[], None],
                 submit: Callable[[], Awaitable[None]]) -> None:
        self.form = form
        self._key = ""  # what the shown estimate was computed from
        with ui.row().classes("w-full items-center gap-2 no-wrap rostrum-action-bar") \
                .props('role="region" aria-label="Cost and start"').mark("action-bar"):
            with ui.column().classes("gap-0 min-w-0 shrink"):
                self.label = ui.label("Estimated cost: …").classes("font-medium").mark("cost-estimate")
                self.note = ui.label("").classes("text-xs text-grey-8 rostrum-collapse-sm") \
                    .mark("cost-estimate-note")
            ui.space()
            self.kept_note = ui.row().classes("items-center rostrum-collapse-sm")
            ui.button("Reset form", icon="restart_alt", on_click=reset) \
                .props('flat dense no-caps no-wrap aria-label="Reset form"').classes("rostrum-icon-sm shrink-0") \
                .mark("reset-form")
            self.start_button = ui.button("Start debate", icon="play_arrow", on_click=submit) \
                .props("unelevated no-caps no-wrap").classes("shrink-0").mark("start")

    def update(self) -> None:
        """Re-estimate, if what the cost depends on changed since the last time."""
        if self.label.is_deleted:
            return
        data = form_to_config(self.form)
        key = json.dumps({k: v for k, v in data.items() if k != "topic"}, sort_keys=True, default=str)
        if key == self._key:
            return
        self._key = key
        data["topic"] = data["topic"] or self.form.get("sample_topic") or TOPIC_PLACEHOLDER
        try:
            estimate = estimate_debate(DebateConfig.model_validate(data))
        except (ValidationError, KeyError, ValueError):
            self.label.text = "Estimated cost: shown once the form is valid"
            self.note.text = ""
            return
        self.label.text = f"Estimated cost: {estimate.label}"
        self.note.text = estimate_basis(estimate)
