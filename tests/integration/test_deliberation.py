"""Judgment and deliberation through whole debates (Engine + demo provider, scripted where needed).

Judge-driven endings (free-form, convergence) early for the stated reason and at the cap otherwise;
the collaborative format's proposal → critique → refinement order and exactly what each act sees;
the clarification loop with follow-ups across engine restarts; per-round scores; the fallback judge
and a panel with a failed judge; each compression strategy in a running debate; word limits; strict mode.
The verdict over the real OpenAI SDK and the fake LLM server is in `test_judge_fakellm.py`.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from webapp.engine.discipline import rejection_note, truncation_note, word_count
from webapp.engine.engine import Engine
from webapp.engine.events import SummaryPayload
from webapp.engine.judge import assign_labels
from webapp.engine.machine import State
from webapp.models import ContextPolicy, DebateConfig, EventKind, JudgeConfig, JudgeSpec, Participant, Usage
from webapp.providers.base import (
    Completion,
    ErrorKind,
    ProviderError,
    ProviderRequest,
    StreamItem,
    TextDelta,
    estimate_request_tokens,
    estimate_tokens,
)
from webapp.providers.demo import DemoProvider, OneProvider

TOPIC = "Should cities ban cars from their centres?"
Script = Callable[[ProviderRequest], str | None]


class ScriptedDemo:
    """The demo model, except where a script for the request's purpose returns a text; models listed in
    `fail_models` fail with a fatal error. Keeps every request it receives, like `DemoProvider`."""

    name = "demo"

    def __init__(self, fail_models: set[str] | None = None, **scripts: Script) -> None:
        self.demo = DemoProvider("demo-instant", speed=0, failures={})
        self.scripts = scripts
        self.fail_models = fail_models or set()
        self.received: list[ProviderRequest] = []

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        self.received.append(request)
        if request.model in self.fail_models:
            raise ProviderError(ErrorKind.FATAL, "demo", f"model {request.model} is broken", status=404,
                                reason="not_found")
        script = self.scripts.get(request.purpose)
        text = script(request) if script else None
        if text is None:
            text = self.demo.compose(request)
        for piece in re.findall(r"\S+\s*", text):
            yield TextDelta(piece)
        yield Completion(usage=Usage(input_tokens=estimate_request_tokens(request),
                                     output_tokens=estimate_tokens(text)), finish_reason="stop")

    async def aclose(self) -> None:
        return None

    def of(self, purpose: str) -> list[ProviderRequest]:
        return [r for r in self.received if r.purpose == purpose]

    def turn(self, key: str) -> ProviderRequest:
        """The (last) request made for a turn key."""
        return [r for r in self.received if r.purpose == "turn" and r.context.get("turn_key") == key][-1]


Opener = Callable[[Any], Awaitable[Engine]]


@pytest.fixture
async def open_engine(tmp_path: Path) -> AsyncIterator[Opener]:
    """Open an Engine on this test's database file (again and again, as after a restart)."""
    opened: list[Engine] = []

    async def opener(provider: Any) -> Engine:
        engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(provider), backoff_base=0.01)
        opened.append(engine)
        return engine

    yield opener
    for engine in opened:
        with contextlib.suppress(Exception):  # some were closed by the test itself (a "restart")
            await engine.close()


async def run(open_engine: Opener, provider: Any, **config: Any) -> Any:
    engine = await open_engine(provider)
    session = await engine.start(DebateConfig(topic=TOPIC, **config))
    await session.join()
    return session


def pair(**extra: Any) -> list[Participant]:
    return [Participant(name="Ann", position="pro", **extra), Participant(name="Bob", position="con", **extra)]


def always(text: str | dict[str, Any]) -> Script:
    reply = text if isinstance(text, str) else json.dumps(text)
    return lambda request: reply


def turn_keys(session: Any) -> list[str]:
    return [t.key for t in session.state.turns]


# --- free-form and convergence -----------------------------------------------------------------


async def test_free_form_ends_when_the_judge_decides_to_stop(open_engine: Opener) -> None:
    provider = ScriptedDemo()  # the demo judge says "stop" after round 3
    session = await run(open_engine, provider, format="free-form", rounds=6, participants=pair())
    state = session.state
    assert state.status is State.COMPLETED
    assert {t.round for t in state.turns} == {1, 2, 3}
    assert [d.stop for _, d in sorted(state.round_decisions.items())] == [False, False, True]
    assert state.ended_because == "the judge decided to stop: the main arguments have been exhausted"
    assert state.verdict is not None and state.verdict.ended_because == state.ended_because
    assert len(provider.of("round_check")) == 3


async def test_free_form_runs_to_the_hard_cap_when_the_judge_never_stops(open_engine: Opener) -> None:
    provider = ScriptedDemo(round_check=always({"continue": True, "reason": "fresh arguments keep coming"}))
    session = await run(open_engine, provider, format="free-form", rounds=3, participants=pair())
    state = session.state
    assert {t.round for t in state.turns} == {1, 2, 3}
    assert state.round_decisions[1].reason == "fresh arguments keep coming"
    last = state.round_decisions[3]
    assert (last.stop, last.cap, last.calls) == (True, True, [])
    assert state.ended_because == "reached the hard cap of 3 rounds"
    assert len(provider.of("round_check")) == 2  # nobody is asked at the cap


async def test_a_one_round_cap_is_worded_in_the_singular(open_engine: Opener) -> None:
    session = await run(open_engine, ScriptedDemo(), format="free-form", rounds=1, participants=pair())
    assert session.state.ended_because == "reached the hard cap of 1 round"  # not "1 rounds"


async def test_convergence_ends_when_agreement_reaches_the_threshold(open_engine: Opener) -> None:
    provider = ScriptedDemo()  # demo agreement: ~55 after round 1, ~70 after round 2
    session = await run(open_engine, provider, format="convergence", rounds=6, participants=pair(),
                        convergence_threshold=70)
    state = session.state
    assert {t.round for t in state.turns} == {1, 2}
    assert state.round_decisions[1].stop is False and state.round_decisions[1].agreement < 70
    assert state.round_decisions[2].agreement >= 70
    assert re.fullmatch(r"converged: agreement \d+ reached the threshold 70", state.ended_because or "")


async def test_convergence_ends_when_the_judge_declares_positions_irreconcilable(open_engine: Opener) -> None:
    provider = ScriptedDemo(convergence=always(
        {"agreement": 12, "irreconcilable": True, "reason": "they disagree on first principles"}))
    session = await run(open_engine, provider, format="convergence", rounds=6, participants=pair())
    assert {t.round for t in session.state.turns} == {1}
    assert session.state.ended_because == ("the judge declared the positions irreconcilable: "
                                           "they disagree on first principles")
    assert session.state.verdict is not None and session.state.verdict.available


async def test_convergence_runs_to_the_cap_below_the_threshold(open_engine: Opener) -> None:
    provider = ScriptedDemo(convergence=always({"agreement": 30, "irreconcilable": False, "reason": "apart"}))
    session = await run(open_engine, provider, format="convergence", rounds=2, participants=pair())
    assert {t.round for t in session.state.turns} == {1, 2}
    assert session.state.round_decisions[1].reason == "agreement 30 is below the threshold 85"
    assert session.state.ended_because == "reached the hard cap of 2 rounds"


async def test_an_unusable_decision_is_recorded_and_the_debate_continues(open_engine: Opener) -> None:
    provider = ScriptedDemo(round_check=always("Let them talk a bit more."))
    session = await run(open_engine, provider, format="free-form", rounds=2, participants=pair())
    decision = session.state.round_decisions[1]
    assert decision.stop is False and "no usable decision" in decision.reason
    assert len(provider.of("round_check")) == 2  # the question and exactly one repair request
    assert provider.of("round_check")[1].context.get("repair") is True
    assert len(decision.calls) == 2  # both calls are paid for, even though neither was usable


# --- judging frequency and the judges ----------------------------------------------------------


async def test_every_round_is_scored_when_frequency_is_round(open_engine: Opener) -> None:
    provider = ScriptedDemo(round_check=always({"continue": True, "reason": "go on"}))
    session = await run(open_engine, provider, format="free-form", rounds=3, participants=pair(),
                        judge=JudgeConfig(frequency="round"))
    scores = session.state.round_scores
    assert [s.round for s in scores] == [1, 2, 3]
    for entry in scores:
        assert set(entry.scores) == {"ann", "bob"}
        assert all(0 <= v <= 100 for v in entry.scores.values())
    # each round was judged on the transcript up to that round only
    verdict_prompts = [r for r in provider.of("verdict") if r.context["turn_key"].startswith("round-1/")]
    assert "round 2]" not in verdict_prompts[0].messages[0].content


async def test_mid_debate_scoring_scores_the_middle_round_only(open_engine: Opener) -> None:
    session = await run(open_engine, ScriptedDemo(), format="round-limited", rounds=3, participants=pair(),
                        judge=JudgeConfig(frequency="mid"))
    assert [s.round for s in session.state.round_scores] == [2]


async def test_mid_debate_scoring_of_a_debate_that_ends_before_its_middle(open_engine: Opener) -> None:
    # free-form with a cap of 10: the middle is round 5, but the demo judge stops after round 3
    session = await run(open_engine, ScriptedDemo(), format="free-form", rounds=10, participants=pair(),
                        judge=JudgeConfig(frequency="mid"))
    assert max(t.round for t in session.state.turns) == 3
    assert [s.round for s in session.state.round_scores] == [3]


async def test_end_only_judging_stores_no_round_scores(open_engine: Opener) -> None:
    session = await run(open_engine, ScriptedDemo(), format="round-limited", rounds=2, participants=pair())
    assert session.state.round_scores == [] and session.state.verdict is not None


async def test_panel_with_a_failed_judge_still_rules(open_engine: Opener) -> None:
    provider = ScriptedDemo(fail_models={"broken"})
    judges = [JudgeSpec(model="demo"), JudgeSpec(model="demo-instant"), JudgeSpec(model="broken")]
    session = await run(open_engine, provider, format="round-limited", rounds=1, participants=pair(),
                        judge=JudgeConfig(judges=judges))
    verdict = session.state.verdict
    assert verdict is not None and verdict.available
    good = [r for r in verdict.rulings if r.error is None]
    assert [r.judge for r in good] == ["demo:demo", "demo:demo-instant"]
    failed = [r for r in verdict.rulings if r.error]
    assert failed[0].judge == "demo:broken" and "model broken is broken" in failed[0].error
    for pid in ("ann", "bob"):
        assert verdict.scores[pid] == pytest.approx(round((good[0].scores[pid] + good[1].scores[pid]) / 2, 1))
    spread = [abs(good[0].scores[p] - good[1].scores[p]) / 2 for p in ("ann", "bob")]
    assert verdict.disagreement == pytest.approx(round(sum(spread) / 2, 1))
    assert set(verdict.labels.values()) == {"ann", "bob"}
    assert session.state.status is State.COMPLETED


async def test_fallback_judge_rules_and_decides_when_the_only_judge_fails(open_engine: Opener) -> None:
    provider = ScriptedDemo(fail_models={"broken"})
    session = await run(open_engine, provider, format="free-form", rounds=2, participants=pair(),
                        judge=JudgeConfig(judges=[JudgeSpec(model="broken")], fallback=JudgeSpec(model="demo")))
    state = session.state
    assert state.verdict is not None and state.verdict.available
    assert [(r.judge, r.error is None) for r in state.verdict.rulings] == [
        ("demo:broken", False), ("demo:demo (fallback)", True)]
    # the round decision came from the fallback as well
    assert state.round_decisions[1].reason == "new arguments are still emerging"
    assert [r.model for r in provider.of("round_check")] == ["broken", "demo"]


# --- the collaborative format ------------------------------------------------------------------


def agents() -> list[Participant]:
    return [Participant(name="Ann", position="architect"), Participant(name="Bob", position="critic"),
            Participant(name="Cy", position="tester")]


async def test_collaborative_order_and_what_each_act_sees(open_engine: Opener) -> None:
    provider = ScriptedDemo()
    session = await run(open_engine, provider, format="collaborative", rounds=2, participants=agents(),
                        clarification=False, quality_threshold=100)
    state = session.state
    assert state.status is State.COMPLETED
    phases = [(t.round, t.phase) for t in state.turns]
    expected = [(r, p) for r in (1, 2) for p in ("proposal", "critique", "refinement") for _ in range(3)]
    assert phases == expected
    text = {t.key: t.text for t in state.turns}
    people = ("ann", "bob", "cy")

    def key(phase: str, round_no: int, who: str) -> str:
        return f"{phase}/r{round_no}/{who}/{people.index(who)}"

    for who in people:
        others = [p for p in people if p != who]
        fresh = provider.turn(key("proposal", 1, who))
        assert fresh.context["seen_turns"] == [] and "fresh proposal" in fresh.messages[0].content
        critique = provider.turn(key("critique", 1, who))
        assert sorted(critique.context["seen_turns"]) == sorted(key("proposal", 1, o) for o in others)
        prompt = critique.messages[0].content
        assert all(text[key("proposal", 1, o)] in prompt for o in others)
        assert text[key("proposal", 1, who)] not in prompt  # not its own proposal
        refine = provider.turn(key("refinement", 1, who))
        assert sorted(refine.context["seen_turns"]) == sorted(
            [key("proposal", 1, who)] + [key("critique", 1, o) for o in others])
        assert refine.context["collaborative"]["own_proposal"] == key("proposal", 1, who)
        assert "Revise your own proposal" in refine.messages[0].content
        later = provider.turn(key("proposal", 2, who))
        assert sorted(later.context["seen_turns"]) == sorted(key("refinement", 1, p) for p in people)
        assert later.context["collaborative"]["own_previous"] == key("refinement", 1, who)
        assert text[key("refinement", 1, who)] in later.messages[0].content
        assert text[key("critique", 1, others[0])] not in later.messages[0].content
    # evaluation by quality after round 1, the cap after round 2, then the judge's synthesis of all rounds
    assert state.round_decisions[1].reason.endswith("is below the threshold 100")
    assert state.verdict is not None and state.verdict.synthesis
    synthesis = provider.of("synthesis")[0].messages[0].content
    assert text[key("proposal", 1, "ann")] in synthesis and text[key("refinement", 2, "cy")] in synthesis


async def test_collaborative_quality_threshold_ends_early(open_engine: Opener) -> None:
    provider = ScriptedDemo(quality=always({"score": 91, "reason": "ready to ship"}))
    session = await run(open_engine, provider, format="collaborative", rounds=4, participants=agents()[:2],
                        clarification=False)
    assert {t.round for t in session.state.turns} == {1}
    assert session.state.ended_because == "quality 91 reached the threshold 80"


async def test_collaborative_fixed_evaluation_asks_no_judge(open_engine: Opener) -> None:
    provider = ScriptedDemo()
    session = await run(open_engine, provider, format="collaborative", participants=agents()[:2],
                        clarification=False, evaluation="fixed")
    assert {t.round for t in session.state.turns} == {1, 2, 3}  # the format's default rounds
    assert provider.of("quality") == [] and provider.of("convergence") == []
    assert session.state.ended_because == "all 3 planned rounds completed"


async def test_collaborative_convergence_evaluation_uses_the_threshold(open_engine: Opener) -> None:
    provider = ScriptedDemo(convergence=always({"agreement": 82, "irreconcilable": False, "reason": "close"}))
    session = await run(open_engine, provider, format="collaborative", rounds=3, participants=agents()[:2],
                        clarification=False, evaluation="convergence")
    assert session.state.ended_because == "converged: agreement 82 reached the threshold 80"
    assert provider.of("quality") == []


# --- clarification -----------------------------------------------------------------------------


async def test_clarification_loop_with_follow_ups_survives_restarts(open_engine: Opener) -> None:
    config = {"format": "collaborative", "rounds": 1, "participants": agents()[:2], "clarification_questions": 2}
    first = ScriptedDemo()
    engine = await open_engine(first)
    session = await engine.start(DebateConfig(topic=TOPIC, **config))
    assert await session.join() is State.AWAITING_CLARIFICATION
    debate_id = session.id
    asked = session.state.clarifications[0].questions
    assert set(asked) == {"ann", "bob"} and all(len(q) == 2 for q in asked.values())  # at most N per agent
    assert all(r.purpose == "clarify" for r in first.received)  # nobody spoke before the answers
    await engine.close()

    # restart 1: the questions are still there; answer some, leave others unanswered
    second = ScriptedDemo()
    engine = await open_engine(second)
    session = await engine.session(debate_id)
    assert session.state.status is State.AWAITING_CLARIFICATION
    assert session.state.clarifications[0].questions == asked
    await session.answer_clarification({"ann": ["Fewer accidents downtown", ""], "bob": ["Within two years"]})
    assert await session.join() is State.AWAITING_CLARIFICATION  # follow-up questions
    follow_ups = second.of("clarify")
    assert {r.context["iteration"] for r in follow_ups} == {2}
    assert all("Fewer accidents downtown" in r.messages[0].content for r in follow_ups)
    assert all("follow-up" in r.messages[0].content for r in follow_ups)
    await engine.close()

    # restart 2: earlier answers survived; leave the follow-ups unanswered and the debate goes on
    third = ScriptedDemo()
    engine = await open_engine(third)
    session = await engine.session(debate_id)
    assert session.state.answers[0].answers["ann"] == ["Fewer accidents downtown", ""]
    await session.answer_clarification({})
    assert await session.join() is State.COMPLETED
    assert third.of("clarify") == []  # an all-unanswered iteration ends the questions
    proposal = third.turn("proposal/r1/ann/0").messages[0].content
    assert "A: Fewer accidents downtown" in proposal and "A: Within two years" in proposal
    assert "(no answer)" in proposal
    kinds = [e.kind for e in await engine.events(debate_id)]
    assert kinds.count(EventKind.CLARIFICATION_ANSWER) == 2
    assert kinds.count(EventKind.CLARIFICATION_QUESTIONS) == 2


async def test_clarification_stops_after_the_maximum_iterations(open_engine: Opener) -> None:
    engine = await open_engine(ScriptedDemo())
    session = await engine.start(DebateConfig(topic=TOPIC, format="collaborative", rounds=1,
                                              participants=agents()[:2], clarification_iterations=1))
    assert await session.join() is State.AWAITING_CLARIFICATION
    await session.answer_clarification({"ann": ["yes", "no", "maybe"], "bob": ["soon"]})
    assert await session.join() is State.COMPLETED
    assert len(session.state.clarifications) == 1


async def test_clarification_can_be_switched_off(open_engine: Opener) -> None:
    provider = ScriptedDemo()
    session = await run(open_engine, provider, format="collaborative", rounds=1, participants=agents()[:2],
                        clarification=False)
    assert session.state.status is State.COMPLETED
    assert provider.of("clarify") == [] and session.state.clarifications == []


# --- context strategies in a running debate ----------------------------------------------------


def small_budget(tokens: int = 1200) -> list[Participant]:
    return pair(context_tokens=tokens, max_tokens=150)


CONTINUE = always({"continue": True, "reason": "go on"})


async def test_truncate_in_a_debate_keeps_own_and_opposing_latest_turns(open_engine: Opener) -> None:
    provider = ScriptedDemo(round_check=CONTINUE)
    session = await run(open_engine, provider, format="free-form", rounds=4, participants=small_budget(),
                        context=ContextPolicy(strategy="truncate"))
    turns = session.state.turns
    compressed = [t for t in turns if any(n.startswith("context: truncate") for n in t.notes)]
    assert compressed, "the small budget should have forced truncation"
    for index, turn in enumerate(turns):
        seen = provider.turn(turn.key).context["seen_turns"]
        earlier = turns[:index]
        own = [t.key for t in earlier if t.speaker == turn.speaker]
        other = [t.key for t in earlier if t.speaker != turn.speaker]
        if own:
            assert own[-1] in seen
        if other:
            assert other[-1] in seen
        if turn in compressed:
            assert len(seen) < len(earlier)


async def test_sliding_window_in_a_debate(open_engine: Opener) -> None:
    provider = ScriptedDemo(round_check=CONTINUE)
    session = await run(open_engine, provider, format="free-form", rounds=4, participants=small_budget(),
                        context=ContextPolicy(strategy="sliding-window", window=2))
    last = session.state.turns[-1]
    assert "context: sliding-window kept the last 2 of 7 turns" in last.notes
    assert provider.turn(last.key).context["seen_turns"] == [t.key for t in session.state.turns[-3:-1]]


async def test_summaries_are_stored_once_and_reused(open_engine: Opener) -> None:
    provider = ScriptedDemo(round_check=CONTINUE)
    session = await run(open_engine, provider, format="free-form", rounds=6, participants=small_budget(2000),
                        context=ContextPolicy(strategy="summarize"))
    state = session.state
    events = await session.store.events(session.id)
    summaries = [e.payload for e in events if isinstance(e.payload, SummaryPayload)]
    assert summaries, "the small budget should have forced a summary"
    assert len(provider.of("summary")) == len(summaries)  # every summary written exactly once
    assert len({s.key for s in summaries}) == len(summaries)
    used = [t for t in state.turns if any("summarize replaced" in n for n in t.notes)]
    assert len(used) > len(summaries)  # at least one turn reused a summary written for an earlier one
    for turn in used:
        seen = provider.turn(turn.key).context["seen_turns"]
        assert seen[0].startswith("summary/") and seen[0].removeprefix("summary/") in state.summaries
    # later summaries extend earlier ones instead of re-reading every turn
    extended = [s for s in summaries if s.extends]
    for s in extended:
        assert state.summaries[s.extends].turn_keys == s.turn_keys[: len(
            state.summaries[s.extends].turn_keys)]


# --- word limits and strict mode ---------------------------------------------------------------

LONG = " ".join(f"Sentence number {i} argues that cars matter in the city centre." for i in range(1, 9))
LONG_WORDS = len(LONG.split())  # 88
SHORT = "Cars do not belong in the city centre."


async def test_word_limit_truncates_at_a_sentence_boundary(open_engine: Opener) -> None:
    provider = ScriptedDemo(turn=always(LONG))
    session = await run(open_engine, provider, format="round-limited", rounds=1, participants=pair(),
                        word_limit=30)
    for turn in session.state.turns:
        assert word_count(turn.text) <= 30 and turn.text.endswith(".")
        assert turn.notes == [truncation_note(LONG_WORDS, 30, turn.text)]
    assert len(provider.of("turn")) == 2  # truncation never asks again


async def test_word_limit_reject_asks_once_more_and_records_it(open_engine: Opener) -> None:
    provider = ScriptedDemo(turn=lambda r: SHORT if r.context.get("retry_shorter") else LONG)
    session = await run(open_engine, provider, format="round-limited", rounds=1, participants=pair(),
                        word_limit=30, word_limit_action="reject")
    for turn in session.state.turns:
        assert turn.text == SHORT
        assert turn.notes == [rejection_note(LONG_WORDS, 30), "the shorter answer has 8 words"]
        again = [r for r in provider.of("turn") if r.context["turn_key"] == turn.key]
        assert len(again) == 2 and "the limit is 30" in again[1].messages[-1].content
        assert again[1].messages[-2].content == LONG


async def test_word_limit_reject_then_truncate_when_still_too_long(open_engine: Opener) -> None:
    provider = ScriptedDemo(turn=always(LONG))
    session = await run(open_engine, provider, format="round-limited", rounds=1, participants=pair(),
                        word_limit=30, word_limit_action="reject")
    for turn in session.state.turns:
        assert turn.notes == [rejection_note(LONG_WORDS, 30), f"the shorter answer has {LONG_WORDS} words",
                              truncation_note(LONG_WORDS, 30, turn.text)]
        assert word_count(turn.text) <= 30
    assert len(provider.of("turn")) == 4  # exactly one more request per turn


OFF_TOPIC = "My favourite recipe is a lemon tart with almonds and a little honey."


def bob_off_topic(request: ProviderRequest) -> str | None:
    return OFF_TOPIC if request.context.get("speaker") == "bob" else None


async def test_strict_mode_flags_off_topic_turns_offline(open_engine: Opener) -> None:
    provider = ScriptedDemo(turn=bob_off_topic)
    session = await run(open_engine, provider, format="round-limited", rounds=1, participants=pair(), strict=True)
    notes = {t.speaker: t.notes for t in session.state.turns}
    assert notes["bob"] == ["off-topic: shares no key words with the topic (lexical check)"]
    assert notes["ann"] == []
    # The demo judge is asked like any judge (no branch on the demo provider) and answers from the
    # request's own words.
    assert len(provider.of("on_topic")) == len(session.state.turns)


async def test_strict_mode_asks_the_judge_model_and_charges_for_it(open_engine: Opener) -> None:
    def on_topic(request: ProviderRequest) -> str:
        off = OFF_TOPIC in request.messages[0].content
        return json.dumps({"on_topic": not off, "reason": "it is about dessert" if off else "fine"})

    provider = ScriptedDemo(turn=bob_off_topic, on_topic=on_topic)
    judge = JudgeConfig(judges=[JudgeSpec(provider="compatible", model="judge-x", base_url="http://127.0.0.1:9/v1")])
    session = await run(open_engine, provider, format="round-limited", rounds=1, participants=pair(), strict=True,
                        judge=judge)
    notes = {t.speaker: t.notes for t in session.state.turns}
    assert notes["bob"] == ["off-topic: it is about dessert"] and notes["ann"] == []
    assert len(provider.of("on_topic")) == 2
    checks = [n for n in session.state.notes if n.type == "on_topic"]
    assert len(checks) == 2 and all(n.calls for n in checks)
    # two on-topic checks and the verdict, all charged to the judge model
    assert session.state.ledger.tokens_by_model["compatible:judge-x"]["calls"] == 3


async def test_verdict_labels_hide_names_from_the_judge(open_engine: Opener) -> None:
    provider = ScriptedDemo()
    session = await run(open_engine, provider, format="round-limited", rounds=1,
                        participants=[Participant(name="Zelda", position="pro"),
                                      Participant(name="Yusuf", position="con")], seed=3)
    prompt = provider.of("verdict")[0].messages[0].content
    assert "Zelda" not in prompt and "Yusuf" not in prompt
    verdict = session.state.verdict
    assert verdict is not None and verdict.labels == assign_labels(["zelda", "yusuf"], 3)
