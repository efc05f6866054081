"""The structured-output probe (`webapp.providers.probe.probe_structured`) against the fake server in each
of its modes: one tiny request walks the ladder like a debate's call, the mode found is remembered for the
endpoint (so the next verdict asks for it at once), a failed probe keeps what was known, and a probe after
an upgrade finds the better mode again."""

from __future__ import annotations

import socket

import pytest

from tests.fakellm import FakeLLMServer
from webapp.providers import structured
from webapp.providers.presets import PRESETS
from webapp.providers.probe import probe_structured

# fake-server switches → (mode found, modes refused on the way, whether the answer keeps to the schema)
CASES: dict[str, tuple[tuple[str, ...], str, list[str], bool]] = {
    "llama.cpp": (("grammar",), "json_schema", [], True),
    "llama-cpp-python": (("llama_cpp_python",), "json_object+schema", ["json_schema"], True),
    "refusing": (("grammar", "refuse_json_schema"), "json_object+schema", ["json_schema"], True),
    "strict-json-object": (("refuse_json_schema", "refuse_object_schema"), "json_object",
                           ["json_schema", "json_object+schema"], False),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_the_probe_finds_and_remembers_the_mode(case: str, fake_llm: FakeLLMServer) -> None:
    switches, mode, refused, follows = CASES[case]
    for switch in switches:
        setattr(fake_llm, switch, True)
    found = await probe_structured(fake_llm.openai_url, "fake-model")
    assert (found.mode, found.refused, found.follows_schema) == (mode, refused, follows), found
    assert found.problem == "" and found.model == "fake-model"
    assert len(fake_llm.model_requests) == len(refused) + 1
    assert all(r.body["max_tokens"] <= 32 for r in fake_llm.model_requests)  # tiny
    assert structured.best_mode("compatible", fake_llm.openai_url) == mode
    assert ("kept to its schema" in found.describe()) is follows


async def test_a_preset_without_json_mode_goes_from_json_schema_to_the_prompt(fake_llm: FakeLLMServer) -> None:
    fake_llm.refuse_json_schema = True
    found = await probe_structured(fake_llm.openai_url, "fake-model", preset=PRESETS["lmstudio"])
    assert (found.mode, found.refused) == ("prompt", ["json_schema"])
    assert "response_format" not in fake_llm.last_request.body
    assert "schema goes in the prompt only" in found.describe()


async def test_a_probe_after_an_upgrade_finds_the_better_mode(fake_llm: FakeLLMServer) -> None:
    structured.record_refusal("compatible", fake_llm.openai_url, "json_schema")  # refused before the upgrade
    fake_llm.grammar = True
    found = await probe_structured(fake_llm.openai_url + "/", "fake-model")
    assert found.mode == "json_schema" and found.refused == []
    assert structured.best_mode("compatible", fake_llm.openai_url) == "json_schema"


async def test_a_failed_probe_says_why_and_keeps_what_was_known() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    structured.record_refusal("compatible", url, "json_schema")
    try:
        found = await probe_structured(url, "gemma", timeout=2)
        assert found.mode is None and "connection" in found.problem
        assert found.describe().startswith("Structured output not known: the probe to gemma failed")
        assert structured.best_mode("compatible", url) == "json_object+schema"
    finally:
        structured.forget_refusals()
