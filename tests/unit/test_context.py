"""Context management: budgets from known context windows, and each compression strategy keeping the
turns it must keep (own latest turn, latest opposing turn) and saying what it did."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.engine.context import (
    DEFAULT_CONTEXT_TOKENS,
    best_summary,
    build_history,
    context_budget,
    history_budget,
    known_context_window,
    participant_view,
    turns_to_summarise,
    turns_tokens,
)
from webapp.engine.events import CallRecord
from webapp.engine.schedule import TurnSlot
from webapp.engine.state import DebateState
from webapp.models import ContextPolicy, DebateConfig, Participant, Turn, utcnow

WORDS_100 = " ".join(["word"] * 100)  # 500 characters: 125 tokens (+16 for the turn header)


def make_state(*names_positions: tuple[str, str], strategy: str = "truncate", window: int = 6,
               fmt: str = "free-form", **participant: Any) -> DebateState:
    people = [Participant(name=n, position=p, context_tokens=1000, max_tokens=100, **participant)
              for n, p in names_positions]
    config = DebateConfig(topic="Ban cars downtown?", format=fmt, participants=people,
                          context=ContextPolicy(strategy=strategy, window=window))
    return DebateState("d1", config, utcnow())


def add(state: DebateState, speaker: str, text: str = WORDS_100, round_no: int = 1, act: str = "speak",
        visible: bool = True, phase: str = "exchange") -> Turn:
    now = utcnow()
    key = f"{phase}/r{round_no}/{speaker}/{len(state.turns)}"
    t = Turn(key=key, phase=phase, round=round_no, speaker=speaker, act=act, text=text, started_at=now,
             finished_at=now, visible=visible)
    state.turns.append(t)
    state.turn_keys.add(key)
    return t


# --- budgets -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-4", 8192),
        ("claude-sonnet-4-5", 200_000),
        ("anthropic/claude-3.5-haiku", 200_000),  # OpenRouter-style vendor prefix
        ("llama3.1:8b", 131_072),  # Ollama tag
        ("llama3:8b", 8192),
        ("demo", 8000),
        ("demo-instant", 8000),
        ("my-own-finetune", None),
    ],
)
def test_known_context_windows(model: str, window: int | None) -> None:
    assert known_context_window(model) == window


def test_budget_prefers_the_setting_then_the_known_window_then_the_default() -> None:
    assert context_budget(Participant(model="my-own-finetune")) == DEFAULT_CONTEXT_TOKENS == 8000
    assert context_budget(Participant(provider="openai", model="gpt-4o")) == 128_000
    assert context_budget(Participant(provider="openai", model="gpt-4o", context_tokens=3000)) == 3000


def test_history_budget_leaves_room_for_the_reply_and_instructions() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"))
    ann = state.config.participant("ann")
    assert history_budget(state, ann) < context_budget(ann) - ann.max_tokens
    assert history_budget(state, ann) >= 150


# --- no compression when it fits ----------------------------------------------------------------


def test_history_that_fits_is_untouched() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"))
    for speaker in ("ann", "bob"):
        add(state, speaker, "A short turn.")
    history, notes = build_history(state, state.config.participant("ann"))
    assert [t.key for t in history] == [t.key for t in state.turns] and notes == []


def test_private_turns_are_seen_only_by_their_author() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"))
    add(state, "ann", "my private notes", visible=False)
    add(state, "bob", "public")
    assert len(participant_view(state, state.config.participant("ann"))) == 2
    assert [t.text for t in participant_view(state, state.config.participant("bob"))] == ["public"]


# --- truncate ----------------------------------------------------------------------------------


def test_truncate_drops_oldest_but_keeps_own_latest_and_latest_opposing_turn() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"), ("Cy", "con"), strategy="truncate")
    ann_opening = add(state, "ann", " ".join(["mine"] * 20))  # Ann's own position, now the oldest turn
    bob1 = add(state, "bob")
    cy1 = add(state, "cy")
    bob2 = add(state, "bob")
    cy2 = add(state, "cy")
    ann = state.config.participant("ann")
    assert turns_tokens(state.turns) > history_budget(state, ann)
    history, notes = build_history(state, ann)
    assert ann_opening in history and cy2 in history  # required turns
    assert bob1 not in history  # the oldest droppable turn went first
    assert [t.key for t in history] == [ann_opening.key, cy1.key, bob2.key, cy2.key]  # order kept
    assert turns_tokens(history) <= history_budget(state, ann)
    assert len(notes) == 1 and notes[0].startswith("context: truncate dropped the 1 oldest of 5 turns")


def test_truncate_keeps_required_turns_even_when_they_alone_overflow() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"))
    huge = " ".join(["long"] * 600)
    add(state, "bob")
    own = add(state, "ann", huge)
    opposing = add(state, "bob", huge)
    history, notes = build_history(state, state.config.participant("ann"))
    assert history == [own, opposing]
    assert "the required turns alone exceed the budget" in notes[0]


def test_an_answer_keeps_the_question_it_answers() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"), ("Cy", "con"), strategy="truncate")
    question = add(state, "bob", "What would delivery vans do?", act="ask")
    for who in ("bob", "cy", "bob", "cy"):
        add(state, who)
    ann = state.config.participant("ann")
    answer = TurnSlot(key="exchange/r9/ann/0", phase="exchange", round=9, speaker="ann", act="answer", index=0)
    history, notes = build_history(state, ann, answer)
    assert question in history and state.turns[-1] in history and notes
    assert question not in build_history(state, ann)[0]  # a plain speech may drop it like any old turn


# --- sliding window ----------------------------------------------------------------------------


def test_sliding_window_keeps_the_last_k_turns_when_over_budget() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"), strategy="sliding-window", window=3)
    turns = [add(state, s) for s in ("ann", "bob", "ann", "bob", "ann", "bob")]
    history, notes = build_history(state, state.config.participant("ann"))
    assert history == turns[-3:]
    assert notes == ["context: sliding-window kept the last 3 of 6 turns"]


def test_sliding_window_is_not_applied_while_the_history_fits() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"), strategy="sliding-window", window=2)
    turns = [add(state, s, "Short.") for s in ("ann", "bob", "ann", "bob")]
    assert build_history(state, state.config.participant("bob")) == (turns, [])


def test_sliding_window_truncates_further_when_the_window_does_not_fit() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"), strategy="sliding-window", window=5)
    turns = [add(state, s) for s in ("ann", "bob", "ann", "bob", "ann", "bob")]
    history, notes = build_history(state, state.config.participant("ann"))
    assert turns[-1] in history and turns[-2] in history  # latest opposing and own latest
    assert notes[0] == "context: sliding-window kept the last 5 of 6 turns"
    assert notes[1].startswith("context: truncate dropped")


# --- summarize ---------------------------------------------------------------------------------


def store(state: DebateState, plan: Any, text: str = "Summary: cars, shops and air.") -> None:
    """What the runner does with a plan: commit a SUMMARY event (folded into state.summaries)."""
    state.summaries[plan.key] = plan.payload(text, CallRecord(model="demo:demo"))


def test_summarize_plans_a_summary_of_older_turns_never_of_the_required_ones() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"), strategy="summarize")
    turns = [add(state, s) for s in ("ann", "bob", "ann", "bob", "ann", "bob")]
    ann = state.config.participant("ann")
    plan = turns_to_summarise(state, ann)
    assert plan is not None
    assert plan.turn_keys == [t.key for t in turns[:4]]
    assert plan.previous is None and [t.key for t in plan.turns] == plan.turn_keys
    store(state, plan)
    history, notes = build_history(state, ann)
    assert history[0].phase == "summary" and history[0].text == "Summary: cars, shops and air."
    assert history[1:] == turns[4:]
    assert notes == ["context: summarize replaced the 4 oldest of 6 turns by a stored summary"]


def test_a_stored_summary_is_reused_not_recomputed_and_shared() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"), strategy="summarize")
    for s in ("ann", "bob", "ann", "bob", "ann", "bob"):
        add(state, s)
    plan = turns_to_summarise(state, state.config.participant("ann"))
    assert plan is not None
    store(state, plan)
    assert turns_to_summarise(state, state.config.participant("ann")) is None
    # Bob sees the same public turns: he reuses Ann's summary instead of asking for his own
    assert turns_to_summarise(state, state.config.participant("bob")) is None
    history, _ = build_history(state, state.config.participant("bob"))
    assert history[0].key == f"summary/{plan.key}"


def test_a_later_summary_extends_the_previous_one() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"), strategy="summarize")
    for s in ("ann", "bob", "ann", "bob", "ann", "bob"):
        add(state, s)
    ann = state.config.participant("ann")
    first = turns_to_summarise(state, ann)
    assert first is not None
    store(state, first)
    for s in ("ann", "bob", "ann", "bob"):
        add(state, s)
    second = turns_to_summarise(state, ann)
    assert second is not None
    assert second.previous == first.key
    assert second.turn_keys[: len(first.turn_keys)] == first.turn_keys
    assert second.turns[0].phase == "summary"  # the summariser reads the old summary, not the old turns
    assert not set(first.turn_keys) & {t.key for t in second.turns}
    store(state, second, "Longer summary.")
    history, notes = build_history(state, ann)
    assert history[0].text == "Longer summary." and len(history) == 3
    assert "replaced the 8 oldest of 10 turns" in notes[0]


def test_a_summary_covering_someone_elses_private_turn_is_not_shown_to_others() -> None:
    state = make_state(("Ann", "pro"), ("Bob", "con"), strategy="summarize")
    add(state, "ann", "private plan", visible=False)
    for s in ("ann", "bob", "ann", "bob", "ann", "bob"):
        add(state, s)
    plan = turns_to_summarise(state, state.config.participant("ann"))
    assert plan is not None and state.turns[0].key in plan.turn_keys
    store(state, plan)
    bob_view = participant_view(state, state.config.participant("bob"))
    assert best_summary(state, bob_view) is None
    assert all("private" not in t.text for t in build_history(state, state.config.participant("bob"))[0])


# --- collaborative views -----------------------------------------------------------------------


def collab_state() -> DebateState:
    state = make_state(("Ann", "architect"), ("Bob", "critic"), ("Cy", "tester"), fmt="collaborative")
    for round_no in (1, 2):
        for phase, act in (("proposal", "propose"), ("critique", "critique"), ("refinement", "refine")):
            if round_no == 2 and phase != "proposal":
                continue
            for who in ("ann", "bob", "cy"):
                add(state, who, f"{act} {round_no} by {who}", round_no=round_no, act=act, phase=phase)
    return state


def keys(turns: list[Turn]) -> list[str]:
    return [t.text for t in turns]


def slot(act: str, round_no: int, speaker: str) -> TurnSlot:
    phase = {"propose": "proposal", "critique": "critique", "refine": "refinement"}[act]
    return TurnSlot(key=f"{phase}/r{round_no}/{speaker}/0", phase=phase, round=round_no, speaker=speaker,
                    act=act, index=0)


def test_collaborative_views_hold_exactly_the_right_turns() -> None:
    state = collab_state()
    ann = state.config.participant("ann")
    assert participant_view(state, ann, slot("propose", 1, "ann")) == []
    assert keys(participant_view(state, ann, slot("propose", 2, "ann"))) == [
        "refine 1 by ann", "refine 1 by bob", "refine 1 by cy"]
    assert keys(participant_view(state, ann, slot("critique", 2, "ann"))) == ["propose 2 by bob", "propose 2 by cy"]
    assert keys(participant_view(state, ann, slot("refine", 1, "ann"))) == [
        "propose 1 by ann", "critique 1 by bob", "critique 1 by cy"]
