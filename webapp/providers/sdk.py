"""What the SDK-backed adapters (OpenAI, Anthropic, and every OpenAI-compatible server) share.

`SDKProvider` owns the SDK client and the frame of a streaming call: the per-call timeouts, the
request id, turning any failure into a `ProviderError` (with the key redacted) and closing the
stream. An adapter only says how to open its stream and how to read its events. The helpers below
classify HTTP statuses, error bodies, `Retry-After` headers and transport failures for each
adapter's `map_error`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar

import httpx2

from webapp.providers.base import ErrorKind, ProviderError, ProviderRequest, StreamItem
from webapp.providers.netguard import blocked_cause

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
    import openai  # late: imported when first needed, not at start-up (see `webapp.providers.openai._client`)

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


def generic_error(
    exc: BaseException, provider: str, request_id: str | None, base_url: str | None
) -> ProviderError:
    """A failure that is no SDK error: a raw transport error, a malformed stream, or a bug (fatal)."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, httpx2.TransportError | TimeoutError | ConnectionError):
        return transport_error(exc, provider, request_id, base_url)
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


def redact(error: ProviderError, secret: str | None) -> ProviderError:
    """Remove an API key from an error's message, whatever the server echoed back."""
    if secret and len(secret) >= 6 and secret in error.message:
        error.message = error.message.replace(secret, "***")
        error.args = (str(error),)
    return error


@dataclass
class Call:
    """What one streaming call knows about itself so far (its request id, for error reports)."""

    request_id: str | None = None


class SDKProvider:
    """A provider over a vendor SDK client; subclasses set the client class and the error mapping,
    and implement `_open` (start the stream) and `_read` (its events → text deltas and a completion)."""

    name: str = "sdk"
    sdk_client: ClassVar[Callable[..., Any]]
    map_error: ClassVar[Callable[..., ProviderError]]

    def __init__(self, api_key: str, base_url: str | None = None, connect_timeout: float = 10.0,
                 http_client: httpx2.AsyncClient | None = None) -> None:
        self.base_url = base_url
        timeout = httpx2.Timeout(600.0, connect=connect_timeout)
        self._client = self.sdk_client(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=timeout,
            # The registry always passes a guarded client (`webapp.providers.netguard`): one origin,
            # pinned addresses, no redirects. None (tests of an adapter alone): the SDK's own client.
            **({"http_client": http_client} if http_client is not None else {}),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r})"

    async def _open(self, request: ProviderRequest, timeout: httpx2.Timeout) -> Any:
        raise NotImplementedError

    def _read(self, stream: Any, request: ProviderRequest, call: Call) -> AsyncGenerator[StreamItem, None]:
        raise NotImplementedError

    def cut_stream(self, missing: str, request_id: str | None) -> ProviderError:
        """The retryable error for a stream that ended cleanly but without `missing`."""
        return ProviderError(
            ErrorKind.RETRYABLE,
            self.name,
            f"the stream ended without {missing} (connection cut?)",
            request_id=request_id,
            reason="cut_stream",
        )

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        """Yield text deltas, then one `Completion`; raise `ProviderError` on any failure."""
        call = Call()
        stream: Any = None
        try:
            stream = await self._open(
                request, httpx2.Timeout(request.first_token_timeout, connect=request.connect_timeout)
            )
            async with contextlib.aclosing(self._read(stream, request, call)) as items:
                async for item in items:
                    yield item
        except ProviderError:
            raise
        except Exception as exc:
            blocked = blocked_cause(exc)
            if blocked is not None:  # refused here, before anything was sent: retrying cannot help
                raise ProviderError(ErrorKind.FATAL, self.name, str(blocked), request_id=call.request_id,
                                    reason="config") from exc
            error = self.map_error(exc, provider=self.name, request_id=call.request_id, base_url=self.base_url)
            raise redact(error, self._client.api_key) from exc
        finally:
            if stream is not None:
                with contextlib.suppress(Exception):
                    await stream.close()

    async def aclose(self) -> None:
        """Close the HTTP client and its pooled connections."""
        await self._client.close()
