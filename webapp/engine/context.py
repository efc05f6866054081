"""Context management: which turns a participant is shown, and how they are kept within its budget.

The *view* comes first: normally every public turn plus the participant's own private ones; in the
collaborative format each act sees exactly what it works on (a proposal in round one sees nothing,
later proposals see the previous round's refinements, a critique sees the other agents' proposals
of this round, a refinement sees its own proposal and the critiques of it).

Each participant has a context budget in tokens: its `context_tokens` setting, else the known
context window of its model (`KNOWN_CONTEXT_WINDOWS`), else 8,000. What the history may use is the
budget minus the reply (`max_tokens`) and the instructions. Only when the view would exceed that is
the debate's strategy applied:

- `truncate` drops the oldest turns but always keeps the participant's own latest turn (its current
  position) and the latest opposing turn; the topic and the stance are part of the instructions and
  are never dropped;
- `sliding-window` keeps the last K turns (then truncates if even those do not fit);
- `summarize` replaces the older turns by a summary written once by a model, stored as an event and
  reused by every later turn (a later, larger summary starts from the previous one instead of
  re-reading everything).

Every compression adds a note (`context: …`) that the runner stores on the turn, so the transcript
shows where it happened and which strategy was used.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from webapp.engine.events import CallRecord, SummaryPayload
from webapp.engine.prompts import opponent_last, visible_history
from webapp.models import Participant, Turn, utcnow
from webapp.providers.base import estimate_tokens

if TYPE_CHECKING:
    from webapp.engine.schedule import TurnSlot
    from webapp.engine.state import DebateState

DEFAULT_CONTEXT_TOKENS = 8000
PROMPT_OVERHEAD_TOKENS = 400  # system prompt, phase instruction and guidance around the history
MIN_HISTORY_TOKENS = 150  # never squeeze the history below this, however small the budget
TURN_OVERHEAD_TOKENS = 16  # the "[Phase, round n] Name (position):" header of each rendered turn

# Context windows (tokens) of well-known models, matched by longest prefix of the model name
# (after any "vendor/" prefix, before any ":tag"). Unknown models get DEFAULT_CONTEXT_TOKENS.
KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "demo": 8000,
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "gemini": 1_048_576,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    "llama3": 8192,
    "mistral-large": 128_000,
    "mistral": 32_768,
    "mixtral": 32_768,
    "qwen2.5": 32_768,
    "deepseek": 65_536,
    "phi3": 4096,
    "gemma2": 8192,
}


def known_context_window(model: str) -> int | None:
    """The context window of a known model (longest matching prefix), else None."""
    name = model.strip().lower().rsplit("/", 1)[-1].split(":", 1)[0]
    best: str | None = None
    for prefix in KNOWN_CONTEXT_WINDOWS:
        if name.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return KNOWN_CONTEXT_WINDOWS[best] if best is not None else None


def context_budget(participant: Participant) -> int:
    """The participant's whole context budget in tokens (setting, known window, or the default)."""
    return participant.context_tokens or known_context_window(participant.model) or DEFAULT_CONTEXT_TOKENS


def history_budget(state: DebateState, participant: Participant) -> int:
    """Tokens the rendered history may use: the budget minus the reply and the instructions."""
    fixed = PROMPT_OVERHEAD_TOKENS + estimate_tokens(state.config.topic) + estimate_tokens(participant.persona)
    return max(MIN_HISTORY_TOKENS, context_budget(participant) - participant.max_tokens - fixed)


def turns_tokens(turns: list[Turn]) -> int:
    return sum(estimate_tokens(t.text) + TURN_OVERHEAD_TOKENS for t in turns)


# --- the view ----------------------------------------------------------------------------------

COLLABORATIVE_ACTS = ("propose", "critique", "refine")


def collaborative_view(state: DebateState, participant: Participant, slot: TurnSlot) -> list[Turn]:
    """Exactly the turns a proposal / critique / refinement works on (see the module docstring)."""
    turns = [t for t in state.turns if t.visible]
    if slot.act == "propose":
        return [t for t in turns if t.act == "refine" and t.round == slot.round - 1]
    if slot.act == "critique":
        return [t for t in turns if t.act == "propose" and t.round == slot.round and t.speaker != participant.id]
    if slot.act == "refine":
        own = [t for t in turns if t.act == "propose" and t.round == slot.round and t.speaker == participant.id]
        critiques = [t for t in turns if t.act == "critique" and t.round == slot.round
                     and t.speaker != participant.id]
        return own + critiques
    return visible_history(state.turns, participant.id)


def participant_view(state: DebateState, participant: Participant, slot: TurnSlot | None = None) -> list[Turn]:
    """The turns this participant may see for its next turn, before any compression."""
    if slot is not None and slot.act in COLLABORATIVE_ACTS:
        return collaborative_view(state, participant, slot)
    history = visible_history(state.turns, participant.id)
    if slot is not None and state.format.phase(slot.phase).parallel:
        # Speakers of a parallel phase go at once: none sees another's turn of this phase and round,
        # even when a pause or an error let some of them finish before the others were (re)asked.
        history = [t for t in history if not (t.phase == slot.phase and t.round == slot.round)]
    return history


def own_last(history: list[Turn], participant: Participant) -> Turn | None:
    """The participant's own latest turn: where its position currently stands."""
    return next((t for t in reversed(history) if t.speaker == participant.id), None)


def required_turns(history: list[Turn], participant: Participant, state: DebateState,
                   slot: TurnSlot | None = None) -> list[Turn]:
    """Turns that no compression may drop: own latest turn and the latest opposing turn (and, for an
    answer in cross-examination, the question being answered)."""
    keep: list[Turn] = []
    candidates = [own_last(history, participant), opponent_last(history, participant, state.config)]
    if slot is not None and slot.act == "answer":
        candidates.append(next((t for t in reversed(history) if t.act == "ask" and t.speaker != participant.id),
                               None))
    for turn in candidates:
        if turn is not None and all(turn is not k for k in keep):
            keep.append(turn)
    return keep


# --- compression -------------------------------------------------------------------------------


def build_history(state: DebateState, participant: Participant,
                  slot: TurnSlot | None = None) -> tuple[list[Turn], list[str]]:
    """The turns this participant sees for its next turn, and notes on any compression applied."""
    history = participant_view(state, participant, slot)
    budget = history_budget(state, participant)
    if turns_tokens(history) <= budget:
        return history, []
    policy = state.config.context
    if policy.strategy == "sliding-window":
        return sliding_window(history, participant, state, budget, policy.window, slot)
    if policy.strategy == "summarize":
        summarised = apply_summary(state, participant, history, budget, slot)
        if summarised is not None:
            return summarised
        kept, notes = truncate(history, participant, state, budget, slot)
        # Nothing older than the turns kept verbatim was left to summarise.
        return kept, [*notes, "context: summarize found nothing to summarise besides the turns it must keep, "
                      "so truncate was used"]
    return truncate(history, participant, state, budget, slot)


def truncate(history: list[Turn], participant: Participant, state: DebateState, budget: int,
             slot: TurnSlot | None = None) -> tuple[list[Turn], list[str]]:
    """Drop the oldest turns until the rest fits, never the required ones."""
    must_keep = required_turns(history, participant, state, slot)
    used = turns_tokens(must_keep)
    kept: list[Turn] = list(must_keep)
    for turn in reversed(history):
        if any(turn is k for k in must_keep):
            continue
        cost = turns_tokens([turn])
        if used + cost > budget:
            break
        kept.append(turn)
        used += cost
    order = {id(t): i for i, t in enumerate(history)}
    kept.sort(key=lambda t: order[id(t)])
    dropped = len(history) - len(kept)
    if dropped == 0:
        return kept, []
    note = (f"context: truncate dropped the {dropped} oldest of {len(history)} turns "
            "(kept the topic, the speaker's own position and the latest opposing turn)")
    if used > budget:
        note += "; the required turns alone exceed the budget"
    return kept, [note]


def sliding_window(history: list[Turn], participant: Participant, state: DebateState, budget: int,
                   window: int, slot: TurnSlot | None = None) -> tuple[list[Turn], list[str]]:
    """The last K turns; truncated further (keeping the required turns) if even they do not fit."""
    kept = history[-window:]
    notes = [f"context: sliding-window kept the last {len(kept)} of {len(history)} turns"] \
        if len(kept) < len(history) else []
    if turns_tokens(kept) > budget:
        kept, more = truncate(kept, participant, state, budget, slot)
        notes += more
    return kept, notes


# --- summaries ---------------------------------------------------------------------------------


def summary_key(turn_keys: list[str]) -> str:
    """A stable key for the summary of exactly these turns (shared by everyone who sees them)."""
    return hashlib.sha256("\n".join(turn_keys).encode()).hexdigest()[:16]


def summary_turn(summary: SummaryPayload) -> Turn:
    """A stored summary as a pseudo-turn, rendered as "[Summary of earlier turns]"."""
    now = utcnow()
    return Turn(key=f"summary/{summary.key}", phase="summary", round=0, speaker="summary",
                text=summary.text, started_at=now, finished_at=now)


def best_summary(state: DebateState, history: list[Turn]) -> SummaryPayload | None:
    """The stored summary covering the most of these turns and nothing outside them."""
    keys = {t.key for t in history}
    fitting = [s for s in state.summaries.values() if s.turn_keys and set(s.turn_keys) <= keys]
    return max(fitting, key=lambda s: len(s.turn_keys), default=None)


@dataclass
class SummaryPlan:
    """A summary that must be written before a turn: what it covers and what the model is shown."""

    key: str
    participant: str
    turn_keys: list[str]
    turns: list[Turn]  # what the summariser reads: the previous summary (if any), then the new turns
    previous: str | None = None

    def payload(self, text: str, record: CallRecord) -> SummaryPayload:
        """The SUMMARY event of this plan, once the model wrote `text` (its call recorded in `record`)."""
        return SummaryPayload(key=self.key, participant=self.participant, covered=len(self.turn_keys),
                              turn_keys=self.turn_keys, extends=self.previous, text=text, calls=[record])


def turns_to_summarise(state: DebateState, participant: Participant,
                       slot: TurnSlot | None = None) -> SummaryPlan | None:
    """The summary a `summarize` debate needs before this participant's next turn, or None."""
    if state.config.context.strategy != "summarize":
        return None
    history = participant_view(state, participant, slot)
    budget = history_budget(state, participant)
    if turns_tokens(history) <= budget:
        return None
    previous = best_summary(state, history)
    covered = list(previous.turn_keys) if previous else []
    rest = [t for t in history if t.key not in set(covered)]
    head = [summary_turn(previous)] if previous else []
    if turns_tokens(head + rest) <= budget:
        return None  # the stored summary is enough: reuse it
    # Keep the recent half of the budget verbatim (and always the required turns); summarise the rest.
    keep_from, used = len(rest), 0
    for index in range(len(rest) - 1, -1, -1):
        used += turns_tokens([rest[index]])
        if used > budget // 2:
            keep_from = index + 1
            break
    keep_from = max(1, min(keep_from, len(rest) - 1))
    must_keep = required_turns(history, participant, state, slot)
    new = [t for t in rest[:keep_from] if all(t is not k for k in must_keep)]
    if not new:
        return None
    turn_keys = covered + [t.key for t in new]
    key = summary_key(turn_keys)
    if key in state.summaries:
        return None
    return SummaryPlan(key=key, participant=participant.id, turn_keys=turn_keys, turns=head + new,
                       previous=previous.key if previous else None)


def apply_summary(state: DebateState, participant: Participant, history: list[Turn], budget: int,
                  slot: TurnSlot | None = None) -> tuple[list[Turn], list[str]] | None:
    """Replace the turns covered by the best stored summary by that summary; None if there is none."""
    summary = best_summary(state, history)
    if summary is None:
        return None
    covered = set(summary.turn_keys)
    head = summary_turn(summary)
    rest = [t for t in history if t.key not in covered]
    note = f"context: summarize replaced the {len(covered)} oldest of {len(history)} turns by a stored summary"
    if turns_tokens([head, *rest]) > budget:
        kept, notes = truncate(rest, participant, state, max(MIN_HISTORY_TOKENS, budget - turns_tokens([head])),
                               slot)
        return [head, *kept], [note, *notes]
    return [head, *rest], [note]
