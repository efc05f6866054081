"""The offline demo provider: deterministic, topic/position/phase-aware, streams words, reports usage,
judges with a valid verdict, and is priced as clearly *simulated*."""

from __future__ import annotations

import pytest

from webapp.engine import budget
from webapp.engine.judge import parse_ruling
from webapp.models import Participant, Usage
from webapp.providers.base import Completion, Message, ProviderRequest, TextDelta
from webapp.providers.demo import DemoProvider

TOPIC = "Should cities ban private cars from their centres?"


def request(**context: object) -> ProviderRequest:
    base = {"topic": TOPIC, "position": "con", "act": "speak", "phase": "rebuttal", "phase_title": "Rebuttal",
            "seed": 1, "turn_key": "rebuttal/r1/con/1", "word_limit": 200}
    return ProviderRequest(model="demo", messages=[Message(role="user", content="…")], context={**base, **context})


async def collect(provider: DemoProvider, req: ProviderRequest) -> tuple[list[str], Completion]:
    deltas, done = [], None
    async for item in provider.stream(req):
        if isinstance(item, TextDelta):
            deltas.append(item.text)
        else:
            done = item
    assert isinstance(done, Completion)
    return deltas, done


def test_same_seed_same_words_other_seed_other_words() -> None:
    demo = DemoProvider("demo-instant")
    assert demo.compose(request()) == demo.compose(request())
    assert demo.compose(request()) != demo.compose(request(seed=2))


def test_prose_knows_topic_position_phase_and_the_opponents_point() -> None:
    opponent = {"name": "Proposition", "text": "Cars are loud. First, downtown streets belong to people walking."}
    text = DemoProvider("demo-instant").compose(request(opponent_last=opponent))
    assert "should cities ban private cars from their centres" in text
    assert "against the motion" in text
    assert "rebuttal" in text
    assert "downtown streets belong to people walking" in text
    assert "lorem" not in text.lower()
    pro = DemoProvider("demo-instant").compose(request(position="pro"))
    assert "in favour of the motion" in pro


def test_questions_and_answers_fit_cross_examination() -> None:
    demo = DemoProvider("demo-instant")
    question = demo.compose(request(act="ask", opponent_last={"name": "Neg", "text": "First, costs fall on the poor."}))
    assert question.rstrip().endswith("?") and "costs fall on the poor" in question
    answer = demo.compose(request(act="answer", opponent_last={"name": "Aff", "text": question}))
    assert answer.startswith("You asked:") and question.split(". ", 1)[1][:30] in answer


async def test_streams_word_by_word_and_reports_usage() -> None:
    demo = DemoProvider("demo-instant")
    req = request()
    deltas, done = await collect(demo, req)
    assert "".join(deltas).strip() == demo.compose(req)
    assert len(deltas) == len(demo.compose(req).split())
    assert done.usage.input_tokens > 0 and done.usage.output_tokens > 0 and done.finish_reason == "stop"


def test_speed_per_model_and_the_environment_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROSTRUM_DEMO_SPEED", raising=False)
    assert DemoProvider("demo").speed == 40 and DemoProvider("demo-instant").speed == 0
    realistic = DemoProvider("demo").compose(request())
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    assert DemoProvider("demo").speed == 0
    assert DemoProvider("demo").compose(request()) == realistic  # not a word changes with the speed


def test_as_judge_it_returns_a_valid_verdict() -> None:
    text = DemoProvider("demo-instant").compose(request().model_copy(update={
        "purpose": "verdict", "context": {"labels": ["A", "B"], "criteria": ["clarity", "evidence"], "seed": 3}}))
    ruling = parse_ruling(text, {"A": "ann", "B": "bob"}, ["clarity", "evidence"], "demo:demo")
    assert set(ruling.scores) == {"ann", "bob"} and all(0 <= v <= 100 for v in ruling.scores.values())
    assert set(ruling.criteria) == {"clarity", "evidence"} and ruling.reasoning


def test_demo_prices_are_labelled_simulated() -> None:
    cost = budget.cost_of(Participant(provider="demo", model="demo"), Usage(input_tokens=1000, output_tokens=1000))
    assert cost.source == "simulated" and cost.usd and cost.usd > 0 and "(simulated)" in cost.label
