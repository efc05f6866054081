"""The state machine as a Mermaid `stateDiagram-v2`, generated from its declaration (`TRANSITIONS`).

`to_mermaid` draws the engine's names for developers (the README, `python -m webapp diagram`) or, with
`human=True`, words for people (the debate page's "How this debate runs": `HUMAN_STATES`,
`HUMAN_EVENTS`, `HUMAN_GUARDS`). Nothing here changes the machine; it only reads the declaration.
"""

from __future__ import annotations

from collections.abc import Collection
from itertools import pairwise

from webapp.engine.machine import ACTIVE_STATES, RETURN, TERMINAL_STATES, TRANSITIONS, Event, State

# Words for people (the debate page's "How this debate runs"); the developer diagram keeps the names.
HUMAN_STATES: dict[str, str] = {
    State.IDLE.value: "Not started",
    State.INITIALIZING.value: "Getting ready",
    State.CLARIFYING.value: "Asking you questions",
    State.AWAITING_CLARIFICATION.value: "Waiting for your answers",
    State.AWAITING_TURN.value: "Waiting for a person's turn",
    State.PREPARATION.value: "Preparing",
    State.DEBATING.value: "Debate",
    State.JUDGING.value: "Judging",
    State.PAUSED.value: "Paused",
    State.AWAITING_ACK.value: "Waiting for your OK to spend more",
    State.ERROR.value: "Failed (can be retried)",
    State.COMPLETED.value: "Finished",
    State.STOPPED.value: "Stopped",
}
HUMAN_EVENTS: dict[Event, str] = {
    Event.START: "start",
    Event.INIT_COMPLETE: "ready",
    Event.QUESTIONS_READY: "questions asked",
    Event.CLARIFICATION_ANSWERED: "you answer",
    Event.CLARIFICATION_COMPLETE: "no more questions",
    Event.TURN_COMPLETE: "turn done",
    Event.PHASE_COMPLETE: "phase done",
    Event.ROUND_COMPLETE: "round done",
    Event.ALL_ROUNDS_COMPLETE: "last phase done",
    Event.VERDICT_READY: "verdict given",
    Event.PAUSE: "pause",
    Event.RESUME: "resume",
    Event.STOP: "stop",
    Event.ERROR: "provider error",
    Event.RETRY: "retry",
    Event.COST_WARNING: "spending warning",
    Event.ACKNOWLEDGE_WARNING: "you accept",
    Event.TURN_DUE: "a person's turn",
    Event.TURN_SENT: "turn sent",
    Event.TURN_TIMEOUT: "time is up (skipped)",
}
HUMAN_GUARDS: dict[str, str] = {
    "by_a_person": "",  # a retry is a retry, whoever asks for it
    "retries_left": "",
    "with_verdict": "with a verdict",
    "stopping": "after a stop",
    "judge_enabled": "with a judge",
    "needs_clarification": "with questions",
    "has_preparation": "with preparation",
    "has_human_seat": "with a human seat",
}


def _mermaid_text(text: str) -> str:
    """A title safe inside a Mermaid label (no colon, no double quote, no markup)."""
    return text.replace(":", " -").replace('"', "'").replace("<", "(").replace(">", ")")


def to_mermaid(
    phases: list[tuple[str, str]] | None = None, highlight: State | str | None = None, compact: bool = False,
    *, human: bool = False, repeat: Collection[str] = (), current_phase: str | None = None,
    omit: Collection[State] = (),
) -> str:
    """A Mermaid `stateDiagram-v2` of `TRANSITIONS`; `phases` (id, title) are drawn inside debating.

    `compact` draws an edge that leaves many states (PAUSE, ERROR, STOP…) once, from a pseudo-state
    standing for the group, which keeps the picture readable in the UI; the full form draws every edge.
    `human` (implies `compact`) labels states and edges in words instead of engine names, drops the
    per-turn and per-phase loops the phase picture shows, draws a "next round" loop over the phases
    whose ids are in `repeat`, and highlights `current_phase` too. States in `omit` (ones a debate
    never visits: no questions, no preparation, no judge) are left out with their edges.
    """
    compact = compact or human
    lines = ["stateDiagram-v2", "    [*] --> idle"]
    groups: dict[tuple[Event, str, str | None], list[State]] = {}
    left_out = {State(s) for s in omit}
    active_states = ACTIVE_STATES - left_out
    for t in TRANSITIONS:
        if t.source in left_out or (t.target != RETURN and State(t.target) in left_out):
            continue
        groups.setdefault((t.event, str(t.target), t.guard), []).append(t.source)
    pseudo = {"active": "any running state", "unfinished": "any unfinished state"}
    if human:
        pseudo = {"active": "While it runs", "unfinished": "Any time before it ends"}
    used: set[str] = set()
    seen: set[tuple[str, str, str]] = set()
    for (event, target, guard), sources in groups.items():
        if human:
            label = HUMAN_EVENTS[event] + (" (back to where it was)" if target == RETURN else "")
            label += f" ({HUMAN_GUARDS[guard]})" if guard and HUMAN_GUARDS[guard] else ""
        else:
            label = event.value + (" (back to where it was)" if target == RETURN else "")
            if guard:
                label += f" [{guard}]"
        if target == RETURN:
            # One edge stands for "back to the remembered state"; drawing all of them clutters.
            target = "active" if compact else State.DEBATING.value
            used.add("active") if compact else None
        names = [src.value for src in sources]
        if compact and len(sources) >= 3:
            unfinished = set(State) - TERMINAL_STATES - left_out
            if set(sources) != unfinished and set(sources) > active_states:
                # every running state and a few others (idle can pause): the group, then the others
                used.add("active")
                names = ["active", *(src.value for src in sources if src not in active_states)]
            else:
                group = "active" if set(sources) <= active_states else "unfinished"
                used.add(group)
                names = [group]
        for name in names:
            key = (name, target, label)
            if key in seen or (name == target and event is Event.TURN_COMPLETE and phases):
                continue
            if human and name == target and phases:  # turns, phases and rounds: the picture inside
                continue
            seen.add(key)
            lines.append(f"    {name} --> {target}: {label}")
    for name in sorted(used):
        lines.insert(1, f'    state "{pseudo[name]}" as {name}')
    if human:
        for value, words in reversed(HUMAN_STATES.items()):
            if State(value) not in left_out:
                lines.insert(1, f'    state "{words}" as {value}')
    lines += ["    completed --> [*]", "    stopped --> [*]"]
    if phases:
        lines.append("    state debating {")
        ids = [f"phase_{i}" for i in range(len(phases))]
        for pid, (_, title) in zip(ids, phases, strict=True):
            safe = _mermaid_text(title) if human else title.replace(":", " -").replace('"', "'")
            lines.append(f'        state "{safe}" as {pid}' if human else f'        {pid}: {safe}')
        lines.append(f"        [*] --> {ids[0]}")
        for a, b in pairwise(ids):
            lines.append(f"        {a} --> {b}" if human else f"        {a} --> {b}: PHASE_COMPLETE")
        looped = [pid for pid, (phase_id, _) in zip(ids, phases, strict=True) if phase_id in repeat]
        if human and looped:
            lines.append(f"        {looped[-1]} --> {looped[0]}: next round")
        lines.append(f"        {ids[-1]} --> [*]")
        lines.append("    }")
    if highlight:
        lines.append("    classDef current fill:#f59e0b,color:#111,stroke:#b45309,stroke-width:3px")
        lines.append(f"    class {State(highlight).value} current")
        if human and phases and current_phase and State(highlight) in (State.PREPARATION, State.DEBATING):
            index = [phase_id for phase_id, _ in phases].index(current_phase) \
                if current_phase in [phase_id for phase_id, _ in phases] else -1
            if index >= 0:
                lines.append(f"    class phase_{index} current")
    return "\n".join(lines)
