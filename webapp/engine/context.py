"""Context management: what part of the history a participant is shown when it would not fit.

Strategies (per debate): `truncate` drops the oldest turns but always keeps the latest opposing
turn (the topic and the participant's own position live in the prompt itself); `sliding-window`
keeps the last K turns; `summarize` replaces older turns by a stored summary (written once by a
model, kept as an event and reused).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from webapp.engine.prompts import opponent_last, visible_history
from webapp.models import Participant, Turn, utcnow
from webapp.providers.base import estimate_tokens

if TYPE_CHECKING:
    from webapp.engine.state import DebateState

DEFAULT_CONTEXT_TOKENS = 8000
RESERVED_TOKENS = 1200  # instructions, topic, persona and the reply itself


def context_budget(participant: Participant) -> int:
    return participant.context_tokens or DEFAULT_CONTEXT_TOKENS


def turns_tokens(turns: list[Turn]) -> int:
    return sum(estimate_tokens(t.text) + 16 for t in turns)


def summary_key(participant_id: str, covered: int) -> str:
    return f"{participant_id}/{covered}"


def build_history(state: DebateState, participant: Participant) -> tuple[list[Turn], list[str]]:
    """The turns this participant sees for its next turn, and notes on any compression applied."""
    history = visible_history(state.turns, participant.id)
    budget = max(500, context_budget(participant) - RESERVED_TOKENS)
    policy = state.config.context
    if policy.strategy == "sliding-window" and len(history) > policy.window:
        kept = history[-policy.window :]
        return kept, [f"context: sliding-window kept the last {len(kept)} of {len(history)} turns"]
    if turns_tokens(history) <= budget:
        return history, []
    if policy.strategy == "summarize":
        summarised = apply_summary(state, participant, history, budget)
        if summarised is not None:
            return summarised
    return truncate(history, participant, state, budget)


def truncate(history: list[Turn], participant: Participant, state: DebateState,
             budget: int) -> tuple[list[Turn], list[str]]:
    must_keep = opponent_last(history, participant, state.config)
    kept: list[Turn] = []
    used = turns_tokens([must_keep]) if must_keep else 0
    for turn in reversed(history):
        if turn is must_keep:
            continue
        cost = turns_tokens([turn])
        if used + cost > budget:
            break
        kept.append(turn)
        used += cost
    if must_keep is not None:
        kept.append(must_keep)
    kept.sort(key=lambda t: history.index(t))
    dropped = len(history) - len(kept)
    return kept, [f"context: truncate dropped the {dropped} oldest of {len(history)} turns"]


def turns_to_summarise(state: DebateState, participant: Participant) -> tuple[list[Turn], int] | None:
    """Older turns that need a summary before this participant's next turn, or None."""
    if state.config.context.strategy != "summarize":
        return None
    history = visible_history(state.turns, participant.id)
    budget = max(500, context_budget(participant) - RESERVED_TOKENS)
    if turns_tokens(history) <= budget:
        return None
    # Keep the recent half of the budget verbatim; summarise everything older.
    used, split = 0, len(history)
    for index in range(len(history) - 1, -1, -1):
        used += turns_tokens([history[index]])
        if used > budget // 2:
            split = index + 1
            break
    split = max(1, min(split, len(history) - 1))
    if summary_key(participant.id, split) in state.summaries:
        return None
    return history[:split], split


def apply_summary(state: DebateState, participant: Participant, history: list[Turn],
                  budget: int) -> tuple[list[Turn], list[str]] | None:
    """Use the latest stored summary for this participant, if any covers the older turns."""
    mine = [s for s in state.summaries.values() if s.get("participant") == participant.id]
    if not mine:
        return None
    latest = max(mine, key=lambda s: int(s["covered"]))
    covered = int(latest["covered"])
    if covered <= 0 or covered > len(history):
        return None
    now = utcnow()
    summary_turn = Turn(key=f"summary/{latest['key']}", phase="summary", round=0, speaker="summary",
                        text=str(latest["text"]), started_at=now, finished_at=now)
    rest = history[covered:]
    result = [summary_turn, *rest]
    note = f"context: summarize replaced the {covered} oldest turns by a stored summary"
    if turns_tokens(result) > budget:
        kept, notes = truncate(rest, participant, state, budget - turns_tokens([summary_turn]))
        return [summary_turn, *kept], [note, *notes]
    return result, [note]
