"""What the browser's live transcript and status bar are told: the page's snapshot of a debate and the
compact items of its live stream (see `static/live/index.js` for the wire format).

Everything here is computed once per debate and sent, as the same bytes, to every spectator: no
per-page work happens for streamed text. Model output is data here; the browser renders it as
escaped, sanitised Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from webapp.engine import schedule
from webapp.engine.api import RetryNote
from webapp.engine.public import TERMINAL_STATES, DebateSession, DebateState, LiveTurn, LiveTurnStarted, State
from webapp.models import Turn
from webapp.ui.labels import STATUS_STYLE, model_beside, money, safe_color, ui_status
from webapp.ui.steps import stepper_steps

# The item types of the wire format.
TEXT, STARTED, CUT, COMMITTED, STATUS, NOTE = range(6)


def phase_visible(state: DebateState, phase_id: str) -> bool:
    """Private phases (preparation notes) are shown only when the debate asks for it."""
    try:
        return schedule.phase_visible(state.format.phase(phase_id), state.config)
    except KeyError:
        return True


def group_title(state: DebateState, phase_id: str, round_no: int) -> str:
    try:
        phase = state.format.phase(phase_id)
    except KeyError:
        return phase_id
    if phase.scope == "round" and state.format.has_rounds:
        return f"{phase.title} · Round {round_no}"
    return phase.title


def people(state: DebateState) -> dict[str, dict[str, str]]:
    return {p.id: {"name": p.name, "color": safe_color(p.color), "model": model_beside(p.name, p.provider, p.model)}
            for p in state.config.participants}


def retry_text(note: RetryNote) -> str:
    return (f"attempt {note.attempt} failed ({note.error.message or 'error'}); "
            f"retried after {note.wait_s:g} s")


def turn_meta(turn: Turn) -> str:
    tokens = f"{turn.usage.input_tokens}→{turn.usage.output_tokens} tok"
    if turn.usage.estimated:  # the server reported no usage: counted from the text
        tokens += " (estimated)"
    return f"{tokens} · {money(turn.cost_usd)}" + (f" · attempt {turn.attempt}" if turn.attempt > 1 else "")


def turn_info(state: DebateState, key: str, speaker: str, phase: str, round_no: int, act: str) -> dict[str, Any]:
    return {"key": key, "speaker": speaker, "group": group_title(state, phase, round_no), "act": act}


def retry_notes(state: DebateState) -> dict[str, list[str]]:
    """turn key -> its retry notes, in order."""
    out: dict[str, list[str]] = {}
    for note in state.notes:
        if isinstance(note, RetryNote):
            out.setdefault(note.turn, []).append(retry_text(note))
    return out


def committed_info(state: DebateState, turn: Turn, streamed: str | None, n: int | None = None) -> dict[str, Any]:
    """A finished turn for the browser; its text only when it differs from what was streamed. `n`, its
    place in the log, is looked up from the end (where a just-committed turn is) unless given."""
    info = turn_info(state, turn.key, turn.speaker, turn.phase, turn.round, turn.act)
    info["meta"] = turn_meta(turn)
    info["notes"] = [*retry_notes(state).get(turn.key, []), *turn.notes]
    # Its place in the log: the browser keeps finished turns in this order, whatever order it heard of
    # them in (one committed while the live bus was down arrives after the next turn has started).
    info["n"] = n if n is not None else next(
        (i for i in range(len(state.turns) - 1, -1, -1) if state.turns[i].key == turn.key), len(state.turns))
    if streamed != turn.text:
        info["text"] = turn.text
    return info


def started_info(state: DebateState, item: LiveTurnStarted | LiveTurn) -> dict[str, Any] | None:
    """Who starts speaking where, in as few bytes as the browser needs (it names turns by their small id;
    "speak" is the default act)."""
    if not phase_visible(state, item.phase):
        return None
    info: dict[str, Any] = {"speaker": item.speaker, "group": group_title(state, item.phase, item.round)}
    if item.act != "speak":
        info["act"] = item.act
    return info


def speaking(session: DebateSession) -> list[list[str]]:
    """[name, colour, what they are doing] for everyone busy right now."""
    state = session.state
    cast = people(state)
    out: list[list[str]] = []
    for turn in session.live_turns.values():
        person = cast.get(turn.speaker, {"name": turn.speaker, "color": "#94a3b8"})
        if turn.queued:
            doing = "waiting for the server…"
        elif not phase_visible(state, turn.phase):
            doing = "preparing…"
        else:
            doing = "speaking…" if any(turn.parts) else "thinking…"
        out.append([person["name"], person["color"], doing])
    if state.status is State.JUDGING:
        out.append(["Judge", "", "judging…"])
    elif state.status is State.CLARIFYING:
        out.append(["Judge", "", "collecting questions…"])
    return out


def announcement(session: DebateSession) -> str:
    """What a screen reader hears when the debate moves on: where it is and who speaks ("Rebuttal ·
    Round 2: Opposition speaking"), or its state ("paused", "completed"). It changes when a turn starts
    or ends, or the phase or state changes, never with the streamed text (the status bar's live region
    carries only this; the cost beside it changes with every token)."""
    state = session.state
    if state.status in TERMINAL_STATES or state.status not in (State.DEBATING, State.PREPARATION, State.JUDGING,
                                                               State.CLARIFYING):
        return f"Debate {STATUS_STYLE[ui_status(state.status.value, session.view().interrupted)][0]}"
    if state.status is State.JUDGING:
        return "The judge is deciding"
    if state.status is State.CLARIFYING:
        return "The judge is collecting questions"
    position = state.position
    where = group_title(state, position.phase, position.round) if position.phase else ""
    cast = people(state)
    names = [cast.get(t.speaker, {"name": t.speaker})["name"] for t in session.live_turns.values() if not t.queued]
    if not names and position.speaker in cast:  # between two turns: the next speaker (no extra announcement)
        names = [cast[position.speaker]["name"]]
    if not names:
        return where or "Debate running"
    doing = "preparing" if state.status is State.PREPARATION else "speaking"
    who = f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]
    return f"{where}: {who} {doing}" if where else f"{who} {doing}"


def status(session: DebateSession) -> dict[str, Any]:
    """The live summary shown in the sticky bar and the cost card."""
    state = session.state
    view = session.view()
    ledger, budget = state.ledger, state.config.budget
    total = ledger.total_usd
    warned = state.cost_warned or (budget.warn_at is not None and total >= budget.warn_at)
    shown = ui_status(view.status.value, view.interrupted)
    limit = ""
    if budget.cost_limit:
        limit = f"{money(total)} of {money(budget.cost_limit)} limit"
        if budget.warn_at is not None:
            limit += f" · warns at {money(budget.warn_at)}"
    elif budget.warn_at is not None:
        limit = f"warns at {money(budget.warn_at)} · no hard limit"
    models = []
    streaming = bool(session.live_turns) or state.status in (State.DEBATING, State.PREPARATION)
    for model, usd in sorted(ledger.by_model.items()):
        priced = money(usd if model not in ledger.unpriced_models else None)
        if streaming:  # cost per model as it changes; token counts once the debate stops streaming
            models.append([model, priced])
            continue
        tokens = ledger.tokens_by_model.get(model, {})
        models.append([model, f"{tokens.get('input_tokens', 0):,} in · {tokens.get('output_tokens', 0):,} out · "
                              f"{priced}"])
    steps, steps_round = stepper_steps(state)
    return {
        "ended": state.status in TERMINAL_STATES,
        "steps": steps,
        "steps_round": steps_round,
        "state": STATUS_STYLE[shown][0],
        "speaking": speaking(session),
        "announce": announcement(session),
        "cost": money(total),
        "limit": limit,
        "ratio": min(1.0, total / budget.cost_limit) if budget.cost_limit else None,
        "warned": warned,
        "simulated": ledger.simulated,
        "unpriced": ", ".join(sorted(ledger.unpriced_models)),
        "models": models,
    }


@dataclass
class CutTurn:
    """A turn with attempts cut off while it was watched: who started it where, and each attempt's text
    and why it was cut (`{"text", "reason", "attempt"}`, as the browser keeps them)."""

    started: LiveTurnStarted | LiveTurn
    cuts: list[dict[str, Any]] = field(default_factory=list)


def snapshot_turns(session: DebateSession, kid: Any, cut: Mapping[str, CutTurn] | None = None) -> list[dict[str, Any]]:
    """Every visible finished turn, then every visible turn in flight (with the text streamed so far);
    `kid(key)` gives the channel's small id for a turn key. `cut`: attempts cut off while the debate was
    watched, shown above their turn (or alone where it was not redone) as the pages watching then show them."""
    state = session.state
    notes = retry_notes(state)
    cut = cut or {}
    out: list[dict[str, Any]] = []
    for n, turn in enumerate(state.turns):
        if not turn.visible:
            continue
        info = turn_info(state, turn.key, turn.speaker, turn.phase, turn.round, turn.act)
        out.append({**info, "kid": kid(turn.key), "n": n, "state": "final", "text": turn.text, "meta": turn_meta(turn),
                    "notes": [*notes.get(turn.key, []), *turn.notes], "attempt": turn.attempt,
                    **_cuts(cut, turn.key)})
    for key, live in session.live_turns.items():
        if key in state.turn_keys:
            continue
        if not phase_visible(state, live.phase):
            continue
        started = turn_info(state, key, live.speaker, live.phase, live.round, live.act)
        out.append({**started, "kid": kid(key), "state": "live", "text": live.text, "meta": "",
                    "notes": notes.get(key, []), "attempt": live.attempt, **_cuts(cut, key)})
    for key, cut_turn in cut.items():  # cut off and not (yet) redone: the debate paused, stopped or failed there
        begun = cut_turn.started
        if key in state.turn_keys or key in session.live_turns or not phase_visible(state, begun.phase):
            continue
        started = turn_info(state, key, begun.speaker, begun.phase, begun.round, begun.act)
        out.append({**started, "kid": kid(key), "state": "cut", "text": "", "meta": "", "notes": notes.get(key, []),
                    "attempt": begun.attempt, "cuts": list(cut_turn.cuts)})
    return out


def _cuts(cut: Mapping[str, CutTurn], key: str) -> dict[str, Any]:
    return {"cuts": list(cut[key].cuts)} if key in cut else {}


def empty_text(state: DebateState) -> str:
    if state.status in TERMINAL_STATES:
        return "No turns were spoken in this debate."
    if state.status is State.IDLE:
        return "Not started yet — the first speaker will appear here."
    return "No turns yet — the first speaker will appear here."
