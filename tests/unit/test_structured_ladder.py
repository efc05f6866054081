"""The structured-output ladder per endpoint: json_schema → json_object+schema → json_object → prompt, one
step per refusal (both json_object rungs skipped without JSON mode), never back up by a refusal, and a
probe's finding remembered as it is (up too: a server upgraded in place)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from webapp.providers import structured

URL = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    structured.forget_refusals()
    yield
    structured.forget_refusals()


def test_each_refusal_steps_one_rung_down_and_never_back_up() -> None:
    assert structured.best_mode("compatible", URL) == "json_schema"
    assert structured.record_refusal("compatible", URL, "json_schema") == "json_object+schema"
    assert structured.record_refusal("compatible", URL + "/", "json_object+schema") == "json_object"
    assert structured.record_refusal("compatible", URL, "json_schema") == "json_object"  # a late refusal
    assert structured.record_refusal("compatible", URL, "json_object") == "prompt"
    assert structured.best_mode("openai", URL) == "json_schema"  # another provider, another endpoint


def test_without_json_mode_both_json_object_rungs_are_skipped() -> None:
    assert structured.record_refusal("compatible", URL, "json_schema", json_object=False) == "prompt"


def test_a_probe_is_remembered_as_found_and_can_be_forgotten() -> None:
    structured.record_refusal("compatible", URL, "json_schema")
    structured.record_mode("compatible", URL, "json_schema")  # upgraded: json_schema accepted again
    assert structured.best_mode("compatible", URL) == "json_schema"
    structured.record_mode("compatible", URL, "json_object+schema")
    structured.forget_endpoint("compatible", URL)
    assert structured.best_mode("compatible", URL) == "json_schema"
    with pytest.raises(ValueError, match="not a mode of the ladder"):
        structured.record_mode("compatible", URL, "tool")


def test_a_500_naming_response_format_is_a_refusal_but_a_plain_500_is_not() -> None:
    assert structured.is_refusal(500, "response_format.type: Input should be 'text' or 'json_object'")
    assert not structured.is_refusal(500, "The server had an error while processing your request")
    assert not structured.is_refusal(429, "response_format rate limited")


def test_a_schema_inside_json_object_spells_bounded_integers_out_for_the_grammar() -> None:
    # llama-cpp-python's grammar ignores minimum/maximum: Gemma 3 270M wrote scores of 200 and 10**15.
    from webapp.engine.answers import json_schema, verdict_model
    from webapp.providers.structured import grammar_schema

    schema = json_schema(verdict_model(["A", "B"], ["clarity"]))
    sent = grammar_schema(schema)
    score = sent["properties"]["scores"]["properties"]["A"]
    assert score["enum"] == list(range(0, 101)) and "maximum" not in score and "minimum" not in score
    assert sent["properties"]["criteria"]["properties"]["clarity"]["properties"]["B"]["properties"]["score"][
        "enum"][-1] == 100
    # free text cannot be empty under the grammar (an empty reasoning failed a verdict); enums stay as they are
    assert sent["properties"]["reasoning"]["minLength"] == 1
    # and cannot run on past the answer's token limit (a note that never closed left no JSON at all)
    note = sent["properties"]["criteria"]["properties"]["clarity"]["properties"]["A"]["properties"]["note"]
    assert note["maxLength"] == 200 and sent["properties"]["reasoning"]["maxLength"] == 600
    assert "minLength" not in sent["properties"]["winner"]
    # numbers that cannot be listed keep their bounds; the schema given is not changed
    assert sent["properties"]["confidence"] == schema["properties"]["confidence"]
    assert "enum" not in schema["properties"]["scores"]["properties"]["A"]
