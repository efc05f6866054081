"""The verdict through the real OpenAI SDK against the local fake LLM server: JSON mode requested,
fenced and prose-wrapped JSON accepted, one repair request quoting the validation error, *verdict
unavailable* with the raw text kept, the fallback judge when the only judge fails, and a judge on a
server like llama-cpp-python (json_schema refused with a 500, the schema sent inside json_object). (The
same over every protocol, and the fake server's grammar mode: tests/integration/test_structured_output.py.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import FakeLLMServer, Script
from tests.provider_helpers import open_engine, use_fake_keys
from webapp.engine.engine import Engine
from webapp.engine.judge import assign_labels
from webapp.engine.machine import State
from webapp.models import DebateConfig, JudgeConfig, JudgeSpec, Participant
from webapp.providers.demo import DemoProvider
from webapp.providers.registry import ProviderCache

CRITERIA = ["clarity", "evidence"]
SEED = 11
VERDICT = {
    "winner": "B",
    "scores": {"A": 58, "B": 81},
    "criteria": {
        "clarity": {"A": {"score": 60, "note": "wandered"}, "B": {"score": 80, "note": "crisp"}},
        "evidence": {"A": {"score": 55, "note": "thin"}, "B": {"score": 82, "note": "sourced"}},
    },
    "reasoning": "B answered every point with evidence.",
    "confidence": 0.7,
}
LABELS = assign_labels(["ann", "bob"], SEED)


class Providers:
    """Debaters on the offline demo model; judges through the real provider registry (→ fake server)."""

    def __init__(self) -> None:
        self.demo = DemoProvider("demo-instant", speed=0, failures={})
        self.cache = ProviderCache()

    def get(self, spec: Any) -> Any:
        return self.demo if spec.provider == "demo" else self.cache.get(spec)

    async def aclose(self) -> None:
        await self.cache.aclose()


@pytest.fixture(autouse=True)
def openai_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_fake_keys(monkeypatch, tmp_path, OPENAI_API_KEY="fake-key-not-real")


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    engine = await open_engine(tmp_path, providers=Providers())
    try:
        yield engine
    finally:
        await engine.close()


def judge(server: FakeLLMServer, model: str = "judge-main", **kwargs: Any) -> JudgeSpec:
    return JudgeSpec(provider="openai", model=model, base_url=server.openai_url, **kwargs)


async def debate(engine: Engine, judge_config: JudgeConfig) -> Any:
    config = DebateConfig(topic="Should cities ban cars from their centres?", format="round-limited", rounds=1,
                          participants=[Participant(name="Ann", position="pro"),
                                        Participant(name="Bob", position="con")],
                          judge=judge_config, seed=SEED)
    session = await engine.start(config)
    assert await session.join() is State.COMPLETED
    return session


@pytest.mark.parametrize(
    "reply",
    [
        "```json\n" + json.dumps(VERDICT, indent=2) + "\n```",
        "Having weighed both sides, here is my ruling: " + json.dumps(VERDICT) + " I hope this helps.",
    ],
    ids=["fenced", "prose"],
)
async def test_verdict_from_fenced_or_prose_wrapped_json(engine: Engine, fake_llm: FakeLLMServer,
                                                         reply: str) -> None:
    fake_llm.enqueue(Script(text=reply))
    session = await debate(engine, JudgeConfig(judges=[judge(fake_llm)], criteria=CRITERIA))
    verdict = session.state.verdict
    assert verdict is not None and verdict.available
    assert verdict.winner == LABELS["B"]
    assert verdict.scores == {LABELS["A"]: 58.0, LABELS["B"]: 81.0}
    assert verdict.criteria["evidence"][LABELS["B"]].note == "sourced"
    assert verdict.labels == LABELS
    requests = fake_llm.model_requests
    assert len(requests) == 1
    response_format = requests[0].body["response_format"]  # the provider's structured output
    assert response_format["type"] == "json_schema" and response_format["json_schema"]["strict"] is True
    assert verdict.rulings[0].output_mode == "json_schema" and verdict.notes == []
    assert "Ann" not in requests[0].prompt_text and "Bob" not in requests[0].prompt_text


async def test_invalid_verdict_gets_one_repair_request(engine: Engine, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Script(text='{"winner": "B", "scores": {"A": 58, "B": 181}}'), Script(text=json.dumps(VERDICT)))
    session = await debate(engine, JudgeConfig(judges=[judge(fake_llm)], criteria=CRITERIA))
    verdict = session.state.verdict
    assert verdict is not None and verdict.available and verdict.winner == LABELS["B"]
    first, repair = fake_llm.model_requests
    assert repair.body["messages"][-2] == {"role": "assistant",
                                           "content": '{"winner": "B", "scores": {"A": 58, "B": 181}}'}
    assert "scores.B must be at most 100, got 181" in repair.last_user_text
    assert first.body["messages"] == repair.body["messages"][:-2]


async def test_still_invalid_after_repair_means_verdict_unavailable(engine: Engine,
                                                                    fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Script(text="Bob clearly won."), Script(text="As I said, Bob won. No JSON needed."))
    session = await debate(engine, JudgeConfig(judges=[judge(fake_llm)], criteria=CRITERIA))
    verdict = session.state.verdict
    assert session.state.status is State.COMPLETED
    assert verdict is not None and verdict.available is False
    assert verdict.winner is None and verdict.scores == {}
    assert "Bob clearly won." in (verdict.raw_text or "")
    assert "As I said, Bob won. No JSON needed." in (verdict.raw_text or "")
    assert "invalid verdict after one repair request" in verdict.reasoning
    assert len(fake_llm.model_requests) == 2
    # the judge's calls are still paid for
    assert session.state.ledger.tokens_by_model["openai:judge-main"]["calls"] == 2


async def test_fallback_judge_takes_over_when_the_only_judge_fails(engine: Engine,
                                                                   fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Script.model_not_found(), Script(text=json.dumps(VERDICT)))
    config = JudgeConfig(judges=[judge(fake_llm)], fallback=judge(fake_llm, "judge-backup"), criteria=CRITERIA)
    session = await debate(engine, config)
    verdict = session.state.verdict
    backup_labels = assign_labels(["ann", "bob"], SEED, judge_index=1)  # each judge sees its own order
    assert verdict is not None and verdict.available and verdict.winner == backup_labels["B"]
    main, backup = verdict.rulings
    assert main.judge == "openai:judge-main" and main.error and "judge-main" in main.error
    assert backup.judge == "openai:judge-backup (fallback)" and backup.error is None
    assert [r.model for r in fake_llm.model_requests] == ["judge-main", "judge-backup"]


async def test_a_judge_on_a_llama_cpp_python_server_gets_its_schema_inside_json_object(
        engine: Engine, fake_llm: FakeLLMServer) -> None:
    """llama-cpp-python refuses json_schema with a 500 and answers a bare json_object with `{}` (what a
    small model writes when only "an object" is asked); the schema sent inside json_object is its grammar."""
    fake_llm.llama_cpp_python = True
    spec = JudgeSpec(provider="compatible", model="gemma", base_url=fake_llm.openai_url)
    session = await debate(engine, JudgeConfig(judges=[spec], criteria=CRITERIA))
    verdict = session.state.verdict
    assert verdict is not None and verdict.available, verdict and verdict.reasoning
    (ruling,) = verdict.rulings
    assert ruling.output_mode == "json_object+schema" and ruling.parse_failures == 0
    assert set(ruling.criteria) == set(CRITERIA)
    refused, answered = fake_llm.model_requests
    assert refused.body["response_format"]["type"] == "json_schema"
    fmt = answered.body["response_format"]
    assert fmt["type"] == "json_object" and set(fmt["schema"]["required"]) >= {"winner", "scores", "criteria"}
    assert any("json_object mode with the schema attached" in note for note in verdict.notes)
