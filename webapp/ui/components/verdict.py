"""The verdict card (winner, score chart per participant and criterion, reasoning, panel rulings,
synthesis) and the per-round score chart. Rendered from state, whatever the engine filled in."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from typing import Any

from nicegui import ui

from webapp.engine.judge_health import RELIABILITY_RULE
from webapp.engine.panel import DISAGREEMENT_MEANING, SPLIT_RULE, decided_winner
from webapp.engine.public import DebateState
from webapp.models import JudgeRuling, Verdict
from webapp.settings import image_hosts
from webapp.ui.components.badges import safe_color
from webapp.ui.components.charts import chart
from webapp.ui.components.deferred import after_connect
from webapp.ui.components.html_parts import HtmlParts, dot, icon
from webapp.ui.components.safe_markdown import render as markdown_html
from webapp.ui.components.safe_markdown import safe_markdown
from webapp.wording import counted

NEUTRAL = "#94a3b8"  # the colour of a participant the cast does not know
MARKDOWN_EXTRAS = "fenced-code-blocks tables"  # as `ui.markdown`'s defaults
# Tooltips as canvas rich text: participant names are user input and must never become HTML.
_TOOLTIP = {"trigger": "axis", "renderMode": "richText"}


@lru_cache(maxsize=64)
def _reasoning_html(text: str, hosts: frozenset[str]) -> str:
    """A judge's reasoning as sanitised HTML: once per verdict, however many pages show it."""
    return markdown_html(text, MARKDOWN_EXTRAS, hosts)


def _names(state: DebateState) -> dict[str, tuple[str, str]]:
    return {p.id: (p.name, safe_color(p.color)) for p in state.config.participants}


def _ordered(state: DebateState, pids: object) -> list[str]:
    """Participant ids in the order of the debate's cast (then any unknown ones)."""
    wanted = list(pids)  # type: ignore[call-overload]
    cast = [p.id for p in state.config.participants if p.id in wanted]
    return cast + [pid for pid in wanted if pid not in cast]


def score_chart_html(state: DebateState, verdict: Verdict) -> str:
    """The scores per criterion and overall as a table of bars in HTML: a chart element (ECharts) kept
    a full observable copy of its options on every spectator's page, built by all of them at once."""
    names = _names(state)
    pids = _ordered(state, verdict.scores)
    cast = {pid: names.get(pid, (pid, NEUTRAL)) for pid in pids}
    head = "".join(f'<th scope="col">{dot(color)} {escape(name)}</th>' for name, color in cast.values())
    rows = []
    for criterion in [*verdict.criteria, None]:
        cells = []
        for pid in pids:
            if criterion is None:
                score: float | None = verdict.scores[pid]
            else:
                found = verdict.criteria[criterion].get(pid)
                score = found.score if found is not None else None
            if score is None:
                cells.append("<td>–</td>")
                continue
            width = max(0.0, min(100.0, float(score)))
            # Few bytes a cell: this card goes to every spectator at once (the bar is CSS, styles.css).
            cells.append(f'<td><span style="--w:{width:g}%;--c:{cast[pid][1]}"></span>{score:g}</td>')
        label = "Overall" if criterion is None else criterion
        rows.append(f'<tr><th scope="row">{escape(label)}</th>{"".join(cells)}</tr>')
    return (f'<table class="rostrum-scores" data-mark="score-chart">'
            f'<caption class="sr-only">Scores out of 100 per criterion and overall</caption>'
            f'<thead><tr><th scope="col"><span class="sr-only">Criterion</span></th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def round_chart_options(state: DebateState) -> dict[str, Any]:
    names = _names(state)
    rounds = [r.round for r in state.round_scores]
    scored = {pid for r in state.round_scores for pid in r.scores}
    pids = _ordered(state, scored)
    series = []
    for pid in pids:
        name, color = names.get(pid, (pid, NEUTRAL))
        series.append({"name": name, "type": "line", "smooth": True, "itemStyle": {"color": color},
                       "data": [r.scores.get(pid) for r in state.round_scores]})
    return {
        "tooltip": _TOOLTIP,
        "legend": {"top": 0},
        "grid": {"left": 40, "right": 16, "top": 36, "bottom": 30},
        "xAxis": {"type": "category", "data": [f"Round {n}" for n in rounds]},
        "yAxis": {"type": "value", "min": 0, "max": 100},
        "series": series,
    }


def render_round_scores(state: DebateState) -> None:
    if not state.round_scores:
        return
    with ui.card().classes("w-full").mark("round-scores"):
        ui.label("Scores per round").classes("text-base font-semibold")
        options = round_chart_options(state)
        after_connect(lambda: chart(options).classes("w-full h-64").mark("round-chart"), "w-full h-64")


def _name(state: DebateState, pid: str | None) -> str:
    if pid is None:
        return "Tie"
    return _names(state).get(pid, (pid, ""))[0]


@dataclass(frozen=True)
class PanelTally:
    """How a panel's judges voted: picks per winner (None for a tie), most first."""

    judges: int
    picks: tuple[tuple[str | None, int], ...]

    @property
    def unanimous(self) -> bool:
        return len(self.picks) == 1

    @property
    def split(self) -> str:
        """"2–1", "1–1", "3–0" (unanimous)."""
        counts = [str(n) for _, n in self.picks]
        return "–".join(counts if len(counts) > 1 else [*counts, "0"])

    @property
    def majority(self) -> tuple[bool, str | None]:
        """(whether one pick has more votes than any other, that pick)."""
        if len(self.picks) == 1 or self.picks[0][1] > self.picks[1][1]:
            return True, self.picks[0][0]
        return False, None


def panel_tally(verdict: Verdict) -> PanelTally | None:
    """The judges' own winners, for a panel (two or more rulings); judges that failed, and judges whose
    winner flipped when the order was reversed (undecided), are left out."""
    if len(verdict.rulings) < 2:
        return None
    undecided = set(verdict.undecided_judges)
    good = [r for r in verdict.rulings if r.error is None and not r.flipped and r.judge not in undecided]
    counts = Counter(r.winner for r in good)
    return PanelTally(len(good), tuple(counts.most_common()))


def render_verdict(state: DebateState, unreliable: Mapping[str, str] | None = None) -> None:
    """The verdict card; `unreliable` (judge → "Unreliable judge: …", from judge health) puts a visible note
    on the card for each of the verdict's judges that has one."""
    verdict = state.verdict
    if verdict is None:
        return
    # The card is one HTML element (summary, scores, notes), not a dozen: every spectator's page builds
    # it at the same moment, as the debate ends. `#verdict` is the outcome card's "Full verdict" link;
    # the margin keeps the title below the sticky header.
    top = HtmlParts().add(f'<div class="row w-full items-center gap-2">{icon("gavel", "text-2xl text-primary")}'
                          '<h2 class="rostrum-heading text-xl">Verdict</h2></div>')
    if state.ended_because:
        top.text(f"Ended because: {state.ended_because}", "text-sm text-grey-7", "ended-because")
    if not verdict.available:
        top.text("Verdict unavailable", "text-lg font-medium text-negative", "verdict-unavailable")
        if verdict.reasoning:
            top.text(verdict.reasoning, "whitespace-pre-wrap")
        if verdict.raw_text:
            top.text("What the judge answered:", "text-sm text-grey-7")
            top.text(verdict.raw_text, "whitespace-pre-wrap font-mono text-xs p-2 rounded bg-grey-2 w-full "
                     "overflow-auto", "raw-text")
        _unreliable(top, verdict, unreliable)
        _notes(top, verdict)
        _card(top)
        _synthesis(verdict)
        return
    top.add('<div class="row items-center gap-3">')
    winner = decided_winner(verdict)  # by the panel rule, whatever rule the stored verdict was made by
    tally = panel_tally(verdict)
    if winner is None:
        split = tally is not None and tally.judges >= 2 and not tally.majority[0]
        top.text("No winner" if split else "Tie", "text-2xl font-bold", "winner")
    else:
        name, color = _names(state).get(winner, (winner, NEUTRAL))
        top.add(dot(color, "w-4 h-4")).text(f"Winner: {name}", "text-2xl font-bold", "winner")
    if tally is None:
        if verdict.confidence is not None:
            top.text(f"confidence {verdict.confidence:.0%}", "q-badge bg-grey-7 text-white", "confidence", "span")
        mode = verdict.rulings[0].output_mode if len(verdict.rulings) == 1 else None
        if mode:
            top.text(f"answer via {mode}", "text-xs text-grey-7", "output-mode")
    else:  # a panel has no single confidence: each judge's is in the rulings table
        top.text(_panel_words(tally), "text-sm text-grey-8", "panel-split")
    top.add("</div>")
    if tally is not None and tally.judges >= 2:
        top.text(SPLIT_RULE, "text-xs text-grey-7", "split-rule")
    top.add('<div class="row gap-4">' + "".join(
        f'<span class="font-mono">{escape(_name(state, pid))}: {verdict.scores[pid]:g}/100</span>'
        for pid in _ordered(state, verdict.scores)) + "</div>")
    _unreliable(top, verdict, unreliable)
    _bias_checks(top, state, verdict)
    if verdict.reasoning:  # escaped Markdown, rendered once on the server (and DOMPurify in the browser)
        top.add(f'<div class="nicegui-markdown w-full" data-mark="reasoning">'
                f'{_reasoning_html(verdict.reasoning, image_hosts())}</div>', "reasoning")
    if verdict.scores:
        top.add(score_chart_html(state, verdict), "score-chart")
    _criteria_notes(top, state, verdict)
    _card(top)
    _rulings(state, verdict)
    _synthesis(verdict)


def _card(top: HtmlParts) -> None:
    card = top.render("q-card q-card--bordered q-card--flat no-shadow w-full column gap-3 q-pa-md", "verdict",
                      sanitize=True)
    assert card is not None
    card.props("id=verdict").style("scroll-margin-top: 4.5rem")


def length_ratio(verdict: Verdict) -> float | None:
    """How many times as many words the winner spoke as the most talkative other debater."""
    if verdict.winner is None or verdict.winner not in verdict.word_counts:
        return None
    others = [n for pid, n in verdict.word_counts.items() if pid != verdict.winner]
    if not others or max(others) <= 0:
        return None
    return verdict.word_counts[verdict.winner] / max(others)


def _bias_checks(top: HtmlParts, state: DebateState, verdict: Verdict) -> None:
    """Words per side (and the flag when the winner spoke far more), judges undecided by the order,
    and how the verdict was obtained."""
    if verdict.word_counts:
        counts = "".join(f'<span class="tabular-nums" data-mark="word-count">'
                         f'{escape(_name(state, pid))} {verdict.word_counts[pid]:,}</span>'
                         for pid in _ordered(state, verdict.word_counts))
        top.add(f'<div class="row items-center gap-x-3 gap-y-0 text-sm" data-mark="word-counts">'
                f'<span class="text-grey-8">Words spoken:</span>{counts}</div>', "word-counts")
    if verdict.length_flag:
        ratio = length_ratio(verdict)
        times = f"{ratio:.1f}×" if ratio is not None else "far more than"
        words = (f"The winner spoke {times} as many words: judges tend to favour longer answers, so this verdict "
                 "may reward length.")
        top.add(f'<div class="row items-center gap-1 text-sm text-warning no-wrap" data-mark="length-flag">'
                f'{icon("straighten")}<span>{escape(words)}</span></div>', "length-flag")
    if verdict.undecided_judges:
        judges = "".join(f'<div class="text-grey-8" data-mark="undecided-judge">· {escape(judge)}</div>'
                         for judge in verdict.undecided_judges)
        top.add(f'<div class="column gap-0 text-sm" data-mark="undecided"><div class="font-medium">Undecided: the '
                f'winner flipped when the order was reversed</div>{judges}</div>', "undecided")
    _notes(top, verdict)


def _unreliable(top: HtmlParts, verdict: Verdict, unreliable: Mapping[str, str] | None) -> None:
    """A warning per judge of this verdict whose record says its verdicts cannot be trusted."""
    judges = dict.fromkeys(r.judge for r in verdict.rulings if unreliable and r.judge in unreliable)
    if not judges or unreliable is None:
        return
    lines = "".join(f'<div data-mark="unreliable-judge"><span class="font-medium">{escape(judge)}</span> · '
                    f'{escape(unreliable[judge])}</div>' for judge in judges)
    top.add(f'<div class="row items-start gap-1 text-sm text-amber-800 dark:text-amber-300 no-wrap" role="note" '
            f'data-mark="unreliable-judges">{icon("report_problem")}<div class="column gap-0">{lines}'
            f'<div class="text-xs">From the judge\'s record across stored debates; {escape(RELIABILITY_RULE)}.'
            '</div></div></div>', "unreliable-judges")


def _notes(top: HtmlParts, verdict: Verdict) -> None:
    if verdict.notes:
        notes = "".join(f'<div data-mark="verdict-note">{escape(note)}</div>' for note in verdict.notes)
        top.add(f'<div class="column gap-0 text-xs text-grey-7" data-mark="verdict-notes">{notes}</div>',
                "verdict-notes")


def _panel_words(tally: PanelTally) -> str:
    """What the panel's headline says beside the winner: how the judges' picks decided it."""
    if tally.judges < 2:
        return "only one judge of the panel ruled" if tally.judges else ""
    if tally.unanimous:
        return f"judges agree {tally.split}"
    return f"majority of judges ({tally.split})" if tally.majority[0] else f"judges split {tally.split}"


def _criteria_notes(top: HtmlParts, state: DebateState, verdict: Verdict) -> None:
    """The judge's note per criterion and debater, folded away (a `<details>` in the card's HTML)."""
    notes = [(c, pid, s) for c, by_pid in verdict.criteria.items() for pid, s in by_pid.items() if s.note]
    if not notes:
        return
    rows = "".join(f'<li data-mark="criterion-note"><b>{escape(criterion)} · {escape(_name(state, pid))} · '
                   f'{score.score:g}</b> {escape(score.note or "")}</li>' for criterion, pid, score in notes)
    top.add(f'<details class="rostrum-details" data-mark="criteria-notes"><summary>Notes per criterion '
            f'({len(notes)})</summary><ul>{rows}</ul></details>', "criteria-notes")


def _rulings(state: DebateState, verdict: Verdict) -> None:
    if len(verdict.rulings) < 2:
        return
    with ui.expansion("Panel rulings", icon="groups", value=True) \
            .classes("w-full q-card q-card--bordered q-card--flat").mark("rulings"):
        pids = _ordered(state, verdict.scores)
        columns = [{"name": "judge", "label": "Judge", "field": "judge", "align": "left"},
                   {"name": "winner", "label": "Winner", "field": "winner", "align": "left"}]
        columns += [{"name": pid, "label": _name(state, pid), "field": pid} for pid in pids]
        columns.append({"name": "confidence", "label": "Confidence", "field": "confidence"})
        swapped = any(r.flipped is not None for r in verdict.rulings)
        if swapped:
            columns.append({"name": "swap", "label": "Order reversed", "field": "swap", "align": "left"})
        columns.append({"name": "mode", "label": "Output", "field": "mode", "align": "left",
                        "classes": "text-xs text-grey-7", "headerClasses": "text-xs"})
        rows = []
        for i, ruling in enumerate(verdict.rulings):
            winner = f"failed: {ruling.error}" if ruling.error else _name(state, ruling.winner)
            row: dict[str, Any] = {"id": i, "judge": ruling.judge, "winner": winner,
                                   "confidence": "" if ruling.confidence is None else f"{ruling.confidence:.0%}",
                                   "mode": ruling.output_mode or "", "swap": _swap_words(state, ruling)}
            row.update({pid: f"{ruling.scores[pid]:g}" if pid in ruling.scores else "–" for pid in pids})
            rows.append(row)
        mean = {"id": "mean", "judge": "Mean", "winner": "", "confidence": "", "mode": "",
                "swap": ""}
        mean.update({pid: f"{verdict.scores[pid]:g}" for pid in pids})
        rows.append(mean)
        ui.table(columns=columns, rows=rows, row_key="id").props("flat dense").classes("w-full")
        if verdict.disagreement is not None:
            ui.label(f"Disagreement between judges: {counted(verdict.disagreement, 'point')}, "
                     f"{DISAGREEMENT_MEANING}").classes("text-sm").mark("disagreement")


def _swap_words(state: DebateState, ruling: JudgeRuling) -> str:
    """What a judge said with the presentation order reversed."""
    if ruling.flipped is None:
        return ""
    winner = _name(state, ruling.swap_winner)
    return f"{winner} (flipped: undecided)" if ruling.flipped else f"{winner} (same)"


def _synthesis(verdict: Verdict) -> None:
    if verdict.synthesis:
        with ui.card().classes("w-full bg-indigo-50 dark:bg-indigo-950").props("flat bordered").mark("synthesis"):
            ui.label("Final solution").classes("text-base font-semibold")
            safe_markdown(verdict.synthesis).classes("w-full")
