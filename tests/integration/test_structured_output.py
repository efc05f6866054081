"""Structured output through every protocol, with the real SDKs against the fake server in grammar mode.

Verdicts, round decisions (free-form, convergence, quality), clarification questions and on-topic
checks are asked for with the answer's JSON schema: OpenAI `response_format` json_schema, an Anthropic
forced tool (streamed as `input_json_delta`), a compatible server's json_schema, a compatible server
that refuses json_schema (→ json_object carrying the schema, remembered per endpoint), one that refuses
that too (→ bare json_object), one that supports neither (→ the schema in the prompt only), and one like
llama-cpp-python (json_schema refused with a 500; only a schema inside json_object constrains the answer).
In grammar mode every verdict parses, whatever the labels.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import FakeLLMServer, Script
from tests.provider_helpers import register_fake_llm, use_fake_keys
from webapp.engine import termination
from webapp.engine.events import CallRecord
from webapp.engine.judge import assign_labels, judge_debate, rule_one
from webapp.engine.state import DebateState
from webapp.models import DebateConfig, JudgeConfig, JudgeSpec, Participant, Turn, utcnow
from webapp.providers import structured
from webapp.providers.base import ProviderRequest, TextDelta
from webapp.providers.registry import ProviderCache

# protocol → (spec fields, the fake server's refusal switches, the mode the answer is asked in)
PROTOCOLS: dict[str, tuple[dict[str, Any], tuple[str, ...], str]] = {
    "openai": ({"provider": "openai"}, (), "json_schema"),
    "anthropic": ({"provider": "anthropic"}, (), "tool"),
    "compatible": ({"provider": "compatible"}, (), "json_schema"),
    "compatible-refusing": ({"provider": "compatible"}, ("refuse_json_schema",), "json_object+schema"),
    "compatible-refusing-schema-key": ({"provider": "compatible"},
                                       ("refuse_json_schema", "refuse_object_schema"), "json_object"),
    "compatible-prompt-only": ({"provider": "compatible", "preset": "lmstudio"}, ("refuse_json_schema",),
                               "prompt"),
    "llama-cpp-python": ({"provider": "compatible"}, ("llama_cpp_python",), "json_object+schema"),
}


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    use_fake_keys(monkeypatch, tmp_path, OPENAI_API_KEY="fake-key-not-real", ANTHROPIC_API_KEY="fake-key-not-real")
    structured.forget_refusals()  # a later server may get the port of one that refused
    yield
    structured.forget_refusals()


@pytest.fixture
def grammar_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    server = FakeLLMServer()
    server.grammar = True
    with server:
        register_fake_llm(monkeypatch, server.url)  # the keys go only to registered endpoints
        yield server


@pytest.fixture
async def cache() -> AsyncIterator[ProviderCache]:
    async with ProviderCache() as providers:
        yield providers


def spec_for(protocol: str, server: FakeLLMServer, model: str = "judge-1") -> JudgeSpec:
    fields, switches, _ = PROTOCOLS[protocol]
    for switch in switches:
        setattr(server, switch, True)
    url = server.anthropic_url if fields["provider"] == "anthropic" else server.openai_url
    return JudgeSpec(model=model, base_url=url, **fields)


class Calls:
    """The runner's part, without the runner: stream each request through the real provider."""

    def __init__(self, cache: ProviderCache) -> None:
        self.cache = cache
        self.requests: list[ProviderRequest] = []

    async def text(self, spec: Any, request: ProviderRequest) -> str:
        self.requests.append(request)
        parts = [item.text async for item in self.cache.get(spec).stream(request) if isinstance(item, TextDelta)]
        return "".join(parts)

    async def judge(self, spec: JudgeSpec, request: ProviderRequest) -> str:
        return await self.text(spec, request)

    async def aux(self, spec: Any, request: ProviderRequest, commit_cost: bool = False) -> tuple[str, CallRecord]:
        return await self.text(spec, request), CallRecord(model=spec.model, purpose=request.purpose)


def debate_state(spec: JudgeSpec, fmt: str = "free-form", **config: Any) -> DebateState:
    participants = config.pop("participants", None) or [Participant(name="Ann", position="pro"),
                                                        Participant(name="Bob", position="con")]
    cfg = DebateConfig(topic="Should cities ban cars from their centres?", format=fmt, rounds=3,
                       participants=participants, judge=JudgeConfig(judges=[spec], criteria=["logic", "evidence"]),
                       seed=5, **config)
    state = DebateState("d1", cfg, utcnow())
    now = utcnow()
    for i, p in enumerate(cfg.participants):
        state.turns.append(Turn(key=f"opening/r1/{p.id}/{i}", phase=state.format.phases[0].id, round=1,
                                speaker=p.id, text=f"{p.name} argues that cars choke the city centre.",
                                started_at=now, finished_at=now))
    return state


def answer_requested(server: FakeLLMServer, protocol: str) -> None:
    """The last model request used the mechanism this protocol should end up with."""
    body = server.last_request.body
    mode = PROTOCOLS[protocol][2]
    if mode == "json_schema":
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["strict"] is True
    elif mode == "tool":
        assert body["tool_choice"]["type"] == "tool" and body["tools"][0]["input_schema"]["type"] == "object"
    elif mode == "json_object+schema":
        assert body["response_format"]["type"] == "json_object"
        assert body["response_format"]["schema"]["type"] == "object"  # the schema travels with json_object
        assert "JSON schema" in server.last_request.prompt_text  # and in the prompt, for servers ignoring it
    elif mode == "json_object":
        assert body["response_format"] == {"type": "json_object"}
        assert "JSON schema" in server.last_request.prompt_text
    else:
        assert "response_format" not in body and "JSON schema" in server.last_request.prompt_text


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
async def test_verdict_parses_through_each_protocol(protocol: str, grammar_server: FakeLLMServer,
                                                    cache: ProviderCache) -> None:
    spec = spec_for(protocol, grammar_server)
    state = debate_state(spec)
    calls = Calls(cache)
    verdict = await judge_debate(calls.judge, state.config, state.format, state.turns)
    assert verdict.available, verdict.reasoning
    (ruling,) = verdict.rulings
    assert ruling.error is None and ruling.parse_failures == 0
    assert ruling.output_mode == PROTOCOLS[protocol][2]
    assert set(verdict.scores) == {"ann", "bob"} and all(0 <= s <= 100 for s in verdict.scores.values())
    answer_requested(grammar_server, protocol)
    if PROTOCOLS[protocol][1]:  # the fallback is noted on the verdict
        assert any("refused json_schema" in n or "no structured output" in n for n in verdict.notes)
    else:
        assert verdict.notes == [] or all("Length" in n for n in verdict.notes)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
async def test_round_decisions_parse_through_each_protocol(protocol: str, grammar_server: FakeLLMServer,
                                                           cache: ProviderCache) -> None:
    spec = spec_for(protocol, grammar_server)
    calls = Calls(cache)
    decision = await termination.decide(calls.aux, debate_state(spec, "free-form"), 1)
    assert "no usable" not in decision.reason and isinstance(decision.stop, bool)
    # how it was asked, in the ledger
    assert [(r.model_extra or {}).get("output_mode") for r in decision.calls] == [PROTOCOLS[protocol][2]]
    answer_requested(grammar_server, protocol)
    rating = await termination.decide(calls.aux, debate_state(spec, "convergence"), 1)
    assert "no usable" not in rating.reason and rating.agreement is not None and 0 <= rating.agreement <= 100
    assert isinstance(rating.irreconcilable, bool)
    quality = await termination.decide(calls.aux, debate_state(spec, "collaborative", evaluation="quality"), 1)
    assert "no usable" not in quality.reason and quality.score is not None and 0 <= quality.score <= 100
    answer_requested(grammar_server, protocol)
    assert [r.purpose for r in calls.requests] == ["round_check", "convergence", "quality"]
    assert all(r.json_schema is not None for r in calls.requests)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
async def test_clarification_questions_and_on_topic_checks_parse_through_each_protocol(
        protocol: str, grammar_server: FakeLLMServer, cache: ProviderCache) -> None:
    spec = spec_for(protocol, grammar_server)
    fields = spec.model_dump(include={"provider", "preset", "base_url"})
    debaters = [Participant(name="Ann", position="pro", model="m-ann", **fields),
                Participant(name="Bob", position="con", model="m-bob", **fields)]
    state = debate_state(spec, "collaborative", participants=debaters, clarification_questions=2)
    calls = Calls(cache)
    questions, _ = await termination.ask_clarifications(calls.aux, state, 1)
    assert set(questions) == {"ann", "bob"}
    assert all(len(q) <= 2 and all(item.endswith("?") for item in q) for q in questions.values())
    assert all(r.json_schema is not None and r.json_schema["properties"]["questions"]["maxItems"] == 2
               for r in calls.requests)
    strict = debate_state(spec, "free-form", strict=True)
    note, checks = await termination.check_on_topic(calls.aux, strict, strict.config.participants[0],
                                                    "Cars choke the city centre.")
    assert len(checks) == 1  # answered at once: no repair request
    assert note is None or note.startswith("off-topic: Grammar-constrained reason")
    answer_requested(grammar_server, protocol)


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "compatible"])
async def test_every_verdict_parses_in_grammar_mode(protocol: str, grammar_server: FakeLLMServer,
                                                    cache: ProviderCache) -> None:
    """30 rulings with 2–8 debaters and 1–4 criteria each: all parse at the first reply."""
    rng = random.Random(11)
    calls = Calls(cache)
    spec = spec_for(protocol, grammar_server)
    pool = ["clarity", "evidence", "rebuttal", "Argument Quality", "fairness", "use of sources"]
    winners = set()
    for n in range(30):
        count = rng.randint(2, 8)
        participants = [Participant(name=f"P{i}", position=["pro", "con", "skeptic"][i % 3]) for i in range(count)]
        state = debate_state(spec, "roundtable" if count > 2 else "free-form", participants=participants)
        config = state.config.model_copy(update={"seed": n, "judge": JudgeConfig(
            judges=[spec], criteria=rng.sample(pool, rng.randint(1, 4)))})
        labels = assign_labels([p.id for p in participants], n)
        result = await rule_one(calls.judge, spec, config, state.format, state.turns, labels)
        assert result.ruling.error is None, result.ruling.error
        assert set(result.ruling.scores) == set(labels.values())
        assert set(result.ruling.criteria) == set(config.judge.criteria)
        assert len(result.raw) == 1 and result.ruling.parse_failures == 0
        winners.add(result.ruling.winner)
    assert len(calls.requests) == 30  # never a repair request
    assert len(winners) > 3  # the grammar picks among the labels (and "tie"), it is not a constant


async def test_refusal_is_remembered_per_endpoint(cache: ProviderCache) -> None:
    refusing, modern = FakeLLMServer(), FakeLLMServer()
    refusing.grammar = modern.grammar = True
    refusing.refuse_json_schema = True
    with refusing, modern:
        calls = Calls(cache)
        old_spec = JudgeSpec(provider="compatible", model="old", base_url=refusing.openai_url)
        new_spec = JudgeSpec(provider="compatible", model="new", base_url=modern.openai_url)
        for spec in (old_spec, old_spec, new_spec):
            state = debate_state(spec)
            verdict = await judge_debate(calls.judge, state.config, state.format, state.turns)
            assert verdict.available
        kinds = [r.body.get("response_format", {}).get("type") for r in refusing.model_requests]
        assert kinds == ["json_schema", "json_object", "json_object"]  # refused once, then straight to what works
        assert all("schema" in r.body["response_format"] for r in refusing.model_requests[1:])
        assert [r.body["response_format"]["type"] for r in modern.model_requests] == ["json_schema"]
        assert structured.best_mode("compatible", refusing.openai_url) == "json_object+schema"
        assert structured.best_mode("compatible", modern.openai_url) == "json_schema"


async def test_an_invalid_structured_answer_still_gets_one_repair(grammar_server: FakeLLMServer,
                                                                  cache: ProviderCache) -> None:
    """A server that ignores the schema (a scripted reply) still gets the one repair request; the ruling
    counts the unusable reply."""
    spec = spec_for("anthropic", grammar_server)
    grammar_server.enqueue(Script(text='{"winner": "A", "scores": {"A": 70}}'))
    state = debate_state(spec)
    calls = Calls(cache)
    verdict = await judge_debate(calls.judge, state.config, state.format, state.turns)
    assert verdict.available
    assert verdict.rulings[0].parse_failures == 1 and len(calls.requests) == 2
    assert "'scores' is missing 'B'" in calls.requests[1].messages[-1].content


def test_grammar_mode_is_off_by_default_and_refusal_is_a_400(fake_llm: FakeLLMServer) -> None:
    import httpx2

    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
                "type": "object", "properties": {"a": {"type": "integer", "minimum": 3, "maximum": 3}},
                "required": ["a"], "additionalProperties": False}}}}
    plain = httpx2.post(f"{fake_llm.openai_url}/chat/completions", json=body).json()
    assert plain["choices"][0]["message"]["content"] != '{"a": 3}'
    fake_llm.grammar = True
    constrained = httpx2.post(f"{fake_llm.openai_url}/chat/completions", json=body).json()
    assert constrained["choices"][0]["message"]["content"] == '{"a": 3}'
    fake_llm.refuse_json_schema = True
    refused = httpx2.post(f"{fake_llm.openai_url}/chat/completions", json=body)
    assert refused.status_code == 400 and "json_schema" in refused.json()["error"]["message"]


def test_schema_instance_honours_enums_bounds_and_required() -> None:
    from tests.fakellm import schema_instance
    from webapp.engine.answers import json_schema, verdict_model

    schema = json_schema(verdict_model(["A", "B", "C"], ["logic"]))
    for seed in range(20):
        value = schema_instance(schema, random.Random(seed))
        assert value["winner"] in ("A", "B", "C", "tie")
        assert set(value["scores"]) == {"A", "B", "C"} and all(0 <= v <= 100 for v in value["scores"].values())
        assert 0 <= value["confidence"] <= 1
        assert set(value["criteria"]["logic"]["B"]) == {"score", "note"}


def test_llama_cpp_python_mode_refuses_json_schema_with_a_500_and_honours_a_schema_in_json_object(
        fake_llm: FakeLLMServer) -> None:
    import httpx2

    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3, "maximum": 3}},
              "required": ["a"], "additionalProperties": False}
    messages = [{"role": "user", "content": "Reply with JSON matching this JSON schema (x): " + str(schema)}]
    url = f"{fake_llm.openai_url}/chat/completions"

    def ask(response_format: dict[str, Any]) -> httpx2.Response:
        return httpx2.post(url, json={"model": "m", "messages": messages, "response_format": response_format})

    fake_llm.llama_cpp_python = True
    refused = ask({"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
    assert refused.status_code == 500
    assert "Input should be 'text' or 'json_object'" in refused.json()["error"]["message"]
    assert structured.is_refusal(500, refused.json()["error"]["message"])
    honoured = ask({"type": "json_object", "schema": schema}).json()
    assert honoured["choices"][0]["message"]["content"] == '{"a": 3}'
    bare = ask({"type": "json_object"}).json()
    assert bare["choices"][0]["message"]["content"] == "{}"  # any object at all: the shape is lost
