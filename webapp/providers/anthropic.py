"""Anthropic Messages adapter, streaming raw events from `messages.create(stream=True)`.

Never sends `temperature` (the current API version rejects it). A structured answer (a request with
a JSON schema) is asked for as a forced tool call; its streamed input JSON is the text. Usage comes from `message_start`
and `message_delta`; like OpenAI's `prompt_tokens`, `Usage.input_tokens` counts every input token
(uncached + cache writes + cache reads) and `cached_tokens` the cache reads; `stop_reason` is the
finish reason. A stream that
ends without `message_stop` or without a stop reason is a cut stream and retryable. Anthropic 2.x
raises raw httpx2 errors mid-stream and reports in-stream error events as `APIStatusError` with
status 200; `map_error` handles both.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anthropic
import httpx2

from webapp.models import Usage
from webapp.providers import structured
from webapp.providers.base import Completion, ErrorKind, ProviderError, ProviderRequest, StreamItem, TextDelta
from webapp.providers.sdk import (
    Call,
    SDKProvider,
    generic_error,
    parse_retry_after,
    provider_message,
    status_error,
    transport_error,
)


def map_error(
    exc: BaseException,
    *,
    provider: str = "anthropic",
    request_id: str | None = None,
    base_url: str | None = None,
) -> ProviderError:
    """Map an Anthropic SDK / raw httpx2 exception to a `ProviderError`, keeping the API's own message."""
    if isinstance(exc, anthropic.APIStatusError):
        # In-stream error events arrive with the stream's status (200): classified by their type alone.
        return status_error(
            exc.status_code,
            exc.api_message or provider_message(exc.body, exc.message),
            provider,
            error_type=exc.type,
            code=exc.error_code,
            request_id=exc.request_id or request_id,
            retry_after=parse_retry_after(exc.response.headers) if exc.status_code != 200 else None,
        )
    if isinstance(exc, anthropic.APIConnectionError):
        return transport_error(exc, provider, request_id, base_url)
    if isinstance(exc, anthropic.APIError):
        return ProviderError(
            ErrorKind.FATAL, provider, provider_message(exc.body, exc.message), request_id=request_id
        )
    return generic_error(exc, provider, request_id, base_url)


def _update_counts(counts: dict[str, int], usage: Any) -> None:
    for key in counts:
        value = getattr(usage, key, None)
        if value is not None:
            counts[key] = value


class AnthropicProvider(SDKProvider):
    """Streams messages from the Anthropic API (or a server speaking its protocol)."""

    name: str = "anthropic"
    sdk_client = anthropic.AsyncAnthropic
    map_error = staticmethod(map_error)

    def build_params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments for `messages.create` (no temperature: the API rejects it)."""
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "stream": True,
        }
        if request.json_schema is not None:
            # The answer as a forced tool call: its input schema is the answer's schema, and the
            # streamed `input_json_delta`s are the answer's text.
            tool = structured.tool_for(request)
            params["tools"] = [tool]
            params["tool_choice"] = {"type": "tool", "name": tool["name"]}
        elif request.json_mode:
            request = structured.with_schema_in_prompt(request)
        if request.system:
            params["system"] = request.system
        return params

    async def _open(self, request: ProviderRequest, timeout: httpx2.Timeout) -> Any:
        return await self._client.messages.create(**self.build_params(request), timeout=timeout)

    async def _read(self, stream: Any, request: ProviderRequest, call: Call) -> AsyncGenerator[StreamItem, None]:
        call.request_id = stream.response.headers.get("request-id")
        counts = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        output_tokens = 0
        stop_reason: str | None = None
        stopped = False
        async for event in stream:
            if event.type == "message_start":
                _update_counts(counts, event.message.usage)
                output_tokens = event.message.usage.output_tokens or 0
            elif event.type == "content_block_delta":
                if event.delta.type == "text_delta" and event.delta.text:
                    yield TextDelta(event.delta.text)
                elif event.delta.type == "input_json_delta" and event.delta.partial_json:
                    yield TextDelta(event.delta.partial_json)  # a forced tool's input: the answer
            elif event.type == "message_delta":
                stop_reason = event.delta.stop_reason or stop_reason
                output_tokens = event.usage.output_tokens or output_tokens
                _update_counts(counts, event.usage)  # cumulative values, when present
            elif event.type == "message_stop":
                stopped = True
        if not stopped or stop_reason is None:
            raise self.cut_stream("message_stop" if not stopped else "a stop reason", call.request_id)
        usage = Usage(
            input_tokens=sum(counts.values()),
            output_tokens=output_tokens,
            cached_tokens=counts["cache_read_input_tokens"],
        )
        yield Completion(usage=usage, finish_reason=stop_reason, request_id=call.request_id)
