"""The outcome card, result first: what a finished debate came to, in one line, at the top of the page.

A winner (with their colour), a tie, a panel's split ("No winner: judges split 1–1", "Proposition wins
2–1", by the one rule of `webapp.engine.panel`), the
agreement a convergence debate reached, the final solution of a collaborative one, "Verdict
unavailable: why", or why a debate without a verdict ended. Then one line of mean scores and a link to
the full verdict card (`#verdict`). `outcome_of` is the pure part (tested without a page).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from nicegui import ui

from webapp.engine.public import TERMINAL_STATES, DebateState, State
from webapp.models import Verdict
from webapp.ui.components.badges import safe_color
from webapp.ui.components.failure import explain_stop
from webapp.ui.components.html_parts import HtmlParts, dot, icon
from webapp.ui.components.safe_markdown import safe_markdown
from webapp.ui.components.verdict import panel_tally

HEADLINE_CHARS = 140  # a reason or an error message is cut to about one line
SYNTHESIS_CHARS = 300
NEUTRAL = "#94a3b8"
MUTED = "text-slate-600 dark:text-slate-400"  # readable on the light and the dark page


@dataclass(frozen=True)
class Outcome:
    kind: str  # winner | tie | split | agreement | no-agreement | synthesis | unavailable | ended
    headline: str
    winner: str | None = None  # the participant whose colour dot goes with the headline
    scores: tuple[tuple[str, str, float], ...] = ()  # (name, colour, mean score), in the cast's order
    scores_label: str = "Scores"
    note: str | None = None  # one short line: why it ended, when that is not the headline
    synthesis: str | None = None  # the start of a collaborative debate's final solution (Markdown)
    verdict: bool = False  # whether there is a verdict card to link to


def _clip(text: str, limit: int) -> str:
    """The first line of `text`, cut at a word boundary to about `limit` characters."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0] or line[:limit]
    return cut.rstrip(" .,;:") + "…"


def _excerpt(markdown: str, limit: int = SYNTHESIS_CHARS) -> str:
    text = markdown.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return cut.rstrip() + " …"


def _evaluation(state: DebateState) -> str:
    termination = state.format.termination
    return state.config.evaluation if termination.configurable else termination.kind


def _scores(state: DebateState, verdict: Verdict | None) -> tuple[tuple[str, str, float], ...]:
    if verdict is None or not verdict.available:
        return ()
    out = []
    for p in state.config.participants:
        if p.id in verdict.scores:
            out.append((p.name, safe_color(p.color), verdict.scores[p.id]))
    return tuple(out)


def _name(state: DebateState, pid: str | None) -> str:
    for p in state.config.participants:
        if p.id == pid:
            return p.name
    return str(pid)


def _agreement(state: DebateState) -> Outcome | None:
    """A convergence debate's result: the agreement its judge rated last, against the threshold."""
    decisions = [d for _, d in sorted(state.round_decisions.items()) if d.agreement is not None]
    if not decisions:
        return None
    last = decisions[-1]
    agreement = float(last.agreement or 0)
    threshold = last.threshold
    of = f" (threshold {threshold})" if threshold is not None else ""
    if last.irreconcilable:
        return Outcome("no-agreement", f"No agreement: the judge found the positions irreconcilable "
                                       f"(agreement {agreement:g}/100)")
    if threshold is not None and agreement >= float(threshold):
        return Outcome("agreement", f"Agreement reached: {agreement:g}/100{of}")
    return Outcome("no-agreement", f"No agreement: {agreement:g}/100{of}")


def _error_note(state: DebateState) -> str | None:
    """The error a stopped debate had failed on, when it was stopped from the error state."""
    stops = [t for t in state.transitions if t.event == "STOP"]
    if not stops or stops[0].from_ is not State.ERROR:
        return None
    error = state.error or (state.errors[-1] if state.errors else None)
    message = (error.message if error is not None else "").strip()
    provider = (error.provider if error is not None else "") or "a provider"
    return f"after an error from {provider}: {message}" if message else f"after an error from {provider}"


def _ended(state: DebateState, names: bool = True) -> Outcome:
    """A finished debate without a verdict: why it ended. A stopped debate says it once, here: who
    stopped it and where (the page shows no separate "stopped" panel once it has ended)."""
    reason = state.ended_because
    if state.status is State.STOPPED:
        said = explain_stop(state, names)
        error = _error_note(state)
        headline = (f"{said.rstrip('.')}, without a verdict" if said else
                    f"Stopped without a verdict: {reason or 'stopped'}") + (f", {error}" if error else "")
    else:
        headline = f"Finished without a verdict: {reason}" if reason else "Finished (not judged)"
    return Outcome("ended", _clip(headline, HEADLINE_CHARS))


def _ruling(state: DebateState, verdict: Verdict) -> Outcome:
    """Who won: one judge's winner or tie, or a panel's picks."""
    tally = panel_tally(verdict)
    if tally is not None and tally.judges >= 2 and not tally.unanimous:
        has_majority, pick = tally.majority
        if not has_majority:
            return Outcome("split", f"No winner: judges split {tally.split}")
        if pick is None:
            return Outcome("tie", f"Tie {tally.split}")
        return Outcome("winner", f"{_name(state, pick)} wins {tally.split}", winner=pick)
    if verdict.winner is None:
        return Outcome("tie", "Tie")
    suffix = f" {tally.split}" if tally is not None and tally.judges >= 2 else ""
    return Outcome("winner", f"{_name(state, verdict.winner)} wins{suffix}", winner=verdict.winner)


def outcome_of(state: DebateState, names: bool = True) -> Outcome | None:
    """What the outcome card shows, or None while the debate has not ended. `names`: whether to say who
    stopped it (not to a share link's holder)."""
    if state.status not in TERMINAL_STATES:
        return None
    verdict = state.verdict
    note = state.ended_because
    convergence = _evaluation(state) == "convergence"
    if verdict is not None and verdict.synthesis and state.format.judge_synthesis:
        result = Outcome("synthesis", "Final solution", synthesis=_excerpt(verdict.synthesis))
    elif convergence and (agreement := _agreement(state)) is not None:
        result = agreement
        note = None if agreement.kind == "agreement" else note
    elif convergence and verdict is not None:  # ended before any round was rated (a cap of one round, a stop)
        result = Outcome("no-agreement", "No agreement reached")
    elif verdict is None:
        result, note = _ended(state, names), None
    elif not verdict.available:
        why = verdict.reasoning.strip()
        if why.lower().startswith("verdict unavailable"):
            why = why[len("verdict unavailable"):].lstrip(" .:—-")
        result = Outcome("unavailable", _clip(f"Verdict unavailable: {why or 'the judge gave no usable answer'}",
                                              HEADLINE_CHARS))
    else:
        result = _ruling(state, verdict)
    tally = panel_tally(verdict) if verdict is not None else None
    label = f"Mean scores of {tally.judges} judges" if tally is not None and tally.judges >= 2 else "Scores"
    if state.status is State.STOPPED and result.kind != "ended":
        note = (explain_stop(state, names) or "Stopped early").rstrip(".")
    return Outcome(result.kind, result.headline, result.winner, _scores(state, verdict), label,
                   _clip(note, HEADLINE_CHARS) if note else None, result.synthesis, verdict is not None)


def outcome_signature(state: DebateState, names: bool = True) -> tuple[Any, ...]:
    outcome = outcome_of(state, names)
    if outcome is None:
        return (None,)
    colors = tuple((p.id, p.name, safe_color(p.color)) for p in state.config.participants)
    return (outcome, colors)


ICONS = {"winner": "emoji_events", "tie": "balance", "split": "call_split", "agreement": "handshake",
         "no-agreement": "do_not_disturb_on", "synthesis": "lightbulb", "unavailable": "report",
         "ended": "stop_circle"}


def render_outcome(state: DebateState, names: bool = True) -> None:
    """The outcome card; renders nothing for a debate that has not ended. Its fixed parts are HTML, not
    elements: every spectator's page builds this card at the same moment, when the debate ends."""
    outcome = outcome_of(state, names)
    if outcome is None:
        return
    colors = {p.id: safe_color(p.color) for p in state.config.participants}
    negative = outcome.kind in ("unavailable", "ended")
    mark = dot(colors.get(outcome.winner, NEUTRAL), "w-4 h-4 shrink-0") if outcome.winner is not None else ""
    tone = "text-negative" if negative else "text-primary"
    head = HtmlParts().add('<div class="row w-full items-center gap-2 no-wrap" data-mark="outcome-headline">'
                           + icon(ICONS.get(outcome.kind, "flag"), f"text-2xl shrink-0 {tone}") + mark
                           + f'<div class="text-lg sm:text-xl font-bold min-w-0 rostrum-topic" role="status" '
                           f'data-mark="headline">{escape(outcome.headline)}</div></div>', "outcome-headline")
    rest = HtmlParts()
    if outcome.scores:
        scores = "".join(f'<span class="row items-center gap-1 no-wrap">{dot(color)}'
                         f'<span class="font-medium tabular-nums">{escape(name)} {score:g}</span></span>'
                         for name, color, score in outcome.scores)
        rest.add(f'<div class="row items-center gap-x-3 gap-y-0 text-sm" data-mark="outcome-scores">'
                 f'<span class="{MUTED}">{escape(outcome.scores_label)}:</span>{scores}</div>', "outcome-scores")
    if outcome.note or outcome.verdict:
        rest.add('<div class="row items-center gap-x-3 gap-y-0 text-sm">')
        if outcome.note:
            rest.text(f"Ended: {outcome.note}" if not outcome.note.lower().startswith("stopped") else
                      outcome.note[0].upper() + outcome.note[1:], MUTED, "outcome-note", "span")
        if outcome.verdict:
            rest.add('<a href="#verdict" class="nicegui-link font-medium" data-mark="outcome-verdict-link">'
                     'Full verdict</a>', "outcome-verdict-link")
        rest.add("</div>")
    card = "q-card q-card--bordered q-card--flat no-shadow column w-full gap-1 q-px-md py-3"
    if not outcome.synthesis:  # the whole card is one element
        head.add("".join(rest.parts))
        head.marks += rest.marks
        head.render(card, "outcome")
        return
    with ui.card().classes("w-full gap-1 py-3").props("flat bordered").mark("outcome"):
        head.render("w-full")
        safe_markdown(outcome.synthesis).classes("w-full text-sm").mark("outcome-synthesis")
        rest.render("column w-full gap-1")
