"""OpenAI chat-completions adapter (also the base of every OpenAI-compatible server).

Streams with `stream_options.include_usage`; a server that sends no usage chunk gets an estimate
(marked `estimated`), while a stream that ends without any finish reason is a cut stream and
retryable. `map_error` is the one place SDK and transport errors become `ProviderError`s; the small
helpers `parse_retry_after` and `provider_message` are shared with the Anthropic adapter.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx2
import openai

from webapp.models import Usage
from webapp.providers.base import (
    Completion,
    ErrorKind,
    ProviderError,
    ProviderRequest,
    StreamItem,
    TextDelta,
    estimate_request_tokens,
    estimate_tokens,
)

MESSAGE_MAX_CHARS = 500


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `retry-after` (seconds or an HTTP date); None if absent."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def provider_message(body: object, fallback: str) -> str:
    """The provider's own error text from a response body (`error.message`, `message`, `detail`, …)."""
    found: str | None = None
    if isinstance(body, Mapping):
        for key in ("message", "detail", "error_description"):
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                found = value
                break
        else:
            error = body.get("error")
            if isinstance(error, str) and error.strip():
                found = error
            elif isinstance(error, Mapping):
                found = provider_message(error, "") or None
    elif isinstance(body, str) and body.strip():
        found = body
    text = (found or fallback).strip()
    return text if len(text) <= MESSAGE_MAX_CHARS else text[: MESSAGE_MAX_CHARS - 1] + "…"


def _transport_message(exc: BaseException, base_url: str | None) -> str:
    # The SDKs wrap the transport error ("Connection error."); the wrapped one says what happened.
    wrapped = exc.__cause__ if type(exc).__module__.startswith(("openai", "anthropic")) else None
    source = wrapped or exc
    detail = str(source).strip() or type(source).__name__
    where = f" to {base_url}" if base_url else ""
    return f"connection{where} failed: {detail}"


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException | TimeoutError)


def transport_error(
    exc: BaseException, provider: str, request_id: str | None, base_url: str | None
) -> ProviderError:
    """A retryable error for a dropped connection or a timeout (raw httpx2 or wrapped by an SDK)."""
    if _is_timeout(exc) or _is_timeout(exc.__cause__ or exc):
        message = "timed out waiting for the server" + (f" at {base_url}" if base_url else "")
        return ProviderError(ErrorKind.RETRYABLE, provider, message, request_id=request_id, reason="timeout")
    return ProviderError(
        ErrorKind.RETRYABLE,
        provider,
        _transport_message(exc, base_url),
        request_id=request_id,
        reason="connection",
    )


_STATUS_REASONS: dict[int, tuple[ErrorKind, str]] = {
    529: (ErrorKind.RETRYABLE, "overloaded"),
    503: (ErrorKind.RETRYABLE, "overloaded"),
    429: (ErrorKind.RETRYABLE, "rate_limit"),
    408: (ErrorKind.RETRYABLE, "timeout"),
    409: (ErrorKind.RETRYABLE, "server"),
    401: (ErrorKind.FATAL, "auth"),
    403: (ErrorKind.FATAL, "auth"),
    404: (ErrorKind.FATAL, "not_found"),
    400: (ErrorKind.FATAL, "bad_request"),
    413: (ErrorKind.FATAL, "bad_request"),
    422: (ErrorKind.FATAL, "bad_request"),
    402: (ErrorKind.FATAL, "quota"),
}
# Error types / codes (Anthropic `error.type`, OpenAI `type` / `code`), checked in this order.
_TAG_REASONS: list[tuple[str, ErrorKind, str]] = [
    ("overloaded", ErrorKind.RETRYABLE, "overloaded"),
    ("rate_limit", ErrorKind.RETRYABLE, "rate_limit"),
    ("timeout", ErrorKind.RETRYABLE, "timeout"),
    ("authentication", ErrorKind.FATAL, "auth"),
    ("permission", ErrorKind.FATAL, "auth"),
    ("not_found", ErrorKind.FATAL, "not_found"),
    ("invalid_request", ErrorKind.FATAL, "bad_request"),
    ("server_error", ErrorKind.RETRYABLE, "server"),
    ("api_error", ErrorKind.RETRYABLE, "server"),
]


def _by_status(status: int) -> tuple[ErrorKind, str]:
    if status in _STATUS_REASONS:
        return _STATUS_REASONS[status]
    return (ErrorKind.RETRYABLE, "server") if status >= 500 else (ErrorKind.FATAL, "client_error")


def _by_tags(tags: str) -> tuple[ErrorKind, str] | None:
    return next(((kind, reason) for tag, kind, reason in _TAG_REASONS if tag in tags), None)


def status_error(
    status: int,
    message: str,
    provider: str,
    *,
    error_type: str | None = None,
    code: str | None = None,
    request_id: str | None = None,
    retry_after: float | None = None,
) -> ProviderError:
    """Classify an HTTP status (plus the body's error type / code) as retryable or fatal.

    The status decides, except that a quota / billing error is fatal even as a 429, a 5xx naming
    an overload is `overloaded`, and an error event inside a stream (status 200) goes by its type.
    """
    tags = f"{error_type or ''} {code or ''}".lower()
    if "insufficient_quota" in tags or "billing" in tags:
        kind, reason = ErrorKind.FATAL, "quota"
    elif status == 200:
        kind, reason = _by_tags(tags) or (ErrorKind.RETRYABLE, "server")
    else:
        kind, reason = _by_status(status)
        if status >= 500 and "overloaded" in tags:
            reason = "overloaded"
    return ProviderError(
        kind,
        provider,
        message,
        status=status if status != 200 else None,
        request_id=request_id,
        retry_after=retry_after,
        reason=reason,
        extra={k: v for k, v in (("type", error_type), ("code", code)) if v},
    )


def map_error(
    exc: BaseException,
    *,
    provider: str = "openai",
    request_id: str | None = None,
    base_url: str | None = None,
) -> ProviderError:
    """Map an OpenAI SDK / httpx2 exception to a `ProviderError`, keeping the server's own message."""
    if isinstance(exc, ProviderError):
        return exc
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
    if isinstance(exc, openai.APIConnectionError | httpx2.TransportError | TimeoutError | ConnectionError):
        return transport_error(exc, provider, request_id, base_url)
    if isinstance(exc, openai.APIError):  # an error event inside a 200 stream
        message = provider_message(exc.body, exc.message)
        return status_error(200, message, provider, error_type=exc.type, code=exc.code, request_id=request_id)
    if isinstance(exc, json.JSONDecodeError | httpx2.DecodingError | httpx2.StreamError):
        return ProviderError(
            ErrorKind.RETRYABLE,
            provider,
            f"malformed stream: {exc}",
            request_id=request_id,
            reason="bad_stream",
        )
    return ProviderError(
        ErrorKind.FATAL, provider, f"{type(exc).__name__}: {exc}", request_id=request_id, reason="unknown"
    )


def redact(error: ProviderError, secret: str | None) -> ProviderError:
    """Remove an API key from an error's message, whatever the server echoed back."""
    if secret and len(secret) >= 6 and secret in error.message:
        error.message = error.message.replace(secret, "***")
        error.args = (str(error),)
    return error


class OpenAIProvider:
    """Streams chat completions from OpenAI or any server speaking its API."""

    name: str = "openai"

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        connect_timeout: float = 10.0,
        *,
        name: str | None = None,
        json_mode: bool = True,
        usage_in_stream: bool = True,
        max_tokens_field: str = "max_completion_tokens",
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        if name:
            self.name = name
        self.base_url = base_url
        self.json_mode = json_mode
        self.usage_in_stream = usage_in_stream
        self.max_tokens_field = max_tokens_field
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=httpx2.Timeout(600.0, connect=connect_timeout),
            default_headers=dict(default_headers or {}),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r})"

    def build_params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments for `chat.completions.create`."""
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
        if request.json_mode and self.json_mode:
            params["response_format"] = {"type": "json_object"}
        return params

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        """Yield text deltas, then one `Completion`; raise `ProviderError` on any failure."""
        request_id: str | None = None
        stream: Any = None
        try:
            stream = await self._client.chat.completions.create(
                **self.build_params(request),
                timeout=httpx2.Timeout(request.first_token_timeout, connect=request.connect_timeout),
            )
            headers = stream.response.headers
            request_id = headers.get("x-request-id") or headers.get("request-id")
            parts: list[str] = []
            finish_reason: str | None = None
            usage: Usage | None = None
            async for chunk in stream:
                request_id = request_id or getattr(chunk, "id", None)
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
                raise ProviderError(
                    ErrorKind.RETRYABLE,
                    self.name,
                    "the stream ended without a finish reason (connection cut?)",
                    request_id=request_id,
                    reason="cut_stream",
                )
            if usage is None:
                usage = Usage(
                    input_tokens=estimate_request_tokens(request),
                    output_tokens=estimate_tokens("".join(parts)),
                    estimated=True,
                )
            yield Completion(usage=usage, finish_reason=finish_reason, request_id=request_id)
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
