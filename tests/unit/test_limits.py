"""Per-endpoint concurrency limits (which limit applies, queueing in order, cancellation) and the
full-jitter retry wait."""

from __future__ import annotations

import asyncio
import random

import pytest

from webapp.engine.calls import wait_before_retry
from webapp.engine.limits import EndpointLimiter, endpoint_key, endpoint_limits, limit_for
from webapp.models import DebateConfig, JudgeConfig, JudgeSpec, Participant
from webapp.providers.base import ErrorKind, ProviderError


def config(*participants: Participant, judges: list[JudgeSpec] | None = None) -> DebateConfig:
    return DebateConfig(topic="t", participants=list(participants),
                        judge=JudgeConfig(judges=judges or [JudgeSpec()]))


LOCAL = "http://127.0.0.1:8080/v1"


def test_defaults_by_kind_of_server() -> None:
    assert limit_for(Participant(provider="compatible", base_url=LOCAL)) == 1
    assert limit_for(Participant(provider="compatible", base_url="http://192.168.1.20:8000/v1")) == 1
    for preset in ("ollama", "vllm", "llamacpp", "lmstudio"):
        assert limit_for(Participant(provider="compatible", preset=preset)) == 1
    assert limit_for(Participant(provider="compatible", preset="openrouter")) is None
    assert limit_for(Participant(provider="compatible", base_url="https://api.example.com/v1")) is None
    assert limit_for(Participant(provider="openai", model="gpt-4o")) is None
    assert limit_for(Participant(provider="anthropic", model="claude-haiku-4-5")) is None
    assert limit_for(Participant()) is None  # the offline demo
    assert limit_for(Participant(provider="openai", model="gpt-4o", concurrency=3)) == 3
    assert limit_for(Participant(provider="compatible", base_url=LOCAL, concurrency=4)) == 4


def test_endpoint_is_provider_and_url() -> None:
    a = Participant(provider="compatible", base_url=LOCAL, model="a")
    b = Participant(provider="compatible", base_url=LOCAL + "/", model="b")
    ollama = Participant(provider="compatible", preset="ollama", model="c")
    same_as_ollama = Participant(provider="compatible", base_url="http://localhost:11434/v1", model="d")
    assert endpoint_key(a) == endpoint_key(b)
    assert endpoint_key(ollama) == endpoint_key(same_as_ollama)
    assert endpoint_key(a) != endpoint_key(ollama)
    assert endpoint_key(Participant(provider="openai", base_url=LOCAL)) != endpoint_key(a)


def test_the_smallest_limit_set_on_an_endpoint_wins() -> None:
    cfg = config(Participant(name="A", provider="compatible", base_url=LOCAL, concurrency=4),
                 Participant(name="B", provider="compatible", base_url=LOCAL, concurrency=2),
                 judges=[JudgeSpec(provider="compatible", base_url=LOCAL, model="judge")])
    assert endpoint_limits(cfg)[endpoint_key(cfg.participants[0])] == 2
    # a limit that is set beats the local default of the spec that sets none (the judge)
    assert limit_for(cfg.judge.judges[0], cfg) == 2


def test_hosted_endpoints_stay_unlimited_unless_set() -> None:
    cfg = config(Participant(name="A", provider="openai", model="gpt-4o"),
                 Participant(name="B", provider="openai", model="gpt-4o-mini"),
                 judges=[JudgeSpec(provider="openai", model="gpt-4.1", concurrency=2)])
    assert limit_for(cfg.participants[0], cfg) == 2  # same endpoint as the judge, which set 2
    cfg = config(Participant(name="A", provider="openai", model="gpt-4o"),
                 Participant(name="B", provider="anthropic", model="claude-haiku-4-5"))
    assert set(endpoint_limits(cfg).values()) == {None}


async def test_a_limited_endpoint_queues_first_come_first_served() -> None:
    limiter = EndpointLimiter()
    order: list[str] = []
    queued: list[str] = []
    release = asyncio.Event()

    async def call(name: str) -> None:
        async with limiter.slot("e", 1, lambda: queued.append(name)):
            order.append(name)
            await release.wait()

    tasks = [asyncio.create_task(call(name)) for name in ("a", "b", "c")]
    await asyncio.sleep(0)  # let every task reach its slot
    assert order == ["a"] and queued == ["b", "c"]
    assert limiter.running("e") == 1 and limiter.waiting("e") == 2
    release.set()
    await asyncio.gather(*tasks)
    assert order == ["a", "b", "c"]
    assert limiter.running("e") == 0 and limiter.waiting("e") == 0


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    limiter = EndpointLimiter()
    inside = asyncio.Event()
    release = asyncio.Event()

    async def hold() -> None:
        async with limiter.slot("e", 1):
            inside.set()
            await release.wait()

    async def wait() -> None:
        async with limiter.slot("e", 1):
            pass

    holder = asyncio.create_task(hold())
    await inside.wait()
    waiter = asyncio.create_task(wait())
    await asyncio.sleep(0)
    assert limiter.waiting("e") == 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert limiter.waiting("e") == 0
    release.set()
    await holder
    assert limiter.running("e") == 0
    async with limiter.slot("e", 1):  # usable again at once
        assert limiter.running("e") == 1


async def test_unlimited_calls_never_wait() -> None:
    limiter = EndpointLimiter()
    async with limiter.slot("e", None), limiter.slot("e", None):
        assert limiter.running("e") == 0


def failure(retry_after: float | None = None) -> ProviderError:
    return ProviderError(ErrorKind.RETRYABLE, "compatible", "busy", retry_after=retry_after, reason="server")


def test_retry_waits_have_full_jitter_within_the_backoff() -> None:
    rng = random.Random(5)
    for retry in (1, 2, 3):
        backoff = 0.5 * 2 ** (retry - 1)
        waits = [wait_before_retry(failure(), 0.5, retry, 30.0, rng) for _ in range(200)]
        assert all(0 <= w <= backoff for w in waits)
        assert len(set(waits)) == 200  # not one fixed wait
        assert min(waits) < backoff / 4 and max(waits) > backoff * 3 / 4  # spread over the whole range
    # the same source gives the same waits: deterministic in tests
    assert ([wait_before_retry(failure(), 0.5, 1, 30.0, random.Random(1)) for _ in range(2)]
            == [wait_before_retry(failure(), 0.5, 1, 30.0, random.Random(1)) for _ in range(2)])


def test_retry_after_is_a_floor_and_the_cap_bounds_everything() -> None:
    rng = random.Random(9)
    waits = [wait_before_retry(failure(retry_after=2.0), 0.5, 1, 30.0, rng) for _ in range(100)]
    assert all(2.0 <= w <= 2.5 for w in waits) and len(set(waits)) > 1
    assert all(wait_before_retry(failure(retry_after=120.0), 0.5, 1, 30.0, rng) == 30.0 for _ in range(10))
    assert all(wait_before_retry(failure(), 0.5, 10, 3.0, rng) <= 3.0 for _ in range(100))
    assert all(0 <= wait_before_retry(failure(retry_after=0.0), 0.5, 1, 30.0, rng) <= 0.5 for _ in range(100))
