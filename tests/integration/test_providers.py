"""Provider adapters against the local fake LLM server, through the real OpenAI and Anthropic SDKs."""

from __future__ import annotations

import dataclasses
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import httpx2
import pytest

from tests.fakellm import FakeLLMServer, Script
from tests.provider_helpers import register_fake_llm
from webapp.models import JudgeSpec, Participant
from webapp.providers import anthropic as anthropic_provider
from webapp.providers import openai as openai_provider
from webapp.providers.anthropic import AnthropicProvider
from webapp.providers.base import (
    Completion,
    ErrorKind,
    Message,
    Provider,
    ProviderError,
    ProviderRequest,
    TextDelta,
    estimate_request_tokens,
    estimate_tokens,
)
from webapp.providers.compatible import PRESETS, CompatibleProvider
from webapp.providers.openai import OpenAIProvider
from webapp.providers.registry import ProviderCache, check_spec, key_env_for, provider_status
from webapp.providers.sdk import parse_retry_after, provider_message

ROOT = Path(__file__).resolve().parents[2]
KEY = "fake-key-for-tests-0123456789"


def make_request(**kwargs: object) -> ProviderRequest:
    fields: dict[str, object] = {
        "model": "test-model",
        "system": "You are a careful debater.",
        "messages": [Message(role="user", content="Argue that tea beats coffee")],
        "max_tokens": 300,
        "first_token_timeout": 10.0,
    }
    fields.update(kwargs)
    return ProviderRequest.model_validate(fields)


async def collect(provider: Provider, request: ProviderRequest) -> tuple[list[str], Completion]:
    texts: list[str] = []
    completion: Completion | None = None
    async for item in provider.stream(request):
        if isinstance(item, TextDelta):
            assert completion is None, "text after the completion"
            texts.append(item.text)
        else:
            assert completion is None, "two completions"
            completion = item
    assert completion is not None, "no completion"
    return texts, completion


async def failure(provider: Provider, request: ProviderRequest) -> tuple[list[str], ProviderError]:
    texts: list[str] = []
    with pytest.raises(ProviderError) as caught:
        async for item in provider.stream(request):
            assert isinstance(item, TextDelta), "a completion before the failure"
            texts.append(item.text)
    return texts, caught.value


@pytest.fixture
async def oai(fake_llm: FakeLLMServer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(api_key=KEY, base_url=fake_llm.openai_url)
    yield provider
    await provider.aclose()


@pytest.fixture
async def ant(fake_llm: FakeLLMServer) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(api_key=KEY, base_url=fake_llm.url)
    yield provider
    await provider.aclose()


@pytest.fixture(params=["oai", "ant"], ids=["openai", "anthropic"])
def any_provider(request: pytest.FixtureRequest) -> Provider:
    """Each adapter in turn (the `oai` and `ant` fixtures)."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No provider keys in the environment, and no `.env` in the working directory."""
    monkeypatch.chdir(tmp_path)
    for name in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", *(p.key_env for p in PRESETS.values() if p.key_env)]:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# --- successful streams -------------------------------------------------------------------------


async def test_openai_streams_text_usage_and_finish_reason(
    fake_llm: FakeLLMServer, oai: OpenAIProvider
) -> None:
    fake_llm.enqueue(
        Script(
            text="Tea is calmer and kinder.",
            input_tokens=42,
            output_tokens=6,
            cached_tokens=5,
            request_id="r-1",
        )
    )
    texts, completion = await collect(oai, make_request())
    assert "".join(texts) == "Tea is calmer and kinder."
    assert len(texts) == 5
    assert completion.usage.model_dump() == {
        "input_tokens": 42,
        "output_tokens": 6,
        "cached_tokens": 5,
        "estimated": False,
    }
    assert completion.finish_reason == "stop"
    assert completion.request_id == "r-1"
    body = fake_llm.last_request.body
    assert fake_llm.last_request.path == "/v1/chat/completions"
    assert fake_llm.last_request.headers["authorization"] == f"Bearer {KEY}"
    assert body["messages"][0] == {"role": "system", "content": "You are a careful debater."}
    assert body["messages"][1] == {"role": "user", "content": "Argue that tea beats coffee"}
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 300
    assert "temperature" not in body
    assert "response_format" not in body


async def test_openai_sends_temperature_and_json_mode_when_asked(
    fake_llm: FakeLLMServer, oai: OpenAIProvider
) -> None:
    fake_llm.json_reply = '{"winner": "A"}'
    texts, _ = await collect(oai, make_request(temperature=0.7, json_mode=True))
    assert json.loads("".join(texts)) == {"winner": "A"}
    body = fake_llm.last_request.body
    assert body["temperature"] == 0.7
    assert body["response_format"] == {"type": "json_object"}


async def test_json_mode_can_be_switched_off(fake_llm: FakeLLMServer) -> None:
    provider = OpenAIProvider(api_key=KEY, base_url=fake_llm.openai_url, json_mode=False)
    try:
        await collect(provider, make_request(json_mode=True))
    finally:
        await provider.aclose()
    assert "response_format" not in fake_llm.last_request.body


async def test_server_without_usage_gets_estimated_usage(
    fake_llm: FakeLLMServer, oai: OpenAIProvider
) -> None:
    fake_llm.usage_in_stream = False  # like LM Studio: no usage chunk even when asked
    request = make_request()
    texts, completion = await collect(oai, request)
    text = "".join(texts)
    assert text
    assert completion.finish_reason == "stop"
    assert completion.usage.estimated is True
    assert completion.usage.input_tokens == estimate_request_tokens(request)
    assert completion.usage.output_tokens == estimate_tokens(text)


async def test_lmstudio_preset_asks_no_usage_and_no_json_mode(fake_llm: FakeLLMServer) -> None:
    provider = CompatibleProvider.from_preset(PRESETS["lmstudio"], base_url=fake_llm.openai_url)
    try:
        _, completion = await collect(provider, make_request(json_mode=True))
    finally:
        await provider.aclose()
    body = fake_llm.last_request.body
    assert provider.name == "compatible"
    assert "stream_options" not in body
    assert "response_format" not in body
    assert body["max_tokens"] == 300
    assert completion.usage.estimated is True


async def test_anthropic_streams_text_usage_and_stop_reason(
    fake_llm: FakeLLMServer, ant: AnthropicProvider
) -> None:
    fake_llm.enqueue(Script(text="Coffee wins on focus.", input_tokens=30, output_tokens=5, cached_tokens=12))
    texts, completion = await collect(ant, make_request(temperature=0.9))
    assert "".join(texts) == "Coffee wins on focus."
    # input counts every input token (uncached + cache reads), like OpenAI's prompt_tokens
    assert completion.usage.model_dump() == {
        "input_tokens": 42,
        "output_tokens": 5,
        "cached_tokens": 12,
        "estimated": False,
    }
    assert completion.finish_reason == "end_turn"
    assert completion.request_id and completion.request_id.startswith("req_fake_")
    recorded = fake_llm.last_request
    assert recorded.path == "/v1/messages"
    assert "anthropic-version" in recorded.headers
    assert KEY in (recorded.headers.get("x-api-key", "") + recorded.headers.get("authorization", ""))
    assert recorded.body["system"] == "You are a careful debater."
    assert recorded.body["messages"] == [{"role": "user", "content": "Argue that tea beats coffee"}]
    assert recorded.body["max_tokens"] == 300
    assert recorded.body["stream"] is True
    assert "temperature" not in recorded.body


async def test_slow_first_token_within_timeout_still_completes(
    fake_llm: FakeLLMServer, any_provider: Provider
) -> None:
    fake_llm.enqueue(Script.slow(0.2, text="late but fine"))
    started = time.monotonic()
    texts, completion = await collect(any_provider, make_request(first_token_timeout=5))
    assert time.monotonic() - started >= 0.2
    assert "".join(texts) == "late but fine"
    assert completion.finish_reason in ("stop", "end_turn")


# --- errors ---------------------------------------------------------------------------------------

FAULTS = [
    # (script, kind, reason, status, message)
    (
        Script.rate_limited(retry_after=7, message="Slow down please."),
        ErrorKind.RETRYABLE,
        "rate_limit",
        429,
        "Slow down please.",
    ),
    (
        Script.server_error("Something broke upstream."),
        ErrorKind.RETRYABLE,
        "server",
        500,
        "Something broke upstream.",
    ),
    (
        Script.overloaded("Overloaded right now."),
        ErrorKind.RETRYABLE,
        "overloaded",
        529,
        "Overloaded right now.",
    ),
    (Script.unauthorized("The key is not valid."), ErrorKind.FATAL, "auth", 401, "The key is not valid."),
    (Script(status=403, error_message="Not for you."), ErrorKind.FATAL, "auth", 403, "Not for you."),
    (
        Script.model_not_found("No such model: test-model."),
        ErrorKind.FATAL,
        "not_found",
        404,
        "No such model: test-model.",
    ),
    (
        Script.bad_request("max_tokens is too large."),
        ErrorKind.FATAL,
        "bad_request",
        400,
        "max_tokens is too large.",
    ),
]


@pytest.mark.parametrize(
    ("script", "kind", "reason", "status", "message"), FAULTS, ids=[f"{f[2]}-{f[3]}" for f in FAULTS]
)
async def test_http_faults_map_to_kind_reason_message_and_request_id(
    fake_llm: FakeLLMServer,
    any_provider: Provider,
    script: Script,
    kind: ErrorKind,
    reason: str,
    status: int,
    message: str,
) -> None:
    fake_llm.enqueue(dataclasses.replace(script, request_id="req-fault-1"))
    texts, error = await failure(any_provider, make_request())
    assert texts == []
    assert error.kind is kind
    assert error.retryable is (kind is ErrorKind.RETRYABLE)
    assert error.reason == reason
    assert error.status == status
    assert error.message == message
    assert error.request_id == "req-fault-1"
    assert error.provider == any_provider.name
    assert "req-fault-1" in str(error) and message in str(error)
    assert len(fake_llm.model_requests) == 1, "the SDK must not retry on its own"


async def test_retry_after_header_is_parsed(fake_llm: FakeLLMServer, any_provider: Provider) -> None:
    fake_llm.enqueue(Script.rate_limited(retry_after=12), Script(status=429, retry_after_ms=1500))
    _, error = await failure(any_provider, make_request())
    assert error.retry_after == 12.0
    _, error = await failure(any_provider, make_request())
    assert error.retry_after == 1.5


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    assert 55 <= (parse_retry_after({"retry-after": future}) or 0) <= 60
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None


async def test_openai_insufficient_quota_is_fatal(fake_llm: FakeLLMServer, oai: OpenAIProvider) -> None:
    fake_llm.enqueue(
        Script(status=429, error_code="insufficient_quota", error_message="You exceeded your quota.")
    )
    _, error = await failure(oai, make_request())
    assert error.kind is ErrorKind.FATAL
    assert error.reason == "quota"
    assert error.message == "You exceeded your quota."


async def test_status_decides_over_a_generic_error_type(fake_llm: FakeLLMServer, oai: OpenAIProvider) -> None:
    # Ollama answers an unknown model with 404 and type "api_error": not worth retrying.
    ollama_404 = 'model "llama9" not found, try pulling it first'
    fake_llm.enqueue(Script(status=404, error_type="api_error", error_message=ollama_404))
    _, error = await failure(oai, make_request())
    assert (error.kind, error.reason, error.message) == (ErrorKind.FATAL, "not_found", ollama_404)
    fake_llm.enqueue(Script(status=503, error_message="The engine is currently overloaded."))
    _, error = await failure(oai, make_request())
    assert (error.kind, error.reason) == (ErrorKind.RETRYABLE, "overloaded")


def test_provider_message_finds_the_servers_own_text() -> None:
    assert provider_message({"error": {"message": "inner text"}}, "fallback") == "inner text"
    assert provider_message({"message": "top text", "type": "x"}, "fallback") == "top text"
    assert provider_message({"error": "plain error"}, "fallback") == "plain error"
    assert provider_message({"detail": "fastapi detail"}, "fallback") == "fastapi detail"
    assert provider_message("<html>Bad gateway</html>", "fallback") == "<html>Bad gateway</html>"
    assert provider_message(None, "fallback") == "fallback"
    assert len(provider_message("x" * 5000, "fallback")) == 500


async def test_connection_cut_mid_stream_is_retryable(
    fake_llm: FakeLLMServer, any_provider: Provider
) -> None:
    fake_llm.enqueue(Script.cut(after=2, text="one two three four"))
    texts, error = await failure(any_provider, make_request())
    assert texts == ["one", " two"]
    assert error.kind is ErrorKind.RETRYABLE
    assert error.reason == "connection"
    assert error.request_id and error.request_id.startswith("req_fake_")


async def test_clean_end_without_terminal_event_is_a_cut_stream(
    fake_llm: FakeLLMServer, any_provider: Provider
) -> None:
    fake_llm.enqueue(Script.without_terminal(text="all the words arrive"))
    texts, error = await failure(any_provider, make_request())
    assert "".join(texts) == "all the words arrive"
    assert error.kind is ErrorKind.RETRYABLE
    assert error.reason == "cut_stream"


async def test_stream_without_finish_reason_is_a_cut_stream(
    fake_llm: FakeLLMServer, any_provider: Provider
) -> None:
    fake_llm.enqueue(Script(text="no reason given", no_finish_reason=True))
    _, error = await failure(any_provider, make_request())
    assert error.kind is ErrorKind.RETRYABLE
    assert error.reason == "cut_stream"


async def test_provider_keeps_working_after_a_cut(fake_llm: FakeLLMServer, any_provider: Provider) -> None:
    fake_llm.enqueue(Script.cut(after=1), Script(text="second try"))
    await failure(any_provider, make_request())
    texts, _ = await collect(any_provider, make_request())
    assert "".join(texts) == "second try"


@pytest.mark.parametrize(
    ("error_type", "kind", "reason"),
    [
        ("overloaded_error", ErrorKind.RETRYABLE, "overloaded"),
        ("api_error", ErrorKind.RETRYABLE, "server"),
        ("rate_limit_error", ErrorKind.RETRYABLE, "rate_limit"),
        ("invalid_request_error", ErrorKind.FATAL, "bad_request"),
    ],
)
async def test_anthropic_in_stream_error_events(
    fake_llm: FakeLLMServer, ant: AnthropicProvider, error_type: str, kind: ErrorKind, reason: str
) -> None:
    fake_llm.enqueue(Script.in_stream_error(error_type, after=1, message=f"in-stream {error_type}"))
    texts, error = await failure(ant, make_request())
    assert len(texts) == 1
    assert error.kind is kind
    assert error.reason == reason
    assert error.message == f"in-stream {error_type}"
    assert error.status is None  # the stream itself was a 200
    assert error.request_id and error.request_id.startswith("req_fake_")


async def test_openai_in_stream_error_event(fake_llm: FakeLLMServer, oai: OpenAIProvider) -> None:
    fake_llm.enqueue(Script.in_stream_error("server_error", after=2, message="The model crashed."))
    texts, error = await failure(oai, make_request())
    assert len(texts) == 2
    assert error.kind is ErrorKind.RETRYABLE
    assert error.reason == "server"
    assert error.message == "The model crashed."


async def test_no_first_token_before_the_timeout_is_retryable(
    fake_llm: FakeLLMServer, any_provider: Provider
) -> None:
    gate = threading.Event()
    fake_llm.enqueue(Script.held(gate))
    try:
        texts, error = await failure(any_provider, make_request(first_token_timeout=0.3))
    finally:
        gate.set()
    assert texts == []
    assert error.kind is ErrorKind.RETRYABLE
    assert error.reason == "timeout"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_unreachable_server_is_a_retryable_connection_error(kind: str) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    provider: Provider = (
        OpenAIProvider(api_key=KEY, base_url=url + "/v1", connect_timeout=2)
        if kind == "openai"
        else AnthropicProvider(api_key=KEY, base_url=url, connect_timeout=2)
    )
    try:
        _, error = await failure(provider, make_request())
    finally:
        await provider.aclose()
    assert error.kind is ErrorKind.RETRYABLE
    assert error.reason == "connection"
    assert url in error.message


async def test_key_echoed_by_the_server_is_redacted(fake_llm: FakeLLMServer, any_provider: Provider) -> None:
    fake_llm.enqueue(Script.unauthorized(f"Incorrect API key provided: {KEY}."))
    _, error = await failure(any_provider, make_request())
    assert error.reason == "auth"
    assert KEY not in str(error)
    assert KEY not in json.dumps(error.to_dict())
    assert KEY not in repr(any_provider)
    assert "Incorrect API key provided" in error.message


@pytest.mark.parametrize("module", [openai_provider, anthropic_provider])
def test_raw_httpx2_errors_map_to_retryable(module: object) -> None:
    map_error = module.map_error  # type: ignore[attr-defined]
    cut = map_error(httpx2.RemoteProtocolError("peer closed connection"), request_id="req-9")
    assert (cut.kind, cut.reason, cut.request_id) == (ErrorKind.RETRYABLE, "connection", "req-9")
    assert "peer closed connection" in cut.message
    slow = map_error(httpx2.ReadTimeout("read timed out"))
    assert (slow.kind, slow.reason) == (ErrorKind.RETRYABLE, "timeout")
    odd = map_error(RuntimeError("a bug"))
    assert (odd.kind, odd.reason) == (ErrorKind.FATAL, "unknown")


# --- registry ------------------------------------------------------------------------------------


def test_check_spec_names_the_missing_variable(clean_env: pytest.MonkeyPatch) -> None:
    assert check_spec(Participant(provider="openai", model="gpt-x")) == (
        "openai needs an API key: set OPENAI_API_KEY in the environment or .env"
    )
    assert check_spec(JudgeSpec(provider="anthropic", model="claude-x")) == (
        "anthropic needs an API key: set ANTHROPIC_API_KEY in the environment or .env"
    )
    groq = check_spec(Participant(provider="compatible", preset="groq", model="llama"))
    assert groq is not None and "GROQ_API_KEY" in groq
    custom = check_spec(
        Participant(provider="compatible", model="m", base_url="http://x:1/v1", api_key_env="MY_KEY")
    )
    assert custom is not None and "MY_KEY" in custom
    no_url = check_spec(Participant(provider="compatible", model="m"))
    assert no_url is not None and "base_url" in no_url
    unknown = check_spec(Participant(provider="compatible", preset="nope", model="m"))
    assert unknown is not None and "nope" in unknown
    assert check_spec(Participant(provider="compatible", preset="ollama", model="llama3")) is None
    assert check_spec(Participant(provider="compatible", base_url="http://localhost:9/v1", model="m")) is None
    assert check_spec(Participant(provider="demo")) is None


def test_check_spec_passes_once_the_key_is_set(clean_env: pytest.MonkeyPatch) -> None:
    spec = Participant(provider="openai", model="gpt-x")
    clean_env.setenv("OPENAI_API_KEY", KEY)
    assert check_spec(spec) is None
    clean_env.delenv("OPENAI_API_KEY")
    assert check_spec(spec) is not None
    Path(".env").write_text(f'OPENAI_API_KEY="{KEY}"\n', encoding="utf-8")  # the cwd is a temporary directory
    assert check_spec(spec) is None


def test_a_key_pasted_as_variable_name_is_not_echoed(clean_env: pytest.MonkeyPatch) -> None:
    problem = check_spec(Participant(provider="openai", model="gpt-x", api_key_env=KEY))
    assert problem is not None and "api_key_env" in problem
    assert KEY not in problem


def test_key_env_for_each_provider() -> None:
    assert key_env_for(Participant(provider="openai", model="m")) == "OPENAI_API_KEY"
    assert key_env_for(JudgeSpec(provider="anthropic", model="m")) == "ANTHROPIC_API_KEY"
    assert (
        key_env_for(Participant(provider="compatible", preset="openrouter", model="m"))
        == "OPENROUTER_API_KEY"
    )
    assert key_env_for(Participant(provider="compatible", preset="ollama", model="m")) is None
    assert (
        key_env_for(Participant(provider="compatible", preset="groq", api_key_env="ALT", model="m")) == "ALT"
    )
    assert key_env_for(Participant(provider="demo")) is None


def test_provider_status_reports_variables_but_never_values(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_API_KEY", KEY)
    clean_env.setenv("GEMINI_API_KEY", "gemini-secret-value-42")
    status = provider_status()
    dumped = json.dumps(status)
    assert KEY not in dumped and "gemini-secret-value-42" not in dumped
    by_name = {(row["provider"], row["preset"]): row for row in status}
    assert by_name[("openai", None)]["configured"] is True
    assert by_name[("openai", None)]["key_env"] == "OPENAI_API_KEY"
    assert by_name[("anthropic", None)]["configured"] is False
    assert by_name[("anthropic", None)]["key_env"] == "ANTHROPIC_API_KEY"
    assert by_name[("compatible", "gemini")]["configured"] is True
    assert by_name[("compatible", "groq")]["configured"] is False
    assert by_name[("compatible", "ollama")]["configured"] is True
    assert by_name[("compatible", "ollama")]["local"] is True
    assert by_name[("demo", None)]["configured"] is True
    assert {row["preset"] for row in status if row["provider"] == "compatible"} == set(PRESETS)


async def test_provider_cache_reuses_one_provider_and_its_connection(
    fake_llm: FakeLLMServer, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("OPENAI_API_KEY", KEY)
    register_fake_llm(clean_env, fake_llm.url)  # the key goes only to a registered endpoint
    pro = Participant(name="Pro", provider="openai", model="gpt-a", base_url=fake_llm.openai_url)
    con = Participant(name="Con", provider="openai", model="gpt-b", base_url=fake_llm.openai_url)
    judge = JudgeSpec(provider="openai", model="gpt-c", base_url=fake_llm.openai_url)
    cache = ProviderCache()
    try:
        first = cache.get(pro)
        assert cache.get(con) is first
        assert cache.get(judge) is first
        assert len(cache) == 1
        await collect(first, make_request(model="gpt-a"))
        await collect(cache.get(con), make_request(model="gpt-b"))
    finally:
        await cache.aclose()
    first_request, second_request = fake_llm.model_requests
    assert first_request.headers["authorization"] == f"Bearer {KEY}"
    assert first_request.peer == second_request.peer, "the second turn opened a new connection"
    assert len(cache) == 0


async def test_provider_cache_separates_servers_and_builds_each_kind(
    fake_llm: FakeLLMServer, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("OPENAI_API_KEY", KEY)
    clean_env.setenv("ANTHROPIC_API_KEY", KEY)
    register_fake_llm(clean_env, fake_llm.url, "http://127.0.0.1:9")
    cache = ProviderCache()
    try:
        openai_a = cache.get(Participant(provider="openai", model="m", base_url=fake_llm.openai_url))
        openai_b = cache.get(Participant(provider="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        claude = cache.get(JudgeSpec(provider="anthropic", model="claude", base_url=fake_llm.url))
        local = cache.get(Participant(provider="compatible", preset="ollama", model="llama3"))
        # The same server under another name is not the registered endpoint: no key goes there.
        unregistered = f"http://localhost:{fake_llm.port}/v1"
        custom = cache.get(Participant(provider="compatible", base_url=unregistered, model="m"))
        assert openai_a is not openai_b
        assert isinstance(claude, AnthropicProvider)
        assert isinstance(local, CompatibleProvider) and local.base_url == "http://localhost:11434/v1"
        assert isinstance(custom, CompatibleProvider) and custom.base_url == unregistered
        assert len(cache) == 5
        texts, _ = await collect(custom, make_request())
        assert texts
        assert fake_llm.last_request.headers["authorization"] == "Bearer not-needed"
    finally:
        await cache.aclose()


async def test_provider_cache_refuses_a_spec_without_key(clean_env: pytest.MonkeyPatch) -> None:
    cache = ProviderCache()
    with pytest.raises(ProviderError) as caught:
        cache.get(Participant(provider="anthropic", model="claude"))
    assert caught.value.kind is ErrorKind.FATAL
    assert "ANTHROPIC_API_KEY" in caught.value.message
    assert len(cache) == 0


async def test_provider_cache_builds_demo_providers_per_model() -> None:
    cache = ProviderCache()
    try:
        demo = cache.get(Participant(provider="demo", model="demo"))
        assert type(demo).__name__ == "DemoProvider"
        assert demo.name == "demo"
        assert getattr(demo, "model", None) == "demo"
        assert cache.get(JudgeSpec(provider="demo", model="demo")) is demo
    finally:
        await cache.aclose()


# --- the fake server itself ---------------------------------------------------------------------


def test_fake_server_runs_as_a_subprocess_and_takes_scripts_over_http() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakellm", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("FAKELLM_URL=http://127.0.0.1:")
        url = line.removeprefix("FAKELLM_URL=")
        with httpx.Client(base_url=url, timeout=10) as client:
            queued = client.post("/_fake/scripts", json=[{"status": 429, "retry_after": 3}])
            assert queued.json() == {"queued": 1}
            limited = client.post("/v1/chat/completions", json={"model": "m", "messages": []})
            assert limited.status_code == 429
            assert limited.headers["retry-after"] == "3"
            ok = client.post(
                "/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi there"}]},
            )
            assert ok.json()["choices"][0]["message"]["content"] == "Fake reply: hi there."
            recorded = client.get("/_fake/requests").json()
            assert [r["path"] for r in recorded] == ["/v1/chat/completions", "/v1/chat/completions"]
    finally:
        proc.terminate()
        proc.wait(10)
