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

# Below this many debates compared, agreement and kappa are not figures: one debate gives 0 % or 100 %
# and a kappa of 0.00 or 1.00 that say nothing of the judge.
MIN_COMPARED = 5
EXPLAIN = (
    "Per judge model, over the last verdict of every stored debate. Parse failures: rulings that failed or "
    "needed a repeat request. Winner presented: of the rulings naming a winner, how often it was the participant "
    "presented first, second or later (ties are counted apart; a fair judge shows no pattern over many "
    "debates). Flipped on swap: rulings whose "
    "winner changed when the order was reversed. Agreement: identical winners with the other judges of the same "
    f"debates; kappa discounts the agreement expected by chance (1 = perfect, 0 = chance). Below {MIN_COMPARED} "
    "debates compared, agreement and kappa say \"too few debates\" instead of a figure."
)


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def too_few(n: int) -> str:
    return f"too few debates (n = {n})"


def whole_shares(counts: list[int]) -> list[int]:
    """Percentages of `counts` that add up to 100 (largest remainders), so a row's parts are its whole."""
    total = sum(counts)
    if not total:
        return [0 for _ in counts]
    exact = [100 * c / total for c in counts]
    floors = [int(e) for e in exact]
    for i in sorted(range(len(counts)), key=lambda k: exact[k] - floors[k], reverse=True)[:100 - sum(floors)]:
        floors[i] += 1
    return floors


def order_text(stats: JudgeStats) -> str:
    """"59 % 1st, 35 % 2nd, 6 % later (of 17); 2 ties": the parts add up, and the rest is named."""
    if not stats.ordered:
        return "–"
    later = max(0, stats.ordered - stats.picked_first - stats.picked_second)
    shares = whole_shares([stats.picked_first, stats.picked_second, later])
    text = f"{shares[0]} % 1st, {shares[1]} % 2nd" + (f", {shares[2]} % later" if later else "") + \
        f" (of {stats.ordered})"
    return text + (f"; {stats.ties} tie{'s' if stats.ties != 1 else ''} not counted" if stats.ties else "")


def judge_row(stats: JudgeStats) -> dict[str, Any]:
    """The table row of one judge, as text."""
    enough = stats.compared >= MIN_COMPARED
    return {
        "judge": stats.judge,
        "debates": stats.debates,
        "rulings": stats.rulings,
        "failures": f"{_pct(stats.failure_rate)} ({stats.failed})",
        "order": order_text(stats),
        "swap": f"{_pct(stats.flip_rate)} ({stats.flipped} of {stats.rejudged})" if stats.rejudged else "–",
        "agreement": "–" if not stats.compared else too_few(stats.compared) if not enough else
        f"{_pct(stats.agreement)} of {stats.compared}",
        "kappa": "–" if not stats.compared else too_few(stats.compared) if not enough else
        "–" if stats.kappa is None else f"{stats.kappa:.2f}",
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
        columns: list[dict[str, Any]] = [
            {"name": "judge", "label": "Judge", "field": "judge", "align": "left", "sortable": True},
            {"name": "debates", "label": "Debates", "field": "debates", "sortable": True},
            {"name": "rulings", "label": "Rulings", "field": "rulings", "sortable": True},
            {"name": "failures", "label": "Parse failures", "field": "failures", "align": "left"},
            {"name": "order", "label": "Winner presented", "field": "order", "align": "left"},
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
            rows = [{"pair": f"{p.judges[0]} + {p.judges[1]}", "debates": p.debates,
                     "agreement": _pct(p.agreement) if p.debates >= MIN_COMPARED else too_few(p.debates),
                     "kappa": too_few(p.debates) if p.debates < MIN_COMPARED else
                     "–" if p.kappa is None else f"{p.kappa:.2f}"} for p in report.pairs]
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
