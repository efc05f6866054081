"""Option groups of the new-debate form beyond cast and judge: how the chosen format ends and is
evaluated (shown only for formats that read those settings), and the budget card: the money limits
up front, the word limit, discipline, context, timeout and retry settings under "Advanced".

Every input is registered under its `DebateConfig` path (`timeouts.first_token`, `context.window`…),
so a validation error lands on the field that caused it. A timeout left empty takes the default of
each provider's kind, which its field shows (local servers get far more time than hosted APIs).
"""

from __future__ import annotations

from typing import Any

from nicegui import ui

from webapp.engine.formats import Format
from webapp.models import HOSTED_TIMEOUTS, LOCAL_TIMEOUTS
from webapp.ui.components.form_fields import FormFields, number
from webapp.ui.components.presets import format_options
from webapp.ui.layout import heading

EVALUATIONS = {"quality": "Judge rates the solution's quality", "convergence": "Participants' agreement",
               "fixed": "Fixed number of rounds"}
WORD_LIMIT_ACTIONS = {"truncate": "Cut the turn at the limit", "reject": "Reject the turn and ask again"}
CONTEXT_STRATEGIES = {"truncate": "Truncate oldest turns", "sliding-window": "Sliding window",
                      "summarize": "Summarise older turns"}


def timeout_placeholder(key: str) -> str:
    """What an empty timeout field means: the default of each provider's kind."""
    hosted, local = HOSTED_TIMEOUTS[key], LOCAL_TIMEOUTS[key]
    return f"{hosted:g}" if hosted == local else f"{hosted:g} / local {local:g}"


def timeout_hint(key: str, most: int) -> str:
    hosted, local = HOSTED_TIMEOUTS[key], LOCAL_TIMEOUTS[key]
    default = (f"default {hosted:g} s" if hosted == local
               else f"default {hosted:g} s, {local:g} s for local servers")
    return f"{default}; up to {most}"


def format_settings(form: FormFields, values: dict[str, Any], fmt: Format) -> None:
    """The settings this format reads (see `presets.format_options`); nothing for the others."""
    names = format_options(fmt)
    if not names:
        return
    with ui.row().classes("w-full items-start gap-4").mark("format-settings"):
        if "convergence_threshold" in names:
            form.field("convergence_threshold", number(
                "Convergence threshold", "1–100: stop once the sides agree this much", "w-64", precision=0,
            ).bind_value(values, "convergence_threshold"))
        if "evaluation" in names:
            form.field("evaluation", ui.select(EVALUATIONS, label="Round evaluation").props("outlined dense")
                       .classes("w-72").bind_value(values, "evaluation"))
            threshold = number("Stop at score", "1–100: quality or agreement needed to stop", "w-64", precision=0)
            threshold.bind_visibility_from(values, "evaluation", backward=lambda v: v != "fixed")
            form.field("quality_threshold", threshold.bind_value(values, "quality_threshold"))
        if "questions" in names:
            form.field("questions", number("Cross-examination questions", "1–10 per side", "w-56", precision=0)
                       .bind_value(values, "questions"))
        if "show_preparation" in names:
            form.field("show_preparation", ui.switch("Show private preparation")
                       .bind_value(values, "show_preparation"))
        if "clarification" in names:
            with ui.column().classes("gap-1"):
                form.field("clarification", ui.switch("Let participants ask me questions first")
                           .bind_value(values, "clarification"))
                with ui.row().classes("gap-2").bind_visibility_from(values, "clarification"):
                    form.field("clarification_questions", number(
                        "Questions per participant", "0–10; 0 = none", "w-52", precision=0,
                    ).bind_value(values, "clarification_questions"))
                    form.field("clarification_iterations", number(
                        "Question rounds", "1–10 rounds of follow-ups", "w-44", precision=0,
                    ).bind_value(values, "clarification_iterations"))


def limits_card(form: FormFields, values: dict[str, Any]) -> None:
    """The money limits up front; word limit, discipline, context, timeouts and retries under "Advanced"."""
    budget = values["budget"]
    with ui.card().classes("w-full gap-1 p-3"):
        heading("Budget", 2)
        # No min/max on these numbers: the browser would clamp what was typed; a value out of range is
        # an error shown at its field instead. No display format either: NiceGUI rounds the value itself
        # to the format on blur ("%.2f" made a warn-at of $0.005 into $0.01), and prices need fractions
        # of a cent.
        with ui.row().classes("w-full items-start gap-2"):
            warn = ui.number("Warn at (USD)", step=0.01) \
                .props('outlined dense prefix="$" hint="pause and ask at this spend"').classes("w-56")
            form.field("budget.warn_at", warn.bind_value(budget, "warn_at"))
            limit = ui.number("Hard limit (USD)", step=0.01) \
                .props('outlined dense prefix="$" hint="never crossed: answers are cut"').classes("w-56")
            form.field("budget.cost_limit", limit.bind_value(budget, "cost_limit"))
        with form.section("Advanced: word limit, discipline and context", "rule",
                          ("word_limit", "strict", "context", "seed"), "section-discipline"), \
                ui.row().classes("w-full items-start gap-4"):
            form.field("word_limit", number("Word limit", "empty = each phase's own limit", "w-44", precision=0)
                       .bind_value(values, "word_limit"))
            form.field("word_limit_action", ui.select(WORD_LIMIT_ACTIONS, label="Over the word limit")
                       .props("outlined dense").classes("w-64").bind_value(values, "word_limit_action"))
            form.field("strict", ui.switch("Flag off-topic turns (strict mode)").bind_value(values, "strict"))
            context = values["context"]
            form.field("context.strategy", ui.select(CONTEXT_STRATEGIES, label="When history outgrows the context")
                       .props("outlined dense").classes("w-64").bind_value(context, "strategy"))
            window = number("Window (turns)", "1–100 most recent turns kept", "w-44", precision=0)
            window.bind_visibility_from(context, "strategy", value="sliding-window")
            form.field("context.window", window.bind_value(context, "window"))
            form.field("seed", number("Seed", "shuffles the labels the judge sees", "w-56", precision=0)
                       .bind_value(values, "seed"))
        with form.section("Advanced: timeouts and retries", "timer", ("timeouts", "max_retries"), "section-timeouts"), \
                ui.row().classes("w-full items-start gap-2"):
            timeouts = values["timeouts"]
            for key, label, most in (("connect", "Connect timeout (s)", 300),
                                     ("first_token", "First token timeout (s)", 900),
                                     ("turn", "Turn timeout (s)", 3600)):
                form.field(f"timeouts.{key}", number(label, timeout_hint(key, most), "w-64")
                           .props(f'placeholder="{timeout_placeholder(key)}"').bind_value(timeouts, key))
            form.field("max_retries", number("Retries per debate", "0–20 automatic retries", "w-44", precision=0)
                       .bind_value(values, "max_retries"))
