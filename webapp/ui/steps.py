"""What the phase stepper shows, computed from the log: each phase's condition, the Verdict pill's, and
"Round N of M".

A phase is done when the engine recorded it finished (`state.phase_marks`), the phase a stopped or
failed debate was in says so, and phases a stopped or failed debate never got to are shown as not
reached. `stepper_view` is the pure part of the stepper (`ui/components/stepper.py`, tested without a
page); `stepper_steps` is what of it changes while a debate runs, sent by the live stream's status
items (`ui/live_wire.py`) as well, hence its place below both.
"""

from __future__ import annotations

from dataclasses import dataclass

from webapp.engine.public import DebateState, State
from webapp.wording import counted, noun

RUNNING = (State.PREPARATION, State.DEBATING)
WAITING = (State.PAUSED, State.AWAITING_ACK)


@dataclass(frozen=True)
class StepperView:
    phases: tuple[tuple[str, str, str], ...]  # (phase id, title, condition)
    verdict: str | None  # the Verdict pill's condition, None when the debate is not judged
    round_text: str | None


def _resumes_in(state: DebateState) -> State | None:
    """The state a paused, warned or failed debate returns to."""
    return state.return_state


def _stopped_from(state: DebateState) -> State | None:
    """The state the debate was in when it moved to `stopped` (judging, for a stop during the verdict)."""
    for transition in reversed(state.transitions):
        if transition.to is State.STOPPED:
            return transition.from_
    return None


def _current_round(state: DebateState, block: list[str]) -> int:
    """The round the phase pills describe: the position's while in the round block, else the last one
    with a finished round phase (0 before the block)."""
    pos = state.position
    if pos.phase in block:
        return max(1, pos.round or 1)
    return max((r for pid, r in state.phase_marks if pid in block), default=0)


def _rounds_held(state: DebateState, block: list[str]) -> int:
    """Rounds a completed debate held (every round it started, it finished)."""
    marked = max(state.round_marks, default=0)
    return max(marked, max((t.round for t in state.turns if t.phase in block), default=0))


def stepper_view(state: DebateState) -> StepperView:
    fmt = state.format
    status = state.status
    pos = state.position
    block = [p.id for p in fmt.phases if p.scope == "round"]
    resumes = _resumes_in(state)
    ended = status is State.STOPPED or status is State.ERROR or state.stopping
    where = resumes if status in WAITING or status is State.ERROR else status
    in_phases = where in RUNNING
    current_round = _current_round(state, block)

    def finished(phase_id: str, scope: str) -> bool:
        if status is State.COMPLETED:
            return True
        if scope == "round":
            return current_round > 0 and (phase_id, current_round) in state.phase_marks
        return (phase_id, 1) in state.phase_marks

    phases: list[tuple[str, str, str]] = []
    for phase in fmt.phases:
        if finished(phase.id, phase.scope):
            condition = "done"
        elif pos.phase == phase.id and (in_phases or ended):  # a position is set only once a turn is asked
            if status is State.ERROR:
                condition = "failed"
            elif status is State.STOPPED or state.stopping:
                condition = "stopped"
            elif status in WAITING:
                condition = "paused" if status is State.PAUSED else "waiting"
            else:
                condition = "current"
        else:
            condition = "not-reached" if ended else "todo"
        phases.append((phase.id, phase.title, condition))

    verdict: str | None = None
    if state.config.judge.enabled:
        if state.verdict is not None:
            verdict = "done" if state.verdict.available else "unavailable"
        elif status is State.JUDGING:
            verdict = "current"
        elif status in WAITING and resumes is State.JUDGING:
            verdict = "paused" if status is State.PAUSED else "waiting"
        elif status is State.ERROR and resumes is State.JUDGING:
            verdict = "failed"
        elif status is State.STOPPED and _stopped_from(state) is State.JUDGING:
            verdict = "stopped"
        else:
            verdict = "not-reached" if ended or status is State.COMPLETED else "todo"
    return StepperView(tuple(phases), verdict, _round_text(state, block, current_round))


def _round_text(state: DebateState, block: list[str], current_round: int) -> str | None:
    """"Round 2 of 3" while a round phase runs; how many rounds were held once it ended; nothing
    before the first round (preparation, opening statements) or in phases after the rounds."""
    fmt = state.format
    if not fmt.has_rounds or not block:
        return None
    total = state.total_rounds
    fixed = fmt.termination.kind == "fixed"
    of_total = f"of {total}" if fixed else f"(at most {total})"
    status = state.status
    if status is State.COMPLETED:
        held = _rounds_held(state, block)
        if not held:
            return None
        cap = f" (at most {total})" if not fixed and held < total else ""
        return f"{counted(held, 'round')}{cap}"
    if state.position.phase in block and status is not State.IDLE:
        # Stopped or not, where it is (the badge and the outcome say once that it was stopped, and by whom).
        return f"Round {current_round} {of_total}"
    if status is State.STOPPED:
        held = max(state.round_marks, default=0)
        return f"{held} {of_total} {noun(total if fixed else held, 'round')} completed" if held else None
    return None


def stepper_steps(state: DebateState) -> tuple[list[str], str | None]:
    """Each pill's condition (the phases, then the Verdict pill when judged) and the round text: what
    changes while a debate runs. The live stream carries it once per debate (its status items)."""
    view = stepper_view(state)
    steps = [condition for _, _, condition in view.phases]
    if view.verdict is not None:
        steps.append(view.verdict)
    return steps, view.round_text
