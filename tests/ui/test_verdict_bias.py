"""The verdict card's bias checks: words per side, the length flag, judges undecided by the order,
notes on how the verdict was obtained, and each ruling's output mode — on finished demo debates whose
verdict is given the values the judge code stores."""

from __future__ import annotations

import uuid

from nicegui import ui
from nicegui.testing import User

from tests.ui.helpers import marked_texts, one, start_demo
from webapp.engine.machine import State
from webapp.engine.state import DebateState
from webapp.ui.components.verdict import length_ratio, render_verdict

PANEL = {"judges": [{"provider": "demo", "model": "demo"}, {"provider": "demo", "model": "demo-instant"}]}


async def show(user: User, state: DebateState) -> None:
    path = f"/test-verdict/{uuid.uuid4().hex}"

    @ui.page(path)
    def _page() -> None:
        render_verdict(state)

    await user.open(path)


async def finished(topic: str, **changes: object) -> DebateState:
    session = await start_demo(topic, **changes)
    assert await session.join() is State.COMPLETED
    return session.state


def ids(state: DebateState) -> tuple[str, str]:
    first, second = state.config.participants[:2]
    return first.id, second.id


async def test_words_per_side_and_the_length_flag(user: User) -> None:
    state = await finished("Are long answers better?")
    a, b = ids(state)
    assert state.verdict is not None
    state.verdict = state.verdict.model_copy(update={"winner": a, "word_counts": {a: 1800, b: 1000},
                                                     "length_flag": True})
    await show(user, state)
    names = {p.id: p.name for p in state.config.participants}
    assert marked_texts(user, "word-count") == [f"{names[a]} 1,800", f"{names[b]} 1,000"]
    await user.should_see("The winner spoke 1.8× as many words")
    assert length_ratio(state.verdict) == 1.8


async def test_no_flag_without_length_flag_and_no_counts_without_counts(user: User) -> None:
    state = await finished("Are short answers better?")
    a, b = ids(state)
    assert state.verdict is not None
    state.verdict = state.verdict.model_copy(update={"winner": a, "word_counts": {a: 900, b: 1000},
                                                     "length_flag": False, "notes": []})
    await show(user, state)
    await user.should_see(marker="word-counts")
    await user.should_not_see(marker="length-flag")
    state.verdict = state.verdict.model_copy(update={"word_counts": {}})
    await show(user, state)
    await user.should_not_see(marker="word-counts")
    await user.should_not_see(marker="undecided")


async def test_undecided_judges_notes_and_output_modes_in_the_rulings(user: User) -> None:
    state = await finished("Does the order decide?", judge=PANEL)
    a, b = ids(state)
    verdict = state.verdict
    assert verdict is not None and len(verdict.rulings) == 2
    first, second = verdict.rulings
    rulings = [first.model_copy(update={"winner": a, "swap_winner": b, "flipped": True, "output_mode": "json_schema"}),
               second.model_copy(update={"winner": a, "swap_winner": a, "flipped": False, "output_mode": "prompt"})]
    state.verdict = verdict.model_copy(update={
        "rulings": rulings, "undecided_judges": [first.judge],
        "notes": ["compatible:llama3.1: json_schema refused by the server; answered in json_object mode"]})
    await show(user, state)
    await user.should_see("Undecided: the winner flipped when the order was reversed")
    assert marked_texts(user, "undecided-judge") == [f"· {first.judge}"]
    assert marked_texts(user, "verdict-note") == [
        "compatible:llama3.1: json_schema refused by the server; answered in json_object mode"]
    table = next(e for e in one(user, "rulings").descendants() if isinstance(e, ui.table))
    assert [r["mode"] for r in table.rows] == ["json_schema", "prompt", ""]
    names = {p.id: p.name for p in state.config.participants}
    assert [r["swap"] for r in table.rows] == [f"{names[b]} (flipped: undecided)", f"{names[a]} (same)", ""]
    assert "Order reversed" in [c["label"] for c in table.columns]


async def test_a_single_judges_output_mode_is_shown_small(user: User) -> None:
    state = await finished("One judge")
    assert state.verdict is not None and len(state.verdict.rulings) == 1
    state.verdict = state.verdict.model_copy(update={
        "rulings": [state.verdict.rulings[0].model_copy(update={"output_mode": "tool"})]})
    await show(user, state)
    assert marked_texts(user, "output-mode") == ["answer via tool"]
