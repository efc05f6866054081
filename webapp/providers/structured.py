"""How a structured answer (a request with a JSON schema) is asked of each kind of provider, and
which endpoints refused which mechanism.

Modes, best first: `json_schema` (OpenAI and compatible servers: `response_format` json_schema,
strict — llama.cpp's llama-server, vLLM, LM Studio and Ollama turn it into a grammar), `tool`
(Anthropic: a forced tool call whose input schema is the answer's schema), `json_object+schema`
(`{"type": "json_object", "schema": {…}}`: llama-cpp-python's server refuses json_schema but builds its
grammar from a schema sent inside json_object — the Anyscale/Together extension — and servers that do
not know the key ignore it; the schema is in the system prompt too), `json_object` (bare: any JSON
object, for a server that refuses the `schema` key; the schema is in the system prompt only), `prompt`
(no mechanism at all: the schema is in the prompt only).

An OpenAI-style endpoint starts at `json_schema`; when the server refuses it (a 400 — or llama-cpp-python's
500 — naming `response_format` / `json_schema` / …), the call is made again at the next mode down and the
refusal is remembered for that endpoint for the life of the process, so later calls go straight to what
works. A probe (`webapp.providers.probe.probe_structured`) can find and remember the mode up front with
`record_mode`. The judge reads the mode a call used with `mode_for(spec)` after the call and stores it
with its ruling (`JudgeRuling.output_mode`).
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Literal

from webapp.providers.endpoints import effective_url
from webapp.providers.presets import get_preset

if TYPE_CHECKING:
    from webapp.models import JudgeSpec, Participant
    from webapp.providers.base import ProviderRequest

OutputMode = Literal["json_schema", "tool", "json_object+schema", "json_object", "prompt"]
LADDER: tuple[OutputMode, ...] = ("json_schema", "json_object+schema", "json_object", "prompt")
JSON_OBJECT_MODES: frozenset[OutputMode] = frozenset({"json_object+schema", "json_object"})
STEPPABLE: frozenset[OutputMode] = frozenset(LADDER[:-1])  # a refusal of these steps one rung down
# Words a server's refusal of a structured-output request mentions (llama.cpp, vLLM, Ollama, LM Studio,
# OpenAI's "response_format … is not supported with this model").
REFUSAL_WORDS = ("response_format", "response format", "json_schema", "json schema", "json_object",
                 "structured output", "guided_json", "grammar")
# 500 too: llama-cpp-python answers json_schema with one ("Input should be 'text' or 'json_object'").
REFUSAL_STATUSES = frozenset({400, 404, 415, 422, 500, 501})

_lock = threading.Lock()
_best: dict[tuple[str, str | None], OutputMode] = {}  # endpoint → best mode it has not refused


def endpoint_key(provider: str, base_url: str | None) -> tuple[str, str | None]:
    return provider, (base_url or "").rstrip("/") or None


def best_mode(provider: str, base_url: str | None) -> OutputMode:
    """The best mode this endpoint has not refused (in this process)."""
    with _lock:
        return _best.get(endpoint_key(provider, base_url), "json_schema")


def record_refusal(provider: str, base_url: str | None, refused: OutputMode, *,
                   json_object: bool = True) -> OutputMode:
    """Remember that the endpoint refused `refused`; returns the mode to try next. Without JSON mode
    (`json_object=False`, a preset known to lack it) both json_object rungs are skipped."""
    index = LADDER.index(refused) if refused in LADDER else len(LADDER) - 2
    following = [m for m in LADDER[index + 1:] if json_object or m not in JSON_OBJECT_MODES]
    next_mode: OutputMode = following[0] if following else "prompt"
    key = endpoint_key(provider, base_url)
    with _lock:
        current = _best.get(key, "json_schema")
        if LADDER.index(next_mode) > LADDER.index(current):
            _best[key] = next_mode
        return _best[key]


def record_mode(provider: str, base_url: str | None, mode: OutputMode) -> None:
    """Remember the best mode a probe found the endpoint to accept (up or down: a server upgraded in
    place may accept more than it refused before), so later calls start there."""
    if mode not in LADDER:
        raise ValueError(f"not a mode of the ladder: {mode}")
    with _lock:
        _best[endpoint_key(provider, base_url)] = mode


def forget_endpoint(provider: str, base_url: str | None) -> None:
    """Forget what one endpoint refused (a probe starts again from the top)."""
    with _lock:
        _best.pop(endpoint_key(provider, base_url), None)


def forget_refusals() -> None:
    """Forget every remembered refusal (tests; a server that was upgraded in place)."""
    with _lock:
        _best.clear()


def is_refusal(status: int | None, message: str) -> bool:
    """Whether an error answer is a server refusing the structured-output request (not the prompt)."""
    if status not in REFUSAL_STATUSES:
        return False
    text = message.lower()
    return any(word in text for word in REFUSAL_WORDS)


def mode_for(spec: Participant | JudgeSpec) -> OutputMode:
    """The mode a structured request to this spec's endpoint is asked in now (after any refusal)."""
    if spec.provider == "demo":
        return "json_schema"  # the demo model writes exactly the fields of the schema
    if spec.provider == "anthropic":
        return "tool"
    mode = best_mode(spec.provider, effective_url(spec))
    preset = get_preset(spec.preset) if spec.provider == "compatible" else None
    if mode in JSON_OBJECT_MODES and preset is not None and not preset.supports_json_mode:
        return "prompt"
    return mode


# Widest integer range spelled out as an enum for a grammar (a 0–100 score is 101 literals).
ENUM_RANGE_MAX = 201
# Longest free text a grammar lets through, in characters: a criterion's one-line note (the verdict keeps
# 300 of it), any other text (a reasoning paragraph). With 15 notes the verdict still fits 1,500 tokens.
# Not more: llama-cpp-python writes a length bound as nested optional rules, and llama.cpp's grammar
# parser crashed the server at 1,200 (800 parsed; checked on 0.3.36).
NOTE_CHARS = 200
TEXT_CHARS = 600


def grammar_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every bounded integer (`minimum`/`maximum`, a small range) spelled out as an enum,
    and every free string between one character and a length that keeps the answer whole.

    llama-cpp-python's JSON-schema-to-grammar conversion ignores `minimum`/`maximum`, so a grammar built
    from the plain schema lets a small model write a score of 200 or 10**15 — and the repair request
    gets the same grammar and the same mistake. An empty "reasoning" passed the grammar but not the
    verdict; a "note" that never closed (Gemma wrote the transcript into it) ran into the token limit
    and left no JSON at all. An enum of the allowed values, `minLength` and `maxLength` are grammar it
    honours. Sent only inside `json_object` (OpenAI's strict json_schema limits enum sizes and string
    keywords, and bounds numbers itself)."""
    def walk(node: Any, name: str = "") -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: ({prop: walk(sub, prop) for prop, sub in value.items()}
                     if key == "properties" and isinstance(value, dict) else walk(value))
               for key, value in node.items()}
        low, high = out.get("minimum"), out.get("maximum")
        if (out.get("type") == "integer" and "enum" not in out and isinstance(low, int | float)
                and isinstance(high, int | float) and 0 <= high - low < ENUM_RANGE_MAX):
            out["enum"] = list(range(int(low), int(high) + 1))
            out.pop("minimum"), out.pop("maximum")
        if out.get("type") == "string" and "enum" not in out and "const" not in out:
            out.setdefault("minLength", 1)  # an empty reasoning or note is refused after the reply
            out.setdefault("maxLength", NOTE_CHARS if name == "note" else TEXT_CHARS)
        return out
    result: dict[str, Any] = walk(schema)
    return result


def schema_instructions(request: ProviderRequest) -> str:
    """The schema spelled out for the system prompt, when no mechanism enforces it."""
    if request.json_schema is None:
        return ""
    schema = json.dumps(request.json_schema, separators=(",", ":"))
    return ("Reply with a single JSON object and nothing else (no code fence, no prose). It must match this "
            f"JSON schema ({request.schema_name}):\n{schema}")


def with_schema_in_prompt(request: ProviderRequest) -> ProviderRequest:
    """The request with its schema written into the system prompt (both json_object modes and prompt
    mode: a server that ignores `response_format.schema` still shows the model the shape)."""
    extra = schema_instructions(request)
    if not extra:
        return request
    system = f"{request.system}\n\n{extra}" if request.system else extra
    return request.model_copy(update={"system": system})


def tool_for(request: ProviderRequest) -> dict[str, Any]:
    """The Anthropic tool whose input is the answer (forced with `tool_choice`)."""
    assert request.json_schema is not None
    description = str(request.json_schema.get("description") or "Give the answer.")
    return {"name": request.schema_name, "description": f"Record the answer. {description}",
            "input_schema": request.json_schema}
