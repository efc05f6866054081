"""Leaderboard `/leaderboard`: which model argues best, over every completed, judged debate.

Bradley-Terry ratings with 95% bootstrap intervals (a chart with interval bars, and the ratings over
time), the same fit with the word-count difference as a covariate ("style-controlled": is verbosity
buying wins?), and the head-to-head matrix: click a cell for the list of those debates. Filters: format,
topic tag, judge model, dates, and side-swapped series only (each rated once, as a pair).

Computed by `webapp.results.leaderboard` (cached until a verdict is stored). `render_leaderboard(board)`
draws a computed board on any page (a tournament's, say). Model names and topics are user input: they
are set as text (never parsed as HTML) and the charts' tooltips are canvas rich text.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from nicegui import background_tasks, ui

from webapp.access.roles import Action, Principal
from webapp.engine.formats import FORMATS
from webapp.engine.judge_health import RELIABILITY_RULE, unreliable_judges
from webapp.results.head_to_head import PairRecord
from webapp.results.leaderboard import (
    MIN_FOR_STYLE,
    Leaderboard,
    LeaderboardFilters,
    ModelRating,
    PairWords,
    choices,
    leaderboard,
)
from webapp.ui import runtime
from webapp.ui.auth import admit
from webapp.ui.components.badges import money
from webapp.ui.components.charts import TIME_LABELS, chart
from webapp.ui.components.deferred import after_connect
from webapp.ui.layout import frame, heading
from webapp.wording import counted

MUTED = "text-slate-600 dark:text-slate-400"
_TOOLTIP = {"renderMode": "richText"}  # model names are user input: never HTML in a tooltip
EXPLAIN = ("Bradley-Terry ratings (Elo-like scale: a 400-point gap means 10-to-1 odds) fitted over completed, judged "
           "debates between two models; a tie counts as half a win. The interval is a 95% bootstrap interval "
           "over debates: wide when a model has few debates.")
STYLE_EXPLAIN = ("The same fit with the difference in words spoken as a covariate: the ratings once verbosity is "
                 "accounted for. Length effect > 0 means the longer side tends to win whatever the model.")


# --- pure parts --------------------------------------------------------------------------------


def rating_rows(lines: list[ModelRating]) -> list[dict[str, Any]]:
    """The ratings table's rows, as text."""
    return [{"rank": r.rank, "model": r.model, "rating": f"{r.rating:.0f}", "interval": f"{r.low:.0f}–{r.high:.0f}",
             "debates": r.debates, "record": f"{r.wins}–{r.losses}–{r.ties}", "cost": money(r.avg_cost_usd)}
            for r in lines]


def interval_chart(lines: list[ModelRating]) -> dict[str, Any]:
    """Ratings as points with their 95% intervals as bars (an invisible bar up to the low end, stacked
    under a visible one from low to high), best at the top."""
    ordered = list(reversed(lines))
    floor = min((r.low for r in lines), default=1000.0)
    floor = float(int(floor // 50) * 50 - 50)
    return {
        "tooltip": {**_TOOLTIP, "trigger": "item"},
        "grid": {"left": 8, "right": 24, "top": 16, "bottom": 24, "containLabel": True},
        "xAxis": {"type": "value", "min": floor, "scale": True},
        "yAxis": {"type": "category", "data": [r.model for r in ordered]},
        "series": [
            {"type": "bar", "stack": "interval", "silent": True, "itemStyle": {"color": "transparent"},
             "data": [r.low for r in ordered], "barWidth": 10},
            {"type": "bar", "stack": "interval", "name": "95% interval", "itemStyle": {"color": "#93c5fd"},
             "data": [round(r.high - r.low, 1) for r in ordered], "barWidth": 10},
            {"type": "scatter", "name": "Rating", "itemStyle": {"color": "#2563eb"}, "symbolSize": 10,
             "data": [r.rating for r in ordered]},
        ],
    }


def history_chart(board: Leaderboard) -> dict[str, Any]:
    """Each model's rating after each of a few moments (point fits on the debates so far)."""
    models = [r.model for r in board.ratings]
    return {
        "tooltip": {**_TOOLTIP, "trigger": "axis"},
        "legend": {"top": 0, "type": "scroll"},
        "grid": {"left": 8, "right": 24, "top": 36, "bottom": 24, "containLabel": True},
        "xAxis": {"type": "time", "axisLabel": TIME_LABELS},  # dates never print over each other
        "yAxis": {"type": "value", "scale": True},
        "series": [{"type": "line", "name": m, "showSymbol": True,
                    "data": [[p.at.isoformat(), p.ratings[m]] for p in board.history if m in p.ratings]}
                   for m in models],
    }


def cell_text(pair: PairRecord | None, model: str) -> str:
    """A matrix cell: the row model's wins–losses–ties against the column model."""
    if pair is None:
        return "–"
    wins, losses, ties = pair.seen_from(model)
    return f"{wins}–{losses}–{ties}"


# --- rendering ---------------------------------------------------------------------------------


def _table(lines: list[ModelRating], marker: str) -> None:
    columns = [
        {"name": "rank", "label": "#", "field": "rank", "align": "right"},
        {"name": "model", "label": "Model", "field": "model", "align": "left"},
        {"name": "rating", "label": "Rating", "field": "rating"},
        {"name": "interval", "label": "95% interval", "field": "interval"},
        {"name": "debates", "label": "Debates", "field": "debates"},
        {"name": "record", "label": "W–L–T", "field": "record"},
        # The whole debate's cost (both sides and the judges): the store keeps no per-side cost.
        {"name": "cost", "label": "Avg cost / debate (whole debate)", "field": "cost"},
    ]
    ui.table(columns=columns, rows=rating_rows(lines), row_key="model").props("flat dense") \
        .classes("w-full").mark(marker)


class HeadToHead:
    """The matrix of pairs; a click on a cell lists its debates below it."""

    def __init__(self, board: Leaderboard) -> None:
        self.board = board
        self.models = [r.model for r in board.ratings]
        with ui.card().classes("w-full gap-2").mark("head-to-head"):
            heading("Head to head", 2)
            ui.label("Wins–losses–ties of the row's model against the column's; the share of those debates where "
                     "the judge panel split. Choose a cell for its debates.").classes(f"text-sm {MUTED}")
            with ui.element("div").classes("w-full overflow-x-auto"):
                self._matrix()
            self.detail = ui.column().classes("w-full gap-1").mark("h2h-detail")

    def _matrix(self) -> None:
        n = len(self.models)
        with ui.element("div").classes("grid gap-1 text-sm").style(
                f"grid-template-columns: minmax(8rem, auto) repeat({n}, minmax(6rem, 1fr))").mark("h2h-matrix"):
            ui.label("")
            for model in self.models:
                header = ui.label(model).classes("font-medium truncate")
                header.props["title"] = model  # set as a value, never parsed
            for row_index, row in enumerate(self.models):
                ui.label(row).classes("font-medium truncate")
                for col_index, col in enumerate(self.models):
                    if row == col:
                        ui.label("").classes("bg-slate-500/10 rounded")
                        continue
                    pair = self.board.pair(row, col)
                    text = cell_text(pair, row)
                    if pair is None:
                        ui.label(text).classes(f"text-center {MUTED}")
                        continue
                    split = f" · split {pair.split_share:.0%}" if pair.split else ""
                    button = ui.button(text + split, on_click=lambda r=row, c=col: self.show(r, c)) \
                        .props("flat dense no-caps").classes("tabular-nums") \
                        .mark(f"h2h-cell-{row_index}-{col_index}")
                    button.props["aria-label"] = f"{row} against {col}: {text}{split}"

    def show(self, row: str, col: str) -> None:
        pair = self.board.pair(row, col)
        self.detail.clear()
        if pair is None:
            return
        wins, losses, ties = pair.seen_from(row)
        with self.detail:
            ui.label(f"{row} against {col}: {wins} won, {losses} lost, {ties} tied").classes("font-medium") \
                .mark("h2h-detail-title")
            ui.label(f"The judge panel split in {pair.split} of {pair.total} ({pair.split_share:.0%})") \
                .classes(f"text-sm {MUTED}").mark("h2h-detail-split")
            for debate_id in reversed(pair.debates):
                brief = self.board.brief(debate_id)
                if brief is None:
                    continue
                score = brief.score if brief.a == row else 1 - brief.score
                result = "won" if score > 0.5 else "lost" if score < 0.5 else "tied"
                with ui.row().classes("items-center gap-2 no-wrap w-full").mark(f"h2h-debate-{debate_id}"):
                    ui.label(f"{row} {result}").classes("shrink-0 w-40 truncate")
                    ui.link(brief.topic, f"/debate/{debate_id}").classes("truncate rostrum-topic") \
                        .mark("h2h-debate-link")
                    if brief.split:
                        ui.label("panel split").classes(f"text-xs {MUTED} shrink-0")
                    ui.label(brief.created_at.strftime("%Y-%m-%d")).classes(f"text-xs {MUTED} shrink-0")


def pair_lines(words: list[PairWords]) -> None:
    """The board's conclusions in plain words, one line per pair (a clear one in bold)."""
    with ui.column().classes("gap-0").mark("pair-words"):
        for line in words:
            ui.label(line.words).classes("text-sm" + (" font-medium" if line.clear else ""))


def render_leaderboard(board: Leaderboard, style: bool = False, words: bool = True) -> None:
    """A computed board: ratings (plain or style-controlled) with their chart, ratings over time and the
    head-to-head matrix. Usable on any page (`words=False`: the page says the pairs in words elsewhere)."""
    with ui.card().classes("w-full gap-2").mark("leaderboard"):
        title = "Style-controlled ratings" if style else "Ratings"
        heading(f"{title} over {counted(board.comparisons, board.unit)}", 2).mark("leaderboard-title")
        ui.label(STYLE_EXPLAIN if style else EXPLAIN).classes(f"text-sm {MUTED}")
        if not board.ratings:
            ui.label("No rated debates yet: finished, judged debates between two different models count here.") \
                .mark("no-ratings")
            return
        lines = board.style.ratings if style else board.ratings
        if style and board.style.length_effect is not None:
            s = board.style
            ui.label(f"Length effect {s.length_effect:+.2f} (95% {s.length_low:+.2f} to {s.length_high:+.2f}) "
                     "on the log-odds of winning, per unit of normalised word-count difference.") \
                .classes("text-sm font-medium").mark("length-effect")
        elif style:  # a fit on a handful of debates (or none with any spread) is not a result
            ui.label(f"Length effect: too few debates (n = {board.comparisons}); it is estimated from "
                     f"{MIN_FOR_STYLE} on.").classes("text-sm font-medium").mark("length-effect")
        if not style and words:
            pair_lines(board.words)
        _table(lines, "style-table" if style else "ratings-table")
        options = interval_chart(lines)
        height = f"h-[{max(160, 40 * len(lines) + 60)}px]"
        after_connect(lambda: chart(options).classes(f"w-full {height}").mark("ratings-chart"), f"w-full {height}")
    if len(board.history) > 1:
        with ui.card().classes("w-full gap-2").mark("rating-history"):
            heading("Ratings over time", 2)
            history = history_chart(board)
            after_connect(lambda: chart(history).classes("w-full h-72").mark("history-chart"), "w-full h-72")
    HeadToHead(board)


class LeaderboardView:
    """One tab's filters and the board they select."""

    def __init__(self) -> None:
        self.filters = LeaderboardFilters()
        self.style = False
        self.options_set = False
        with ui.row().classes("w-full items-center gap-3").mark("leaderboard-filters"):
            self.format = self._select("Format", "filter-format")
            self.tag = self._select("Topic tag", "filter-tag")
            self.judge = self._select("Judge", "filter-judge")
            self.since = ui.input("From").props("type=date outlined dense clearable").mark("filter-since")
            self.until = ui.input("To").props("type=date outlined dense clearable").mark("filter-until")
            self.series = ui.switch("Side-swapped series only").mark("filter-series")
            # Who decides each debate: the AI judges, the audience's swing, or the people's verdicts.
            self.rated_by = ui.select(
                {"judges": "AI judges", "audience": "Audience vote", "people": "People's verdicts"},
                label="Rated by", value="judges").props("outlined dense") \
                .classes("min-w-[160px]").mark("filter-rated-by")
            self.style_switch = ui.switch("Style-controlled").mark("style-control")
        # A judge whose record says its verdicts cannot be trusted is marked in the filter, with the figure.
        self.unreliable: dict[str, str] = {}
        self.judge_note = ui.label("").classes("text-sm text-amber-800 dark:text-amber-300") \
            .mark("judge-filter-note")
        self.judge_note.set_visibility(False)
        for element in (self.format, self.tag, self.judge, self.since, self.until, self.series, self.rated_by):
            element.on_value_change(self.apply)
        self.style_switch.on_value_change(self.apply)
        self.container = ui.column().classes("w-full gap-3")

    @staticmethod
    def _select(label: str, marker: str) -> ui.select:
        return ui.select({}, label=label, value=None, clearable=True).props("outlined dense") \
            .classes("min-w-[160px]").mark(marker)

    def set_options(self, options: dict[str, list[str]], unreliable: dict[str, str] | None = None) -> None:
        """What the filters offer: the formats, tags and judges of the rated debates (an unreliable judge
        with its note, from judge health)."""
        self.unreliable = unreliable or {}
        self.format.set_options({f: FORMATS[f].title if f in FORMATS else f for f in options["formats"]})
        self.tag.set_options({t: t for t in options["tags"]})
        self.judge.set_options({j: f"{j} — {self.unreliable[j]}" if j in self.unreliable else j
                                for j in options["judges"]})
        self.options_set = True
        self._judge_note()

    def _judge_note(self) -> None:
        """The note under the filters while an unreliable judge is chosen."""
        judge = self.judge.value
        note = self.unreliable.get(judge) if judge else None
        self.judge_note.text = f"{judge}: {note}. Ratings judged by it may not mean much ({RELIABILITY_RULE})." \
            if note else ""
        self.judge_note.set_visibility(bool(note))

    def _filters(self) -> LeaderboardFilters:
        return LeaderboardFilters(format=self.format.value or None, tag=self.tag.value or None,
                                  judge=self.judge.value or None, since=_date(self.since.value),
                                  until=_date(self.until.value), series_only=bool(self.series.value),
                                  rated_by=self.rated_by.value or "judges")

    async def apply(self) -> None:
        self._judge_note()
        self.filters = self._filters()
        self.style = bool(self.style_switch.value)
        await self.load()

    async def load(self) -> None:
        engine = await runtime.current().engine()
        if not self.options_set:  # read with the first board, not before the page answers
            self.set_options(await choices(engine.store), await unreliable_judges(engine.store))
        filters = self.filters
        board = await leaderboard(engine.store, filters)
        if self.container.is_deleted or filters != self.filters:  # gone, or filters changed meanwhile
            return
        self.container.clear()
        with self.container:
            render_leaderboard(board, self.style)


def _date(value: Any) -> date | None:
    try:
        return date.fromisoformat(str(value)) if value else None
    except ValueError:
        return None  # a half-typed date: no filter yet


async def page(request: Request) -> Response | None:
    await runtime.current().engine()  # started (or its failure shown) before anything else, as on /judges
    admitted = await admit(request, Action.LIST, "see the leaderboard")
    if not isinstance(admitted, Principal):
        return admitted
    with frame("/leaderboard", admitted):
        heading("Leaderboard")
        view = LeaderboardView()
        with view.container, ui.row().classes("items-center gap-2").mark("leaderboard-computing"):
            ui.spinner(size="1.5em")
            ui.label("Computing the ratings…").classes(MUTED)
        # The page answers at once; the board (a fit with its bootstrap, the first time the numerical
        # libraries' import too) follows when the tab connects.
        after_connect(lambda: background_tasks.create(view.load(), name="leaderboard"), "hidden")
    return None

