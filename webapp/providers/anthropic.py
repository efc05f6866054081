"""Anthropic Messages adapter, streaming raw events from `messages.create(stream=True)`.

Never sends `temperature` (the current API version rejects it). Usage comes from `message_start`
and `message_delta`; like OpenAI's `prompt_tokens`, `Usage.input_tokens` counts every input token
(uncached + cache writes + cache reads) and `cached_tokens` the cache reads; `stop_reason` is the
finish reason. A stream that
ends without `message_stop` or without a stop reason is a cut stream and retryable. Anthropic 2.x
raises raw httpx2 errors mid-stream and reports in-stream error events as `APIStatusError` with
status 200; `map_error` handles both.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anthropic
import httpx2

from webapp.models import Usage
from webapp.providers.base import Completion, ErrorKind, ProviderError, ProviderRequest, StreamItem, TextDelta
from webapp.providers.openai import (
    parse_retry_after,
    provider_message,
    redact,
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
    if isinstance(exc, ProviderError):
        return exc
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
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError | TimeoutError | ConnectionError):
        return transport_error(exc, provider, request_id, base_url)
    if isinstance(exc, json.JSONDecodeError | httpx2.DecodingError | httpx2.StreamError):
        return ProviderError(
            ErrorKind.RETRYABLE,
            provider,
            f"malformed stream: {exc}",
            request_id=request_id,
            reason="bad_stream",
        )
    if isinstance(exc, anthropic.APIError):
        return ProviderError(
            ErrorKind.FATAL, provider, provider_message(exc.body, exc.message), request_id=request_id
        )
    return ProviderError(
        ErrorKind.FATAL, provider, f"{type(exc).__name__}: {exc}", request_id=request_id, reason="unknown"
    )


def _update_counts(counts: dict[str, int], usage: Any) -> None:
    for key in counts:
        value = getattr(usage, key, None)
        if value is not None:
            counts[key] = value


class AnthropicProvider:
    """Streams messages from the Anthropic API (or a server speaking its protocol)."""

    name: str = "anthropic"

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        connect_timeout: float = 10.0,
        *,
        name: str | None = None,
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        if name:
            self.name = name
        self.base_url = base_url
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=httpx2.Timeout(600.0, connect=connect_timeout),
            default_headers=dict(default_headers or {}),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r})"

    def build_params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments for `messages.create` (no temperature: the API rejects it)."""
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "stream": True,
        }
        if request.system:
            params["system"] = request.system
        return params

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        """Yield text deltas, then one `Completion`; raise `ProviderError` on any failure."""
        request_id: str | None = None
        stream: Any = None
        try:
            stream = await self._client.messages.create(
                **self.build_params(request),
                timeout=httpx2.Timeout(request.first_token_timeout, connect=request.connect_timeout),
            )
            request_id = stream.response.headers.get("request-id")
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
                elif event.type == "message_delta":
                    stop_reason = event.delta.stop_reason or stop_reason
                    output_tokens = event.usage.output_tokens or output_tokens
                    _update_counts(counts, event.usage)  # cumulative values, when present
                elif event.type == "message_stop":
                    stopped = True
            if not stopped or stop_reason is None:
                missing = "message_stop" if not stopped else "a stop reason"
                raise ProviderError(
                    ErrorKind.RETRYABLE,
                    self.name,
                    f"the stream ended without {missing} (connection cut?)",
                    request_id=request_id,
                    reason="cut_stream",
                )
            usage = Usage(
                input_tokens=sum(counts.values()),
                output_tokens=output_tokens,
                cached_tokens=counts["cache_read_input_tokens"],
            )
            yield Completion(usage=usage, finish_reason=stop_reason, request_id=request_id)
        except ProviderError:
            raise
        except Exception as exc:
            error = map_error(exc, provider=self.name, request_id=request_id, base_url=self.base_url)
            raise redact(error, self._client.api_key) from exc
        finally:
            if stream is not None:
                with contextlib.suppress(Exception):
                    await stream.close()

    async def aclose(self) -> None:
        """Close the HTTP client and its pooled connections."""
        await self._client.close()
