"""The offline demo provider: deterministic, topic/position/phase-aware, streams words, stops at
`max_tokens`, reports usage, judges with a valid verdict (and on-topic checks from the request), takes
its speed from the settings it is given, keeps nothing it is asked, and is priced as clearly
*simulated* through the price table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from webapp.engine import budget
from webapp.engine.judge_reply import parse_ruling
from webapp.models import Participant, Usage
from webapp.providers.base import Completion, Message, ProviderError, ProviderRequest, TextDelta, estimate_tokens
from webapp.providers.demo import DemoProvider, RecordingDemoProvider
from webapp.providers.registry import ProviderCache
from webapp.settings import Settings, get_settings

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


def test_speed_per_model_and_the_settings_override() -> None:
    assert DemoProvider("demo").speed == 40 and DemoProvider("demo-instant").speed == 0
    realistic = DemoProvider("demo").compose(request())
    instant = Settings(_env_file=None, demo_speed=0)
    assert DemoProvider("demo", settings=instant).speed == 0
    assert DemoProvider("demo", settings=instant).compose(request()) == realistic  # not a word changes
    assert DemoProvider("demo", speed=5, settings=instant).speed == 5  # an explicit speed wins


def test_demo_speed_from_dot_env_reaches_the_demo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`ROSTRUM_DEMO_SPEED` in `.env` is a setting like any other: the demo the app builds uses it
    (it used to read only the process environment)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ROSTRUM_DEMO_SPEED", raising=False)
    (tmp_path / ".env").write_text("ROSTRUM_DEMO_SPEED=7\n", encoding="utf-8")
    spec = Participant(provider="demo", model="demo")
    get_settings.cache_clear()
    try:
        assert ProviderCache().get(spec).speed == 7  # the process-wide settings
    finally:
        get_settings.cache_clear()
    assert ProviderCache(settings=Settings()).get(spec).speed == 7  # the settings object it is given


async def test_stops_at_max_tokens_like_a_model() -> None:
    demo = DemoProvider("demo-instant")
    full = await collect(demo, request())
    assert full[1].finish_reason == "stop" and full[1].usage.output_tokens > 40
    deltas, done = await collect(demo, request().model_copy(update={"max_tokens": 40}))
    assert done.finish_reason == "length"
    assert done.usage.output_tokens == estimate_tokens("".join(deltas)) <= 40
    assert "".join(full[0]).startswith("".join(deltas)) and len(deltas) < len(full[0])


@pytest.mark.parametrize(("turn", "on_topic"), [
    ("Private cars clog every centre; banning them frees the streets.", True),
    ("My favourite recipe is a lemon tart with almonds and a little honey.", False),
])
def test_judges_an_on_topic_check_from_the_request(turn: str, on_topic: bool) -> None:
    prompt = (f"Topic: {TOPIC}\n\nTurn by Bob:\n{turn}\n\nIs this turn on topic? "
              'Reply with JSON: {"on_topic": true or false, "reason": "one sentence"}')
    ask = ProviderRequest(model="demo", messages=[Message(role="user", content=prompt)], purpose="on_topic",
                          json_mode=True, context={"seed": 1})  # nothing but the message says what to judge
    answer = json.loads(DemoProvider("demo-instant").compose(ask))
    assert answer["on_topic"] is on_topic
    if not on_topic:
        assert answer["reason"] == "shares no key words with the topic (lexical check)"


async def test_keeps_nothing_it_is_asked_only_the_recording_double_does() -> None:
    demo = DemoProvider("demo-instant")
    await collect(demo, request())
    assert not hasattr(demo, "received")  # a long-running server must not keep every prompt
    recording = RecordingDemoProvider("demo-instant")
    req = request()
    await collect(recording, req)
    assert recording.received == [req]


def test_the_price_module_does_not_import_the_demo_provider() -> None:
    code = "import sys, webapp.engine.budget; print('webapp.providers.demo' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False"


def test_as_judge_it_returns_a_valid_verdict() -> None:
    text = DemoProvider("demo-instant").compose(request().model_copy(update={
        "purpose": "verdict", "context": {"labels": ["A", "B"], "criteria": ["clarity", "evidence"], "seed": 3}}))
    ruling = parse_ruling(text, {"A": "ann", "B": "bob"}, ["clarity", "evidence"], "demo:demo")
    assert set(ruling.scores) == {"ann", "bob"} and all(0 <= v <= 100 for v in ruling.scores.values())
    assert set(ruling.criteria) == {"clarity", "evidence"} and ruling.reasoning


def test_demo_prices_are_labelled_simulated() -> None:
    settings = Settings(_env_file=None)
    cost = budget.cost_of(Participant(provider="demo", model="demo"), Usage(input_tokens=1000, output_tokens=1000),
                          settings)
    assert cost.source == "simulated" and cost.usd and cost.usd > 0 and "(simulated)" in cost.label
    panel_seat = Participant(provider="demo", model="demo-3")  # every demo model, e.g. a panel's third judge
    assert budget.cost_of(panel_seat, Usage(input_tokens=1000), settings).source == "simulated"


async def test_a_big_panels_verdict_fits_its_allowance_and_stays_valid() -> None:
    labels, criteria = [chr(65 + i) for i in range(8)], [f"criterion number {i}" for i in range(10)]
    ask = request().model_copy(update={"purpose": "verdict", "max_tokens": 1500,
                                       "context": {"labels": labels, "criteria": criteria, "seed": 3}})
    deltas, done = await collect(DemoProvider("demo-instant"), ask)
    assert done.finish_reason == "stop" and done.usage.output_tokens <= 1500  # not cut off mid-JSON
    ruling = parse_ruling("".join(deltas), {lab: lab.lower() for lab in labels}, criteria, "demo:demo")
    assert len(ruling.scores) == 8 and set(ruling.criteria) == set(criteria)


class FakeTime:
    """A monotonic clock that moves only when the provider sleeps or a test says the loop stalled."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


async def test_paces_against_a_schedule_and_catches_up_after_a_stall() -> None:
    fake = FakeTime()
    demo = DemoProvider("demo", speed=10, failures={}, clock=fake.clock, sleep=fake.sleep)
    delivered: list[float] = []  # fake seconds since the start at which each word arrived
    sleeps_before_stall = 0
    async for item in demo.stream(request()):
        if isinstance(item, TextDelta):
            delivered.append(round(fake.now - 100.0, 6))
            if len(delivered) == 4:  # the loop is blocked for 2.05 s after the 4th word
                sleeps_before_stall = len(fake.sleeps)
                fake.now += 2.05
    words = len(delivered)
    assert words > 40
    assert delivered[:4] == pytest.approx([0.1, 0.2, 0.3, 0.4])
    # words 5–24 were due by the end of the stall (2.45 s): they come at once, without waiting
    assert delivered[4:24] == pytest.approx([2.45] * 20)
    assert next(s for s in fake.sleeps[sleeps_before_stall:] if s > 0) == pytest.approx(0.05)  # back on schedule
    assert delivered[24:] == pytest.approx([(i + 1) / 10 for i in range(24, words)])
    assert delivered[-1] == pytest.approx(words / 10)  # the stall did not lengthen the turn (per-word delay: +2.05 s)
    # catching up, it still gives the loop a turn now and then
    catching_up = fake.sleeps[sleeps_before_stall:sleeps_before_stall + 2]
    assert 0 in catching_up and catching_up[-1] > 0


async def test_instant_speed_never_waits_but_lets_the_loop_run() -> None:
    fake = FakeTime()
    deltas, _ = await collect(DemoProvider("demo", speed=0, failures={}, clock=fake.clock, sleep=fake.sleep), request())
    assert fake.now == 100.0 and fake.sleeps and set(fake.sleeps) == {0}
    assert len(fake.sleeps) == (len(deltas) + 15) // 16  # one turn of the loop every 16 words


async def test_a_paced_cut_still_fails_half_way() -> None:
    fake = FakeTime()
    demo = DemoProvider("demo", speed=10, failures={1: "cut"}, clock=fake.clock, sleep=fake.sleep)
    got: list[str] = []
    with pytest.raises(ProviderError) as cut:
        async for item in demo.stream(request(turn_number=1)):
            if isinstance(item, TextDelta):
                got.append(item.text)
    assert cut.value.reason == "cut_stream" and len(got) == len(demo.compose(request()).split()) // 2
    assert fake.now - 100.0 == pytest.approx(len(got) / 10)
