"""How many calls may run at once against one endpoint (provider + base URL).

Many local servers serve one request at a time; llama-cpp-python even interrupts the running stream
when a new request arrives. A parallel phase (openings, preparation, the collaborative format's
clarification questions, a judge panel) must then queue on that endpoint instead of colliding.

The limit of an endpoint is, in this order: the smallest `concurrency` set on any participant or
judge of the debate that uses it; else 1 for a local server (a local preset such as Ollama, vLLM,
llama.cpp or LM Studio, or a compatible server on this machine or network); else unlimited (hosted
APIs and the offline demo). One `EndpointLimiter` is shared by every debate of the engine, so two
debates on the same local server queue too. Unlimited calls never touch it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from webapp.engine.budget import is_local_server
from webapp.models import DebateConfig, JudgeSpec, Participant
from webapp.providers.registry import base_url_for

Spec = Participant | JudgeSpec


def endpoint_key(spec: Spec) -> str:
    """The endpoint a spec's calls go to: its provider and the URL it talks to."""
    url = (base_url_for(spec) or "").rstrip("/").lower()
    return f"{spec.provider}|{url}"


def default_concurrency(spec: Spec) -> int | None:
    """The limit when nothing is set: 1 for a local server, None (unlimited) otherwise."""
    return 1 if is_local_server(spec) else None


def all_specs(config: DebateConfig) -> Iterable[Spec]:
    yield from config.participants
    yield from config.judge.judges
    if config.judge.fallback is not None:
        yield config.judge.fallback


def _smaller(a: int | None, b: int | None) -> int | None:
    """The stricter of two limits (None: unlimited)."""
    if a is None:
        return b
    return a if b is None else min(a, b)


def endpoint_limits(config: DebateConfig) -> dict[str, int | None]:
    """endpoint key -> calls allowed at once (None: unlimited) for every endpoint the debate uses: the
    smallest limit set on a spec using it, else the strictest default of those specs."""
    explicit: dict[str, int | None] = {}
    default: dict[str, int | None] = {}
    for spec in all_specs(config):
        key = endpoint_key(spec)
        if spec.concurrency is not None:
            explicit[key] = _smaller(explicit.get(key), spec.concurrency)
        value = default_concurrency(spec)
        default[key] = _smaller(default[key], value) if key in default else value
    return {key: explicit.get(key, value) if key in explicit else value for key, value in default.items()}


def limit_for(spec: Spec, config: DebateConfig | None = None) -> int | None:
    """The limit a call for `spec` runs under within `config` (the spec alone when it is not in it)."""
    key = endpoint_key(spec)
    if config is not None:
        limits = endpoint_limits(config)
        if key in limits:
            return limits[key]
    return spec.concurrency if spec.concurrency is not None else default_concurrency(spec)


@dataclass
class _Endpoint:
    running: int = 0
    waiting: deque[tuple[int, asyncio.Future[None]]] = field(default_factory=deque)


class EndpointLimiter:
    """Per-endpoint slots, handed out first come, first served. A call with limit N starts when fewer
    than N calls run against its endpoint and nobody queued before it still waits."""

    def __init__(self) -> None:
        self._endpoints: dict[str, _Endpoint] = {}

    def running(self, key: str) -> int:
        endpoint = self._endpoints.get(key)
        return endpoint.running if endpoint else 0

    def waiting(self, key: str) -> int:
        endpoint = self._endpoints.get(key)
        return len(endpoint.waiting) if endpoint else 0

    @asynccontextmanager
    async def slot(self, key: str, limit: int | None,
                   on_wait: Callable[[], None] | None = None) -> AsyncIterator[None]:
        """Hold one of the endpoint's slots for the body; `on_wait` is called (once, synchronously)
        when the call has to queue first. Unlimited (`limit` None) enters at once and counts nothing."""
        if limit is None:
            yield
            return
        await self._acquire(key, max(1, limit), on_wait)
        try:
            yield
        finally:
            self._release(key)

    async def _acquire(self, key: str, limit: int, on_wait: Callable[[], None] | None) -> None:
        endpoint = self._endpoints.setdefault(key, _Endpoint())
        if not endpoint.waiting and endpoint.running < limit:
            endpoint.running += 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        endpoint.waiting.append((limit, granted))
        if on_wait is not None:
            on_wait()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():  # the slot came just as we were cancelled
                self._release(key)
            else:
                self._forget(endpoint, granted)
                self._wake(key)
            raise

    def _release(self, key: str) -> None:
        endpoint = self._endpoints[key]
        endpoint.running -= 1
        self._wake(key)

    @staticmethod
    def _forget(endpoint: _Endpoint, granted: asyncio.Future[None]) -> None:
        for item in list(endpoint.waiting):
            if item[1] is granted:
                endpoint.waiting.remove(item)

    def _wake(self, key: str) -> None:
        endpoint = self._endpoints.get(key)
        if endpoint is None:
            return
        while endpoint.waiting and endpoint.running < endpoint.waiting[0][0]:
            _, granted = endpoint.waiting.popleft()
            if granted.done():  # cancelled meanwhile
                continue
            endpoint.running += 1
            granted.set_result(None)
        if not endpoint.running and not endpoint.waiting:
            del self._endpoints[key]
