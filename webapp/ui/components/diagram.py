""""How this debate runs": the state machine, in words, with where this debate is now highlighted.

Generated from the engine's declaration (`to_mermaid(..., human=True)`), with the format's phase titles
inside the debate. Collapsed by default; it fits its card (the SVG scales down, nothing scrolls
sideways) and reads on light and dark pages alike (light boxes with dark text, mid-grey lines, no
page-coloured background of its own).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Protocol

from nicegui import ui

from webapp.engine.formats import get_format
from webapp.engine.machine import State
from webapp.engine.public import to_mermaid
from webapp.engine.state import DebateState

# Colours that read on a white and on a dark page: no background of its own, light boxes with dark
# text, mid-grey lines and edge labels on light chips. Mermaid is initialised once per page with it.
MERMAID_CONFIG: dict[str, Any] = {
    "startOnLoad": False,
    "securityLevel": "strict",
    "theme": "base",
    "state": {"useMaxWidth": True},
    "themeVariables": {
        "fontFamily": "inherit",
        "fontSize": "14px",
        "primaryColor": "#e0e7ff",
        "primaryTextColor": "#1e1b4b",
        "primaryBorderColor": "#6366f1",
        "secondaryColor": "#e2e8f0",
        "tertiaryColor": "#f1f5f9",
        "lineColor": "#64748b",
        "textColor": "#475569",
        "stateLabelColor": "#1e1b4b",
        "transitionColor": "#64748b",
        "transitionLabelColor": "#1e293b",
        "edgeLabelBackground": "#e2e8f0",
        "labelBackgroundColor": "#e2e8f0",
        "compositeBackground": "#94a3b833",
        "compositeTitleBackground": "#c7d2fe",
        "compositeBorder": "#6366f1",
        "altBackground": "#e2e8f0",
    },
}
_CSS = """
.rostrum-diagram-fit { overflow: hidden; }
.rostrum-diagram-fit svg { max-width: 100% !important; height: auto; display: block; margin: 0 auto; }
"""
RUNNING_PHASE = (State.PREPARATION, State.DEBATING)


@lru_cache(maxsize=512)
def _source(format_id: str, status: State, phase: str | None, omit: frozenset[State]) -> str:
    fmt = get_format(format_id)
    phases = [(p.id, p.title) for p in fmt.phases]
    repeat = {p.id for p in fmt.phases if p.scope == "round"}
    text = to_mermaid(phases, highlight=status, human=True, repeat=repeat, current_phase=phase, omit=omit)
    # An accessible name for the SVG (Mermaid writes it as the SVG's title).
    return text.replace("stateDiagram-v2", f"stateDiagram-v2\n    accTitle: How a {fmt.title} debate runs", 1)


def unvisited(state: DebateState) -> frozenset[State]:
    """States this debate never goes through, left out of its picture."""
    ctx = state.machine.context
    omit = set()
    if not ctx.clarification:
        omit |= {State.CLARIFYING, State.AWAITING_CLARIFICATION}
    if not ctx.preparation:
        omit.add(State.PREPARATION)
    if not ctx.human_seat:
        omit.add(State.AWAITING_TURN)
    if not ctx.judge_enabled:
        omit.add(State.JUDGING)
    return frozenset(omit - {state.status})


def diagram_source(state: DebateState) -> str:
    """The diagram for this debate now: built once per (format, state, running phase, states it skips)
    for every tab."""
    phase = state.position.phase if state.status in RUNNING_PHASE else None
    return _source(state.format.id, state.status, phase, unvisited(state))


def phase_caption(state: DebateState) -> str:
    """The phases in order, in words (what the picture shows, for those who do not read it)."""
    fmt = state.format
    parts = []
    for phase in fmt.phases:
        parts.append(f"{phase.title} (each round)" if phase.scope == "round" else phase.title)
    judged = " → verdict" if state.config.judge.enabled else ""
    return "Phases: " + " → ".join(parts) + judged + ". The highlighted box is where this debate is now."


class _HasState(Protocol):
    @property
    def state(self) -> DebateState: ...


class DiagramSection:
    """The collapsed "How this debate runs" card; `update()` re-renders only when the picture changes.

    The diagram itself is made when the section is first opened: Mermaid is a large library, and a
    page that nobody opens the section on should not load it."""

    def __init__(self, session: _HasState) -> None:
        self.session = session
        self.source = diagram_source(session.state)
        self.mermaid: ui.mermaid | None = None
        ui.add_css(_CSS)
        # The expansion is the card (one element less on every page).
        self.expansion = ui.expansion("How this debate runs", icon="account_tree", value=False,
                                      on_value_change=lambda e: self.open() if e.value else None) \
            .classes("w-full q-card").mark("diagram-card diagram-section")

    def open(self) -> ui.mermaid:
        """Make the caption and the diagram (once)."""
        if self.mermaid is None:
            with self.expansion:
                self.caption = ui.label(phase_caption(self.session.state)) \
                    .classes("text-sm text-slate-600 dark:text-slate-400").mark("diagram-caption")
                with ui.element("div").classes("w-full rostrum-diagram-fit"):
                    self.mermaid = ui.mermaid(self.source, config=MERMAID_CONFIG).classes("w-full").mark("diagram")
        return self.mermaid

    def update(self) -> None:
        source = diagram_source(self.session.state)
        if source != self.source:
            self.source = source
            if self.mermaid is not None:
                self.mermaid.set_content(source)
