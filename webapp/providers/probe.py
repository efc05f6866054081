"""Whether an OpenAI-compatible server answers right now: one `GET {base_url}/models`, short timeout;
and which structured-output mode it accepts: one tiny structured request (`probe_structured`).

Settings runs it on demand for the local presets (Ollama, vLLM, llama.cpp, LM Studio), from the server
(the browser could not reach `localhost` of the machine Rostrum runs on): a local server is never
assumed ready just because it needs no key. No key is sent: local servers take none, and the answer
only says whether something listens and which models it serves.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime

from pydantic import BaseModel

from webapp.models import utcnow
from webapp.providers import structured
from webapp.providers.base import Message, ProviderError, ProviderRequest, TextDelta
from webapp.providers.endpoints import EndpointPolicy, configured_policy
from webapp.providers.presets import Preset
from webapp.providers.structured import OutputMode
from webapp.wording import counted

CHECK_TIMEOUT_S = 3.0


class ServerCheck(BaseModel):
    """The result of one check: whether the server answered, what it said, and when it was asked."""

    url: str
    answers: bool
    models: list[str] = []
    status: int | None = None
    problem: str = ""
    checked_at: datetime

    def describe(self) -> str:
        """One sentence for the page."""
        if not self.answers:
            return f"Does not answer at {self.url}: {self.problem}. Start the server, or check its address."
        if self.problem:
            said = f"HTTP {self.status}: " if self.status != 200 else ""
            return f"Answers at {self.url}, but its /models answer is not usable ({said}{self.problem})"
        count = len(self.models)
        shown = ", ".join(self.models[:5]) + (" …" if count > 5 else "")
        return (f"Answers at {self.url}: {counted(count, 'model')}"
                + (f" ({shown})" if count else " (pull or load one before debating)"))


async def check_server(base_url: str, timeout: float = CHECK_TIMEOUT_S,
                       policy: EndpointPolicy | None = None) -> ServerCheck:
    """Ask `base_url`/models once, if `policy` lets this server ask that address (the guard every debate
    call goes through); never raises for a server that is down, slow, odd or not to be asked."""
    # late: loaded on the first check, not at start-up: the settings page imports this module, and httpx2 is
    # most of Rostrum's own import time before the first page (bench/README.md, "Start-up").
    import httpx2

    url = base_url.rstrip("/")
    route, refused = (policy or configured_policy()).url_rule(url)
    if route is None:
        return ServerCheck(url=url, answers=False, problem=f"not asked: {refused}", checked_at=utcnow())
    from webapp.providers.netguard import BlockedAddress, guarded_client  # late: httpcore2, loaded when first asked

    try:
        async with guarded_client(url, route.allow_private, timeout=httpx2.Timeout(timeout)) as client:
            response = await client.get(f"{url}/models")
    except BlockedAddress as exc:
        return ServerCheck(url=url, answers=False, problem=f"not asked: {exc}", checked_at=utcnow())
    except httpx2.TimeoutException:
        return ServerCheck(url=url, answers=False, problem=f"no answer within {timeout:g} s", checked_at=utcnow())
    except (httpx2.HTTPError, OSError) as exc:
        reason = type(exc).__name__ if not str(exc) else f"{type(exc).__name__}: {exc}"
        return ServerCheck(url=url, answers=False, problem=f"connection failed ({reason})"[:300],
                           checked_at=utcnow())
    if response.status_code != 200:
        return ServerCheck(url=url, answers=True, status=response.status_code,
                           problem=response.text[:200].strip() or response.reason_phrase, checked_at=utcnow())
    try:
        data = response.json().get("data") or []
        models = [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")]
    except (ValueError, AttributeError):
        return ServerCheck(url=url, answers=True, status=200, problem="the answer is not an OpenAI model list",
                           checked_at=utcnow())
    return ServerCheck(url=url, answers=True, status=200, models=models, checked_at=utcnow())


# --- structured output ------------------------------------------------------------------------------
# Which structured-output mechanism a server accepts is found by one tiny request walking the ladder of
# `webapp.providers.structured` (json_schema → json_object+schema → json_object → prompt): the same
# refusal handling as a debate's calls, so what the probe finds is remembered for the endpoint the same
# way (for the life of the process) and later verdicts go straight to it.

PROBE_TIMEOUT_S = 30.0  # a local server may load the model on its first request
PROBE_MAX_TOKENS = 32  # '{"ok": true}' is about six tokens; room for a grammar's whitespace
PROBE_SCHEMA: dict[str, object] = {
    "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False,
}
MODE_WORDS: dict[OutputMode, str] = {
    "json_schema": "json_schema (the server builds a grammar from the schema)",
    "json_object+schema": "json_object with the schema attached (json_schema refused)",
    "json_object": "json_object only, the schema in the prompt (json_schema and a schema in json_object refused)",
    "prompt": "none: the schema goes in the prompt only (no structured-output mechanism accepted)",
}


class StructuredCheck(BaseModel):
    """Which structured-output mode a server accepted for a tiny probe, and whether the answer kept to
    the probe's schema (a server may accept a mechanism and still ignore it)."""

    url: str
    model: str
    mode: OutputMode | None = None  # None: the probe could not finish (see `problem`)
    refused: list[OutputMode] = []
    follows_schema: bool | None = None
    problem: str = ""
    checked_at: datetime

    def describe(self) -> str:
        """One sentence for the page or the terminal."""
        if self.mode is None:
            return f"Structured output not known: the probe to {self.model} failed ({self.problem})"
        kept = ("; the probe's answer kept to its schema" if self.follows_schema
                else "; the probe's answer did not keep to its schema" if self.follows_schema is False else "")
        return f"Structured output: {MODE_WORDS.get(self.mode, str(self.mode))}{kept} (model {self.model})"


def follows_probe_schema(text: str) -> bool:
    """Whether a probe's answer is exactly an object `{"ok": <boolean>}`."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and set(value) == {"ok"} and isinstance(value["ok"], bool)


async def probe_structured(base_url: str, model: str, *, preset: Preset | None = None,
                           timeout: float = PROBE_TIMEOUT_S,
                           queue: Callable[[], AbstractAsyncContextManager[None]] | None = None,
                           policy: EndpointPolicy | None = None) -> StructuredCheck:
    """Ask `model` at `base_url` for a tiny structured answer, from the top of the ladder; remember the mode
    it ended at for the endpoint (`structured.record_mode`). Never raises for a server that fails: the
    previous memory is kept and `problem` says what happened. `queue` is the slot to hold while asking
    (a single-request server must not have a running debate's stream interrupted by the probe)."""
    from webapp.providers.compatible import CompatibleProvider  # late: the OpenAI adapter and httpx2 (see check_server)
    from webapp.providers.netguard import guarded_client  # late: httpcore2, loaded on the first probe

    url = base_url.rstrip("/")
    route, refused_by = (policy or configured_policy()).url_rule(url)
    if route is None:  # the same guard as a debate's calls: no key, and only addresses it allows
        return StructuredCheck(url=url, model=model, problem=f"not asked: {refused_by}", checked_at=utcnow())
    import httpx2  # late: loaded on the first probe, not at start-up (see check_server)

    client = guarded_client(url, route.allow_private, timeout=httpx2.Timeout(timeout, connect=CHECK_TIMEOUT_S))
    provider = CompatibleProvider(url, connect_timeout=CHECK_TIMEOUT_S, preset=preset, http_client=client)
    request = ProviderRequest(
        model=model, messages=[Message(role="user", content='Reply with the JSON object {"ok": true}.')],
        max_tokens=PROBE_MAX_TOKENS, temperature=0, json_schema=PROBE_SCHEMA, schema_name="probe",
        purpose="probe", connect_timeout=CHECK_TIMEOUT_S, first_token_timeout=timeout)
    previous = structured.best_mode(provider.name, provider.base_url)
    try:
        async with queue() if queue is not None else contextlib.nullcontext():
            structured.forget_endpoint(provider.name, provider.base_url)  # from the top: it may have been upgraded
            parts = [item.text async for item in provider.stream(request) if isinstance(item, TextDelta)]
    except ProviderError as exc:
        structured.record_mode(provider.name, provider.base_url, previous)
        return StructuredCheck(url=url, model=model, problem=exc.message[:300], checked_at=utcnow())
    except BaseException:  # cancelled (the page gave up waiting): what was known stays known
        structured.record_mode(provider.name, provider.base_url, previous)
        raise
    finally:
        await provider.aclose()
    mode = provider.output_mode(request) or "prompt"
    structured.record_mode(provider.name, provider.base_url, mode)
    skipped = structured.JSON_OBJECT_MODES if not provider.json_mode else frozenset()
    refused = [m for m in structured.LADDER[:structured.LADDER.index(mode)] if m not in skipped]
    return StructuredCheck(url=url, model=model, mode=mode, refused=refused,
                           follows_schema=follows_probe_schema("".join(parts)), checked_at=utcnow())
