"""The outcome card (result first) and the verdict card's panel headline, rendered from real demo
debates through the real component functions on a test page.

Where a case cannot be had from the deterministic demo (a tie, a panel split, an unavailable verdict),
the finished debate's verdict is replaced in its state, as the debate page tests do."""

from __future__ import annotations

import re
import uuid

import pytest
from nicegui import ui
from nicegui.testing import User

from tests.ui.helpers import html_text, marked_texts, one, start_demo
from webapp.engine.machine import State
from webapp.engine.panel import SPLIT_RULE
from webapp.engine.runner import DebateSession
from webapp.engine.state import DebateState
from webapp.models import Participant, Verdict
from webapp.ui.components.outcome import outcome_of, outcome_signature, render_outcome
from webapp.ui.components.verdict import panel_tally, render_verdict

PANEL = {"judges": [{"provider": "demo", "model": "demo"}, {"provider": "demo", "model": "demo-instant"}]}


async def show(user: User, state: DebateState) -> None:
    """Open a page that renders the outcome and verdict cards of `state` (a page of its own, so these
    tests do not depend on how the debate page arranges its sections)."""
    path = f"/test-outcome/{uuid.uuid4().hex}"

    @ui.page(path)
    def _page() -> None:
        with ui.column().mark("outcome-slot"):
            render_outcome(state)
        render_verdict(state)

    await user.open(path)


def headline(user: User) -> str:
    (text,) = marked_texts(user, "headline")
    return text


async def finished(topic: str, **changes: object) -> DebateSession:
    session = await start_demo(topic, **changes)
    assert await session.join() is State.COMPLETED
    return session


def names(state: DebateState) -> dict[str, str]:
    return {p.id: p.name for p in state.config.participants}


# --- winner, tie, unavailable ------------------------------------------------------------------


async def test_a_win_is_the_headline_with_the_winners_colour_scores_and_a_link_to_the_verdict(user: User) -> None:
    session = await finished("Should cities ban cars downtown?")
    state = session.state
    verdict = state.verdict
    assert verdict is not None and verdict.winner is not None
    await show(user, state)
    winner = names(state)[verdict.winner]
    assert headline(user) == f"{winner} wins"
    color = next(p.color for p in state.config.participants if p.id == verdict.winner)
    # the headline's dot: the winner's colour
    assert f'<span class="rostrum-dot w-4 h-4 shrink-0" style="background:{color}"' in \
        one(user, "outcome-headline").content
    scores = html_text(one(user, "outcome-scores").content)
    for p in state.config.participants:
        assert f"{p.name} {verdict.scores[p.id]:g}" in scores
    assert '<a href="#verdict" ' in one(user, "outcome-verdict-link").content
    assert one(user, "verdict").props["id"] == "verdict"  # the anchor the link jumps to
    await user.should_see(marker="confidence")  # one judge: its confidence, as before


async def test_a_tie_says_tie(user: User) -> None:
    session = await finished("Is a tie possible?")
    state = session.state
    assert state.verdict is not None
    before = outcome_signature(state)
    state.verdict = state.verdict.model_copy(update={"winner": None})
    assert outcome_signature(state) != before  # the page re-renders the card
    await show(user, state)
    assert headline(user) == "Tie"
    assert outcome_of(state).winner is None  # type: ignore[union-attr]


async def test_an_unavailable_verdict_says_why(user: User) -> None:
    session = await finished("Can a judge fail?")
    state = session.state
    state.verdict = Verdict(available=False, reasoning="Verdict unavailable. demo:demo: the reply was not valid JSON")
    await show(user, state)
    assert headline(user) == "Verdict unavailable: demo:demo: the reply was not valid JSON"
    await user.should_not_see(marker="outcome-scores")
    await user.should_see(marker="verdict-unavailable")


async def test_a_debate_stopped_after_an_error_without_a_verdict_says_why_it_ended(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "3:auth")
    session = await start_demo("Does an error end it?", format="structured", rounds=None)
    assert await session.join() is State.ERROR
    assert outcome_of(session.state) is None  # not ended: the error panel offers Retry
    await session.stop(verdict=False)
    assert await session.join() is State.STOPPED
    await show(user, session.state)
    text = headline(user)
    assert text.startswith("Stopped automatically at ") and ", without a verdict, after an error from " in text, text
    assert "simulated invalid API key" in text
    await user.should_not_see(marker="outcome-verdict-link")  # no verdict card to link to


async def test_nothing_is_rendered_before_the_debate_ends(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "1:auth")
    session = await start_demo("Not over yet")
    assert await session.join() is State.ERROR
    await show(user, session.state)
    await user.should_not_see(marker="outcome")
    assert outcome_signature(session.state) == (None,)


# --- panels ------------------------------------------------------------------------------------


def split(state: DebateState, *winners: str | None) -> Verdict:
    """The finished panel's verdict with its judges' own winners replaced (one ruling per winner)."""
    verdict = state.verdict
    assert verdict is not None and len(verdict.rulings) >= 2
    template = verdict.rulings[0]
    rulings = [template.model_copy(update={"judge": f"judge-{i}", "winner": w, "confidence": 0.5 + i / 10})
               for i, w in enumerate(winners)]
    return verdict.model_copy(update={"rulings": rulings, "confidence": 0.6})


async def test_a_split_panel_says_so_and_shows_no_single_confidence(user: User) -> None:
    session = await finished("Should museums return artefacts?", judge=PANEL)
    state = session.state
    pro, con = (p.id for p in state.config.participants)
    # Stored under the old rule, the mean score had broken the split: one rule reads it everywhere now.
    state.verdict = split(state, pro, con).model_copy(update={"winner": con, "disagreement": 2.5})
    await show(user, state)
    assert headline(user) == "No winner: judges split 1–1"
    assert outcome_of(state).winner is None  # type: ignore[union-attr]
    await user.should_not_see(marker="confidence")  # no panel-wide confidence badge
    assert marked_texts(user, "winner") == ["No winner"]  # not "Winner: … on mean score" under the banner
    assert marked_texts(user, "panel-split") == ["judges split 1–1"]
    assert marked_texts(user, "split-rule") == [SPLIT_RULE]
    await user.should_see("Disagreement between judges: 2.5 points, how far apart the judges' scores are")
    await user.should_see(marker="rulings")  # each judge's confidence is in the rulings table
    table = next(e for e in one(user, "rulings").descendants() if isinstance(e, ui.table))
    assert [row["confidence"] for row in table.rows[:2]] == ["50%", "60%"]
    assert "Mean scores of 2 judges" in html_text(one(user, "outcome-scores").content)


async def test_a_majority_of_the_panel_names_its_winner_with_the_count(user: User) -> None:
    session = await finished("Is a majority enough?", judge=PANEL)
    state = session.state
    pro, con = (p.id for p in state.config.participants)
    state.verdict = split(state, con, pro, con)
    await show(user, state)
    assert headline(user) == f"{names(state)[con]} wins 2–1"
    tally = panel_tally(state.verdict)
    assert tally is not None and tally.split == "2–1" and tally.majority == (True, con)
    await user.should_not_see(marker="confidence")


async def test_a_real_demo_panel_never_shows_one_judges_confidence_as_the_panels(user: User) -> None:
    session = await finished("Should museums return colonial artefacts?", rounds=2, judge=PANEL)
    state = session.state
    verdict = state.verdict
    assert verdict is not None and len(verdict.rulings) == 2
    await show(user, state)
    await user.should_not_see(marker="confidence")
    picks = {r.winner for r in verdict.rulings}
    if len(picks) > 1:
        assert headline(user) == "No winner: judges split 1–1"
    else:
        (pick,) = picks
        assert headline(user) == ("Tie" if pick is None else f"{names(state)[pick]} wins 2–0")


# --- convergence and collaborative -------------------------------------------------------------


async def test_a_convergence_debate_shows_the_agreement_reached_not_a_winner(user: User) -> None:
    session = await finished("Should the four-day week be the norm?", format="convergence", rounds=6,
                             convergence_threshold=70)
    state = session.state
    last = state.round_decisions[max(state.round_decisions)]
    assert last.stop and last.agreement >= 70  # the demo judge converges
    await show(user, state)
    assert headline(user) == f"Agreement reached: {last.agreement:g}/100 (threshold 70)"
    assert "wins" not in headline(user)
    assert outcome_of(state).winner is None  # type: ignore[union-attr]


async def test_a_convergence_debate_without_agreement_says_so(user: User) -> None:
    session = await finished("Can they ever agree?", format="convergence", rounds=2, convergence_threshold=100)
    state = session.state
    await show(user, state)
    assert re.fullmatch(r"No agreement: \d+/100 \(threshold 100\)", headline(user)), headline(user)
    assert marked_texts(user, "outcome-note") == ["Ended: reached the hard cap of 2 rounds"]


async def test_a_convergence_debate_never_rated_names_no_winner(user: User) -> None:
    session = await finished("Is one round enough?", format="convergence", rounds=1)
    state = session.state
    assert state.verdict is not None and state.verdict.available  # judged, but not a win/lose format
    await show(user, state)
    assert headline(user) == "No agreement reached"


async def test_a_collaborative_debate_shows_the_start_of_its_final_solution(user: User) -> None:
    cast = [Participant(name="Architect", position="architect"), Participant(name="Critic", position="critic")]
    session = await finished("Plan a team offsite for 40 people", format="collaborative", rounds=1,
                             clarification=False, participants=[p.model_dump() for p in cast])
    state = session.state
    assert state.verdict is not None and state.verdict.synthesis
    await show(user, state)
    assert headline(user) == "Final solution"
    shown = one(user, "outcome-synthesis").content
    assert shown and state.verdict.synthesis.startswith(shown.rstrip(" …"))
    assert len(shown) <= 302
    assert "wins" not in headline(user)


async def test_a_long_synthesis_is_cut_to_about_three_hundred_characters_and_stays_sanitised(user: User) -> None:
    cast = [Participant(name="Architect", position="architect"), Participant(name="Critic", position="critic")]
    session = await finished("Plan a launch", format="collaborative", rounds=1, clarification=False,
                             participants=[p.model_dump() for p in cast])
    state = session.state
    assert state.verdict is not None
    long = "<script>x()</script> ![pixel](https://evil.example/p.png) " + "word " * 200
    state.verdict = state.verdict.model_copy(update={"synthesis": long})
    await show(user, state)
    element = one(user, "outcome-synthesis")
    assert len(element.content) <= 302 and element.content.endswith("…")
    html = element.props["innerHTML"]
    assert "<script" not in html and "<img" not in html and "image: pixel (evil.example)" in html


async def test_notes_per_criterion_are_folded_away_in_the_verdict_card(user: User) -> None:
    session = await start_demo("Should notes be folded?")
    assert await session.join() is State.COMPLETED
    verdict = session.state.verdict
    notes = [(c, s) for c, by_pid in verdict.criteria.items() for s in by_pid.values() if s.note]
    assert notes
    await user.open(f"/debate/{session.id}")
    card = one(user, "verdict").content
    # a closed <details>: the reader opens it; no element of its own on every spectator's page
    assert re.search(r'<details class="[^"]*" data-mark="criteria-notes">', card)
    assert f"Notes per criterion ({len(notes)})" in card
    shown = marked_texts(user, "criterion-note")
    assert len(shown) == len(notes)
    assert all(criterion in text and score.note in text for (criterion, score), text in zip(notes, shown, strict=True))


async def test_the_scores_are_bars_in_the_verdict_card(user: User) -> None:
    session = await start_demo("Should scores be bars?")
    assert await session.join() is State.COMPLETED
    verdict = session.state.verdict
    await user.open(f"/debate/{session.id}")
    (table,) = marked_texts(user, "score-chart")
    for criterion in verdict.criteria:
        assert criterion in table
    for score in verdict.scores.values():
        assert f'style="--w:{max(0.0, min(100.0, score)):g}%;' in one(user, "verdict").content
    assert "Overall" in table
    # no chart element: it kept a full copy of its options on every spectator's page
    assert not [e for e in user.client.elements.values() if isinstance(e, ui.echart)]
