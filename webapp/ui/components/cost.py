"""Cost meter: total, progress toward the hard limit, per model, tokens; warns at the threshold."""

from __future__ import annotations

from nicegui import ui

from webapp.engine.public import DebateState
from webapp.ui.components.badges import money


def cost_signature(state: DebateState) -> tuple:
    ledger = state.ledger
    return (round(ledger.total_usd, 8), tuple(sorted(ledger.by_model.items())), tuple(sorted(ledger.unpriced_models)),
            state.cost_warned, len(state.warnings))


def render_cost(state: DebateState) -> None:
    ledger, budget = state.ledger, state.config.budget
    total = ledger.total_usd
    warned = state.cost_warned or (budget.warn_at is not None and total >= budget.warn_at)
    card = ui.card().classes("w-full gap-2").mark("cost-meter")
    if warned:
        card.classes("border-2 border-orange-500")
    with card:
        with ui.row().classes("w-full items-center justify-between"):
            ui.label("Cost").classes("text-base font-semibold")
            if warned:
                ui.badge("warning threshold reached", color="orange-8").mark("cost-warning")
        with ui.row().classes("items-baseline gap-2"):
            ui.label(money(total)).classes("text-2xl font-mono font-semibold").mark("cost-total")
            if ledger.simulated:
                ui.label("simulated demo prices").classes("text-xs text-grey-6")
        if ledger.unpriced_models:
            ui.label("unpriced: " + ", ".join(sorted(ledger.unpriced_models))).classes("text-xs text-orange-8") \
                .mark("unpriced")
        if budget.cost_limit:
            ratio = min(1.0, total / budget.cost_limit)
            color = "negative" if ratio >= 1 else "warning" if warned else "primary"
            ui.linear_progress(value=ratio, show_value=False, color=color).props("rounded size=10px") \
                .mark("cost-progress")
            line = f"{money(total)} of {money(budget.cost_limit)} limit"
            if budget.warn_at is not None:
                line += f" · warns at {money(budget.warn_at)}"
            ui.label(line).classes("text-xs text-grey-7")
        elif budget.warn_at is not None:
            ui.label(f"warns at {money(budget.warn_at)} · no hard limit").classes("text-xs text-grey-7")
        if ledger.by_model:
            with ui.column().classes("w-full gap-0"):
                for model, usd in sorted(ledger.by_model.items()):
                    tokens = ledger.tokens_by_model.get(model, {})
                    with ui.row().classes("w-full justify-between text-xs no-wrap"):
                        ui.label(model).classes("font-mono truncate")
                        priced = model not in ledger.unpriced_models
                        ui.label(f"{tokens.get('input_tokens', 0):,} in · {tokens.get('output_tokens', 0):,} out · "
                                 f"{money(usd if priced else None)}").classes("font-mono text-grey-7")
