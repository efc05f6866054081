"""Settings checks the local servers (Ollama, vLLM, …) only when asked: a server that answers shows its
model count and the time of the check, and which structured-output mode it accepts (one tiny probe,
remembered for the endpoint); one that does not answer says so with its URL; opening the page asks
nothing; and the providers table no longer calls a local server "ready" because it needs no key."""

from __future__ import annotations

import socket

import pytest
from nicegui.testing import User

from tests.fakellm import FakeLLMServer
from tests.ui.helpers import one
from webapp.providers import structured
from webapp.providers.presets import PRESETS


def closed_port_url() -> str:
    """The URL of a local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def servers(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """Ollama's preset points at the fake server, the other local ones at closed ports (whatever this
    machine runs on the real ports); returns vLLM's URL."""
    monkeypatch.setitem(PRESETS, "ollama", PRESETS["ollama"].model_copy(update={"default_url": fake_llm.openai_url}))
    for name in ("vllm", "llamacpp", "lmstudio"):
        monkeypatch.setitem(PRESETS, name, PRESETS[name].model_copy(update={"default_url": closed_port_url()}))
    return PRESETS["vllm"].default_url


async def test_nothing_is_checked_until_asked_then_check_says_answers_or_not(
        user: User, fake_llm: FakeLLMServer, servers: str) -> None:
    await user.open("/settings")
    await user.should_see(marker="local-servers")
    assert one(user, "check-result-ollama").text == "Not checked yet."
    assert one(user, "check-result-vllm").text == "Not checked yet."
    assert fake_llm.requests == []  # opening the page asked nothing
    rows = {row["title"]: row for row in one(user, "providers").rows}
    assert rows["Ollama"]["status"] == "no key needed (check below)"

    fake_llm.llama_cpp_python = True  # refuses json_schema with a 500, takes the schema inside json_object
    user.find(marker="check-ollama").click()
    await user.should_see("Structured output:", retries=100)
    text = one(user, "check-result-ollama").text
    assert f"Answers at {fake_llm.openai_url}: 1 model (fake-model)" in text and "(checked " in text
    mode = one(user, "check-mode-ollama").text
    assert "json_object with the schema attached (json_schema refused)" in mode
    assert "kept to its schema" in mode and "did not" not in mode and "(model fake-model)" in mode
    assert [r.path for r in fake_llm.requests] == ["/v1/models", "/v1/chat/completions", "/v1/chat/completions"]
    assert [r.body["response_format"]["type"] for r in fake_llm.model_requests] == ["json_schema", "json_object"]
    # remembered for the endpoint like a refusal: the next structured call starts at json_object+schema
    assert structured.best_mode("compatible", fake_llm.openai_url) == "json_object+schema"
    assert one(user, "check-result-vllm").text == "Not checked yet."  # only the one asked for

    user.find(marker="check-vllm").click()
    await user.should_see("Does not answer", retries=50)
    assert f"Does not answer at {servers}" in one(user, "check-result-vllm").text
    assert one(user, "check-mode-vllm").text == ""  # nothing to probe


async def test_check_all_checks_every_local_server(user: User, fake_llm: FakeLLMServer, servers: str) -> None:
    await user.open("/settings")
    user.find(marker="check-all").click()
    await user.should_see("Does not answer", retries=50)
    await user.should_see("Answers at", retries=50)
    assert "Does not answer" in one(user, "check-result-vllm").text
    assert "1 model" in one(user, "check-result-ollama").text
    for name in ("llamacpp", "lmstudio"):  # checked too
        assert one(user, f"check-result-{name}").text != "Not checked yet."
