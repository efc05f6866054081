"""Judges `/judges`: judge health per judge model across every stored debate — parse failures, how
often it picked the side presented first or second, how often its winner flipped when the order was
reversed, and its agreement with the other judges (identical winners and Cohen's kappa).

Computed from the stored verdicts (`webapp.engine.judge_health`), cached until a new verdict.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import Response
from nicegui import ui

from webapp.access.roles import Action, Principal
from webapp.engine.judge_health import RELIABILITY_RULE, HealthReport, JudgeStats, judge_health
from webapp.ui import runtime
from webapp.ui.auth import admit
from webapp.ui.layout import frame, heading
from webapp.wording import counted

EXPLAIN = (
    "Per judge model, over the last verdict of every stored debate. Parse failures: rulings that failed or "
    "needed a repeat request. Picked 1st / 2nd: of the rulings naming a winner, how often it was the participant "
    "presented first or second (a fair judge shows no pattern over many debates). Flipped on swap: rulings whose "
    "winner changed when the order was reversed. Agreement: identical winners with the other judges of the same "
    "debates; kappa discounts the agreement expected by chance (1 = perfect, 0 = chance)."
)


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def judge_row(stats: JudgeStats) -> dict[str, Any]:
    """The table row of one judge, as text."""
    return {
        "judge": stats.judge,
        "debates": stats.debates,
        "rulings": stats.rulings,
        "failures": f"{_pct(stats.failure_rate)} ({stats.failed})",
        "order": f"{_pct(stats.first_rate)} / {_pct(stats.second_rate)} of {stats.ordered}" if stats.ordered else "–",
        "swap": f"{_pct(stats.flip_rate)} ({stats.flipped} of {stats.rejudged})" if stats.rejudged else "–",
        "agreement": f"{_pct(stats.agreement)} of {stats.compared}" if stats.compared else "–",
        "kappa": "–" if stats.kappa is None else f"{stats.kappa:.2f}",
        "people": (f"{_pct(stats.people_agreement)} of {stats.people_debates}, kappa "
                   + ("–" if stats.people_kappa is None else f"{stats.people_kappa:.2f}"))
        if stats.people_debates else "–",
    }


def render_health(report: HealthReport) -> None:
    with ui.card().classes("w-full gap-2").mark("judge-health"):
        heading(f"Judge health over {counted(report.debates, 'judged debate')}", 2) \
            .mark("judge-health-title")
        ui.label(EXPLAIN).classes("text-sm text-grey-7")
        if not report.judges:
            ui.label("No verdicts yet.").classes("text-grey-8").mark("no-judges")
            return
        columns = [
            {"name": "judge", "label": "Judge", "field": "judge", "align": "left", "sortable": True},
            {"name": "debates", "label": "Debates", "field": "debates", "sortable": True},
            {"name": "rulings", "label": "Rulings", "field": "rulings", "sortable": True},
            {"name": "failures", "label": "Parse failures", "field": "failures", "align": "left"},
            {"name": "order", "label": "Picked 1st / 2nd", "field": "order", "align": "left"},
            {"name": "swap", "label": "Flipped on swap", "field": "swap", "align": "left"},
            {"name": "agreement", "label": "Agreement", "field": "agreement", "align": "left"},
            {"name": "kappa", "label": "Kappa", "field": "kappa"},
            {"name": "people", "label": "With the people", "field": "people", "align": "left"},
        ]
        ui.table(columns=columns, rows=[judge_row(j) for j in report.judges], row_key="judge") \
            .props("flat dense").classes("w-full").mark("judges-table")
        for judge, note in report.unreliable_notes().items():
            ui.label(f"{judge}: {note}").classes("text-sm text-amber-800 dark:text-amber-300") \
                .mark("unreliable-judge-row")
        if report.unreliable_notes():
            ui.label(f"Unreliable: more than 20 % parse failures or more than 50 % flips on the side swap, "
                     f"{RELIABILITY_RULE}.").classes("text-xs text-grey-8")
    if report.pairs:
        with ui.card().classes("w-full gap-2").mark("judge-pairs"):
            heading("Pairs of judges on the same debates", 2)
            columns = [
                {"name": "pair", "label": "Judges", "field": "pair", "align": "left"},
                {"name": "debates", "label": "Debates", "field": "debates"},
                {"name": "agreement", "label": "Identical winners", "field": "agreement"},
                {"name": "kappa", "label": "Kappa", "field": "kappa"},
            ]
            rows = [{"pair": f"{p.judges[0]} + {p.judges[1]}", "debates": p.debates, "agreement": _pct(p.agreement),
                     "kappa": "–" if p.kappa is None else f"{p.kappa:.2f}"} for p in report.pairs]
            ui.table(columns=columns, rows=rows, row_key="pair").props("flat dense").classes("w-full") \
                .mark("pairs-table")


async def page(request: Request) -> Response | None:
    engine = await runtime.current().engine()
    admitted = await admit(request, Action.LIST, "see judge health")
    if not isinstance(admitted, Principal):
        return admitted
    report = await judge_health(engine.store).report()
    with frame("/judges", admitted):
        heading("Judges")
        render_health(report)
    return None
