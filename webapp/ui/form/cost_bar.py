"""The sticky action bar of the new-debate and new-tournament forms: what starting will cost (an
estimated range, `engine.estimate`), a note on what the estimate counts, and Start (and Reset).

The bar only shows; an estimator says what. `DebateCost` estimates one debate, and recomputes only
when what the cost depends on changed (participants, format, rounds, judge, limits), never on a
keystroke in the topic.
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
# (what it costs, what that counts), or None: nothing changed since the estimator was last asked.
Estimator = Callable[[], tuple[str, str] | None]


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


class DebateCost:
    """The estimate of the debate the form describes."""

    def __init__(self, form: dict[str, Any]) -> None:
        self.form = form
        self._key = ""  # what the last estimate was computed from

    def __call__(self) -> tuple[str, str] | None:
        data = form_to_config(self.form)
        key = json.dumps({k: v for k, v in data.items() if k != "topic"}, sort_keys=True, default=str)
        if key == self._key:
            return None
        self._key = key
        data["topic"] = data["topic"] or self.form.get("sample_topic") or TOPIC_PLACEHOLDER
        try:
            estimate = estimate_debate(DebateConfig.model_validate(data))
        except (ValidationError, KeyError, ValueError):
            return "Estimated cost: shown once the form is valid", ""
        return f"Estimated cost: {estimate.label}", estimate_basis(estimate)


class ActionBar:
    """Sticky at the bottom of the window: the estimated cost, Reset (where the form has one) and Start."""

    def __init__(self, estimator: Estimator, submit: Callable[[], Awaitable[None]], start: tuple[str, str],
                 reset: Callable[[], None] | None = None) -> None:
        self.estimator = estimator
        with ui.row().classes("w-full items-center gap-2 no-wrap rostrum-action-bar") \
                .props('role="region" aria-label="Cost and start"').mark("action-bar"):
            with ui.column().classes("gap-0 min-w-0 shrink"):
                self.label = ui.label("Estimated cost: …").classes("font-medium").mark("cost-estimate")
                self.note = ui.label("").classes("text-xs text-grey-8 rostrum-collapse-sm") \
                    .mark("cost-estimate-note")
            ui.space()
            self.kept_note = ui.row().classes("items-center rostrum-collapse-sm")
            if reset is not None:
                ui.button("Reset form", icon="restart_alt", on_click=reset) \
                    .props('flat dense no-caps no-wrap aria-label="Reset form"') \
                    .classes("rostrum-icon-sm shrink-0").mark("reset-form")
            text, icon = start
            self.start_button = ui.button(text, icon=icon, on_click=submit) \
                .props("unelevated no-caps no-wrap").classes("shrink-0").mark("start")

    def update(self) -> None:
        """Show the estimator's figures, if they changed."""
        if self.label.is_deleted:
            return
        shown = self.estimator()
        if shown is not None:
            self.label.text, self.note.text = shown
