"""The model picker's sources (`webapp.providers.catalog`): genai-prices models with their prices per
provider, and what an OpenAI-compatible server says it serves."""

from __future__ import annotations

import socket

import pytest
from genai_prices import Usage, calc_price

from tests.fakellm import FakeLLMServer
from webapp.providers.catalog import genai_provider, list_server_models, priced_models, server_url
from webapp.providers.endpoints import Endpoint, EndpointPolicy
from webapp.providers.probe import check_server
from webapp.settings import Settings


def test_a_provider_offers_its_priced_text_models_at_genai_prices_prices() -> None:
    models = {m.id: m for m in priced_models("openai")}
    assert {"gpt-4o", "gpt-4o-mini"} <= set(models)
    for name, model in (("gpt-4o", models["gpt-4o"]), ("gpt-4o-mini", models["gpt-4o-mini"])):
        per_input = calc_price(Usage(input_tokens=1_000_000), name, provider_id="openai").total_price
        per_output = calc_price(Usage(output_tokens=1_000_000), name, provider_id="openai").total_price
        assert (model.input_per_mtok, model.output_per_mtok) == (float(per_input), float(per_output))
    assert models["gpt-4o"].label.startswith("gpt-4o — $")
    assert all(m.input_per_mtok >= 0 and m.output_per_mtok >= 0 for m in models.values())
    assert priced_models("no-such-provider") == ()


def test_which_genai_prices_provider_a_form_row_means() -> None:
    assert genai_provider("openai") == "openai"
    assert genai_provider("anthropic") == "anthropic"
    assert genai_provider("compatible", "openrouter") == "openrouter"
    assert genai_provider("compatible", "ollama") is None  # a local server: its own list, no prices
    assert genai_provider("demo") is None
    assert server_url("ollama", "") == "http://localhost:11434/v1"
    assert server_url("ollama", "http://gpu-box:11434/v1/") == "http://gpu-box:11434/v1"


async def test_a_server_that_answers_lists_its_models(fake_llm: FakeLLMServer) -> None:
    answer = await list_server_models(fake_llm.openai_url)
    assert answer.answers and answer.models == ["fake-model"]
    assert answer.message == f"{fake_llm.openai_url} answers: 1 model"


@pytest.mark.parametrize("kind", ["closed port", "not a URL"])
async def test_a_server_that_does_not_answer_is_named_with_the_reason(kind: str) -> None:
    if kind == "closed port":
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        expected = f"{url} does not answer (nothing listens there, or the host cannot be reached)"
    else:
        url, expected = "localhost:11434", "localhost:11434 is not an http:// or https:// address"
    answer = await list_server_models(url)
    assert not answer.answers and answer.models == []
    assert answer.message == expected


async def test_test_connection_and_the_settings_check_go_through_the_endpoint_guard(fake_llm: FakeLLMServer) -> None:
    """Hosted, this machine is asked only as a registered endpoint; metadata addresses never are."""
    hosted = Settings(_env_file=None, host="0.0.0.0", allow_free_urls="on")
    refused = await list_server_models(fake_llm.openai_url, policy=EndpointPolicy.build(hosted))
    assert not refused.answers and "only endpoints an admin registered" in refused.message
    checked = await check_server(fake_llm.openai_url, policy=EndpointPolicy.build(hosted))
    assert not checked.answers and "only endpoints an admin registered" in checked.problem
    assert fake_llm.requests == []
    registered = EndpointPolicy.build(hosted, [Endpoint(name="Box", base_url=fake_llm.openai_url)])
    assert (await list_server_models(fake_llm.openai_url, policy=registered)).models == ["fake-model"]
    assert (await check_server(fake_llm.openai_url, policy=registered)).models == ["fake-model"]
    metadata = await list_server_models("http://169.254.169.254/latest", policy=EndpointPolicy.build(Settings(
        _env_file=None)))
    assert not metadata.answers and "cloud-metadata" in metadata.message
