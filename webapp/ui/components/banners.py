"""Panels that appear when a debate waits for a person: error (what failed, for whom, what to do, with
Retry), stopped (by whom, where), interrupted by a restart (with Resume), cost warning (acknowledge or
stop), and the clarification Q&A. Errored and stopped debates offer "Re-run with edits"."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from nicegui import ui

from webapp.engine.api import CostWarning, SessionView
from webapp.engine.public import DebateState, State
from webapp.ui.components.badges import money
from webapp.ui.components.failure import explain_error, explain_stop
from webapp.ui.components.seat import render_seat, seat_signature
from webapp.wording import counted, every, noun

Command = Callable[..., Awaitable[None]]


def banner_signature(view: SessionView, state: DebateState) -> tuple:
    return (view.status.value, view.interrupted, view.interruption, view.storage_problem, view.retries_used,
            str(view.error), len(state.clarifications), len(state.answers), len(state.warnings), seat_signature(state))


def render_banners(view: SessionView, state: DebateState, run: Command,
                   answers: dict[int, dict[str, list[str]]], clone: bool = False, names: bool = True,
                   seat: tuple[Any, ...] = (None, None)) -> None:
    """`clone`: whether to offer "Re-run with edits" (to those who may start debates); `names`: whether
    to say who did what (not to a share link's holder); `seat`: (who is looking, who holds the human seat
    waited for) for the composer."""
    status = view.status
    if view.storage_problem:
        with ui.card().classes("w-full bg-red-50 dark:bg-red-950").props("flat bordered role=alert") \
                .mark("storage-problem"), ui.row().classes("items-center gap-2"):
            ui.icon("storage").classes("text-2xl text-negative")
            ui.label(f"Storage is unavailable ({view.storage_problem}). The debate is halted and nothing is "
                     "billed; it is recorded as interrupted as soon as the database can be written again.")
        return
    if status is State.ERROR:
        _error_panel(view, state, run, clone)
    if status is State.JUDGING and state.stopping:  # once stopped, the outcome card says it (once)
        _stopped_note(state, clone, names)
    if status is State.PAUSED and view.interrupted:
        with ui.card().classes("w-full bg-orange-50 dark:bg-orange-950").props("flat bordered") \
                .mark("interrupted"), ui.row().classes("items-center gap-2"):
            ui.icon("restart_alt").classes("text-2xl text-orange-8")
            why = view.interruption or "a server restart"
            ui.label(f"This debate was interrupted ({why}). Resume continues exactly where it stopped; "
                     "finished turns are never asked again.")
            ui.button("Resume", icon="play_arrow", on_click=lambda: run("resume")).props("unelevated no-caps") \
                .mark("interrupted-resume")
    elif status is State.PAUSED:
        with ui.row().classes("items-center gap-2 text-amber-9").mark("paused-note"):
            ui.icon("pause_circle")
            ui.label("Paused. Nothing is being generated or billed until you resume.")
    if status is State.AWAITING_ACK:
        _warning_panel(state, run)
    if status is State.AWAITING_CLARIFICATION and state.clarifications:
        _clarification_panel(state, run, answers)
    if status is State.AWAITING_TURN:
        render_seat(state, run, *seat)


def _rerun_links(debate_id: str, marker: str) -> None:
    """"Re-run with edits": the new-debate form filled in from this debate (one action, not two names)."""
    ui.link("Re-run with edits", f"/new?from={debate_id}").classes("text-sm").mark(f"{marker}-rerun")


def _error_panel(view: SessionView, state: DebateState, run: Command, clone: bool) -> None:
    error = view.error or (state.errors[-1] if state.errors else None)
    recorded = error.model_dump(exclude_unset=True) if error is not None else {}  # as logged, no defaults
    left = max(0, view.max_retries - view.retries_used)
    story = explain_error(state, error, left)
    with ui.card().classes("w-full bg-red-50 dark:bg-red-950").props("flat bordered role=alert").mark("error-panel"):
        with ui.row().classes("items-center gap-2 no-wrap"):
            ui.icon("error").classes("text-2xl text-negative")
            ui.label(story.headline).classes("font-semibold").mark("error-headline")
        ui.label(story.advice).classes("text-sm").mark("error-advice")
        ui.label(str(recorded.get("message") or "unknown error")).classes("font-mono text-sm whitespace-pre-wrap") \
            .mark("error-message")
        details = [f"{k}: {recorded[k]}" for k in ("kind", "status", "reason", "request_id") if recorded.get(k)]
        if details:
            ui.label(" · ".join(details)).classes("text-xs text-grey-7")
        with ui.row().classes("items-center gap-2"):
            ui.button(story.retry_label, icon="replay", on_click=lambda: run("retry")) \
                .props("unelevated no-caps color=orange-8").mark("error-retry")
            if left == 0:
                used = f"{every(view.max_retries, 'automatic retry')} {noun(view.max_retries, 'was', 'were')} used"
                ui.label(f"{used[0].upper()}{used[1:]}. Fix the cause (a key, a server, "
                         "a model name) and retry, or stop the debate to get a verdict on what was said.") \
                    .classes("text-sm").mark("retries-used")
            else:
                ui.label(f"{counted(left, 'automatic retry')} left.").classes("text-sm")
            if clone:
                _rerun_links(state.id, "error")


def _stopped_note(state: DebateState, clone: bool, names: bool = True) -> None:
    said = explain_stop(state, names)
    if said is None:
        return
    with ui.card().classes("w-full").props("flat bordered").mark("stopped-panel"), \
            ui.row().classes("items-center gap-2"):
        ui.icon("stop_circle").classes("text-2xl text-grey-8")
        ui.label(said).classes("font-medium").mark("stopped-by")
        if clone:
            _rerun_links(state.id, "stopped")


def last_cost_warning(state: DebateState) -> CostWarning | None:
    """The latest cost warning (None when there is none): the panel and the page's dialog quote it."""
    return next((w for w in reversed(state.warnings) if isinstance(w, CostWarning)), None)


def _warning_panel(state: DebateState, run: Command) -> None:
    warning = last_cost_warning(state)
    with ui.card().classes("w-full bg-orange-50 dark:bg-orange-950").props("flat bordered").mark("ack-panel"):
        with ui.row().classes("items-center gap-2"):
            ui.icon("savings").classes("text-2xl text-orange-8")
            ui.label(warning.message if warning is not None and warning.message
                     else f"Spending reached {money(state.ledger.total_usd)}.")
        with ui.row().classes("gap-2"):
            ui.button("Continue", icon="play_arrow", on_click=lambda: run("acknowledge_warning")) \
                .props("unelevated no-caps").mark("acknowledge")
            ui.button("Stop and judge", icon="stop", on_click=lambda: run("stop", verdict=True)) \
                .props("outline no-caps color=negative")


def _clarification_panel(state: DebateState, run: Command, answers: dict[int, dict[str, list[str]]]) -> None:
    asked = state.clarifications[-1]
    iteration = asked.iteration
    questions = asked.questions
    typed = answers.setdefault(iteration, {pid: [""] * len(qs) for pid, qs in questions.items()})
    names = {p.id: p.name for p in state.config.participants}
    with ui.card().classes("w-full gap-3").props("flat bordered").mark("clarification"):
        with ui.row().classes("items-center gap-2"):
            ui.icon("help").classes("text-2xl text-cyan-8")
            ui.label("The participants have questions for you").classes("text-lg font-semibold")
        ui.label("Answer what you can; unanswered questions are fine. The debate continues when you submit.") \
            .classes("text-sm text-grey-7")
        for pid, items in questions.items():
            if not items:
                continue
            ui.label(names.get(pid, pid)).classes("font-medium")
            for index, question in enumerate(items):
                ui.label(question).classes("text-sm")
                ui.input(placeholder="Your answer (optional)", value=typed[pid][index],
                         on_change=lambda e, p=pid, i=index: typed[p].__setitem__(i, e.value or "")) \
                    .props("outlined dense").classes("w-full").mark(f"answer-{pid}-{index}")

        async def submit() -> None:
            await run("answer_clarification", answers={pid: list(v) for pid, v in typed.items()})

        ui.button("Submit answers", icon="send", on_click=submit).props("unelevated no-caps").mark("submit-answers")


def render_past_clarifications(state: DebateState) -> None:
    if not state.answers:
        return
    names = {p.id: p.name for p in state.config.participants}
    with ui.expansion("Your clarifications", icon="question_answer").classes("w-full").mark("past-clarifications"):
        for asked in state.clarifications:
            given = next((a.answers for a in state.answers if a.iteration == asked.iteration), None)
            if given is None:
                continue
            for pid, items in asked.questions.items():
                for index, question in enumerate(items):
                    answer = (given.get(pid) or [])[index] if index < len(given.get(pid) or []) else ""
                    ui.label(f"{names.get(pid, pid)}: {question}").classes("text-sm font-medium")
                    ui.label(answer or "(no answer)").classes("text-sm text-grey-8 ml-4")
