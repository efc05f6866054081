"""OpenAI chat-completions adapter (also the base of every OpenAI-compatible server).

Streams with `stream_options.include_usage`; a server that sends no usage chunk gets an estimate
(marked `estimated`), while a stream that ends without any finish reason is a cut stream and
retryable. `map_error` is the one place OpenAI SDK and transport errors become `ProviderError`s;
what it shares with the Anthropic adapter lives in `webapp.providers.sdk`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any

import httpx2

from webapp.models import Usage
from webapp.providers import structured
from webapp.providers.base import (
    Completion,
    ProviderError,
    ProviderRequest,
    StreamItem,
    TextDelta,
    estimate_request_tokens,
    estimate_tokens,
)
from webapp.providers.sdk import (
    Call,
    SDKProvider,
    generic_error,
    parse_retry_after,
    provider_message,
    status_error,
    transport_error,
)
from webapp.providers.structured import OutputMode


def map_error(
    exc: BaseException,
    *,
    provider: str = "openai",
    request_id: str | None = None,
    base_url: str | None = None,
) -> ProviderError:
    """Map an OpenAI SDK / httpx2 exception to a `ProviderError`, keeping the server's own message."""
    import openai  # late: loaded already, the client that raised `exc` imported it

    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        error_type = body.get("type") if isinstance(body, Mapping) else None
        return status_error(
            exc.status_code,
            provider_message(body, exc.message),
            provider,
            error_type=error_type if isinstance(error_type, str) else None,
            code=exc.code,
            request_id=exc.request_id or exc.response.headers.get("request-id") or request_id,
            retry_after=parse_retry_after(exc.response.headers),
        )
    if isinstance(exc, openai.APIConnectionError):
        return transport_error(exc, provider, request_id, base_url)
    if isinstance(exc, openai.APIError):  # an error event inside a 200 stream
        message = provider_message(exc.body, exc.message)
        return status_error(200, message, provider, error_type=exc.type, code=exc.code, request_id=request_id)
    return generic_error(exc, provider, request_id, base_url)


def _client(**kwargs: Any) -> Any:
    """An `openai.AsyncOpenAI`. The SDK takes ~0.4 s to import, so it is imported when the first
    provider is made, not when the app starts (a demo-only app never loads it)."""
    import openai  # late: the SDK costs ~0.4 s to import (see above)

    return openai.AsyncOpenAI(**kwargs)


class OpenAIProvider(SDKProvider):
    """Streams chat completions from OpenAI or any server speaking its API."""

    name: str = "openai"
    sdk_client = staticmethod(_client)
    map_error = staticmethod(map_error)
    max_tokens_field: str = "max_completion_tokens"  # OpenAI-compatible servers take `max_tokens`

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        connect_timeout: float = 10.0,
        *,
        json_mode: bool = True,
        usage_in_stream: bool = True,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        super().__init__(api_key, base_url, connect_timeout, http_client)
        self.json_mode = json_mode
        self.usage_in_stream = usage_in_stream

    def output_mode(self, request: ProviderRequest) -> OutputMode | None:
        """How this request's structured answer is asked for now (None: a plain text request)."""
        if request.json_schema is None and not request.json_mode:
            return None
        mode = structured.best_mode(self.name, self.base_url)
        if mode in ("json_schema", "json_object+schema") and request.json_schema is None:
            mode = "json_object"  # JSON mode without a schema
        if mode in structured.JSON_OBJECT_MODES and not self.json_mode:
            mode = "prompt"
        return mode

    def build_params(self, request: ProviderRequest, mode: OutputMode | None = None) -> dict[str, Any]:
        """The keyword arguments for `chat.completions.create`, asking for a structured answer in `mode`
        (by default the best mode this endpoint has not refused)."""
        mode = mode or self.output_mode(request)
        if mode in ("json_object+schema", "json_object", "prompt"):
            request = structured.with_schema_in_prompt(request)
        messages: list[dict[str, str]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        params: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "stream": True,
            self.max_tokens_field: request.max_tokens,
        }
        if self.usage_in_stream:
            params["stream_options"] = {"include_usage": True}
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if mode == "json_schema" and request.json_schema is not None:
            params["response_format"] = {"type": "json_schema", "json_schema": {
                "name": request.schema_name, "schema": request.json_schema, "strict": True}}
        elif mode == "json_object+schema" and request.json_schema is not None:
            # llama-cpp-python (and Anyscale/Together-style servers) build their grammar from this key;
            # servers that do not know it ignore it, and the prompt spells the schema out for them
            params["response_format"] = {"type": "json_object",
                                         "schema": structured.grammar_schema(request.json_schema)}
        elif mode in structured.JSON_OBJECT_MODES:
            params["response_format"] = {"type": "json_object"}
        return params

    async def _open(self, request: ProviderRequest, timeout: httpx2.Timeout) -> Any:
        """Start the stream; a server refusing the structured-output mechanism is asked again one mode
        down (json_schema → json_object+schema → json_object → prompt), and the refusal is remembered for
        this endpoint."""
        import openai  # late: loaded already by `_client`; never at start-up (~0.4 s)

        mode = self.output_mode(request)
        while True:
            try:
                return await self._client.chat.completions.create(**self.build_params(request, mode),
                                                                  timeout=timeout)
            except openai.APIStatusError as exc:
                if mode not in structured.STEPPABLE or not structured.is_refusal(
                        exc.status_code, provider_message(exc.body, exc.message)):
                    raise
                mode = structured.record_refusal(self.name, self.base_url, mode, json_object=self.json_mode)

    async def _read(self, stream: Any, request: ProviderRequest, call: Call) -> AsyncGenerator[StreamItem, None]:
        headers = stream.response.headers
        call.request_id = headers.get("x-request-id") or headers.get("request-id")
        parts: list[str] = []
        finish_reason: str | None = None
        usage: Usage | None = None
        async for chunk in stream:
            call.request_id = call.request_id or getattr(chunk, "id", None)
            if chunk.usage is not None:
                details = chunk.usage.prompt_tokens_details
                usage = Usage(
                    input_tokens=chunk.usage.prompt_tokens or 0,
                    output_tokens=chunk.usage.completion_tokens or 0,
                    cached_tokens=(details.cached_tokens or 0) if details is not None else 0,
                )
            for choice in chunk.choices or []:
                if choice.delta is not None and choice.delta.content:
                    parts.append(choice.delta.content)
                    yield TextDelta(choice.delta.content)
                if choice.finish_reason:
                    finish_reason = choice.finish_reason
        if finish_reason is None:
            raise self.cut_stream("a finish reason", call.request_id)
        if usage is None:
            usage = Usage(
                input_tokens=estimate_request_tokens(request),
                output_tokens=estimate_tokens("".join(parts)),
                estimated=True,
            )
        yield Completion(usage=usage, finish_reason=finish_reason, request_id=call.request_id)
