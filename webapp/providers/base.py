"""The provider protocol: a request goes in, an async stream of text deltas comes out, closed by a
`Completion` carrying usage and finish reason. Failures are raised as `ProviderError` with a kind.

Every adapter maps its SDK's errors to `ProviderError` in one place (its `map_error`), so the
engine only ever reasons about *retryable* versus *fatal*.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from webapp.models import Usage


class Message(BaseModel):
    """One chat message; the system prompt travels separately in `ProviderRequest.system`."""

    role: Literal["user", "assistant"]
    content: str


class ProviderRequest(BaseModel):
    """What the engine asks of a model for one call."""

    model: str
    system: str = ""
    messages: list[Message]
    max_tokens: int = 1024
    temperature: float | None = None
    json_mode: bool = False
    # The answer's JSON schema (strict: every property required, no others) and its name: asked for
    # through the provider's structured-output mechanism (OpenAI/compatible `response_format`
    # json_schema, an Anthropic forced tool). Implies `json_mode`.
    json_schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    # What the call is for: a debate turn, a verdict, a round check, a summary, … Real providers
    # ignore it; the demo provider uses it (with `context`) to write fitting offline text.
    purpose: str = "turn"
    context: dict[str, Any] = Field(default_factory=dict)
    connect_timeout: float = 10.0
    first_token_timeout: float = 60.0


@dataclass(frozen=True)
class TextDelta:
    """A piece of streamed text."""

    text: str


@dataclass(frozen=True)
class Completion:
    """The end of a successful stream."""

    usage: Usage
    finish_reason: str | None = None
    request_id: str | None = None


StreamItem = TextDelta | Completion


class ErrorKind(StrEnum):
    """Retryable errors may succeed if asked again; fatal ones will not until something changes."""

    RETRYABLE = "retryable"
    FATAL = "fatal"


@dataclass
class ProviderError(Exception):
    """A provider failure, carrying the provider's own message."""

    kind: ErrorKind
    provider: str
    message: str
    status: int | None = None
    request_id: str | None = None
    retry_after: float | None = None
    reason: str = "error"  # short machine tag: rate_limit, overloaded, server, timeout, cut_stream, auth, …
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(str(self))

    @property
    def retryable(self) -> bool:
        return self.kind is ErrorKind.RETRYABLE

    def __str__(self) -> str:
        parts = [f"{self.provider}: {self.message}"]
        if self.status is not None:
            parts.append(f"(HTTP {self.status})")
        if self.request_id:
            parts.append(f"[request {self.request_id}]")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "provider": self.provider,
            "message": self.message,
            "status": self.status,
            "request_id": self.request_id,
            "retry_after": self.retry_after,
            "reason": self.reason,
        }


@runtime_checkable
class Provider(Protocol):
    """Anything that can stream a completion."""

    name: str

    def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        """Yield `TextDelta`s, then exactly one `Completion`; raise `ProviderError` on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def estimate_tokens(text: str) -> int:
    """A local token estimate (~4 characters per token) for budgeting and servers without usage."""
    return max(1, (len(text) + 3) // 4) if text else 0


def estimate_request_tokens(request: ProviderRequest) -> int:
    """Estimated input tokens of a request, including a small per-message overhead."""
    total = estimate_tokens(request.system) + 4
    for message in request.messages:
        total += estimate_tokens(message.content) + 4
    return total
